"""K reference models' logits on n records, without the (K, n, C) block in memory.

At scale (K = 256 references, N = 50,000 records, C = 100 classes) the stacked float64 logits would
take 10 GB, while an attack reads them only through a per-record signal of shape (K, n). A
``LogitStack`` keeps the K per-model arrays as the store gives them (memory-mapped ``logits.npy``)
and the records' row indices; ``signals.compute`` asks it for a signal model by model, in chunks of
records, so at most one chunk of one model's logits is in float64 memory at a time. With a signal
``source`` (``training.signal_store.SignalCache``) the signals are read from the store instead: computed
once per model's logits and kept there, so the logits are not read again by the next attack or run.

It behaves as the (K, n, C) array where attacks need that: ``shape``, ``len``, ``stack[k]`` (one
model's (n, C) float64 logits), ``stack[a:b]`` (a stack of fewer models), and ``np.asarray(stack)``
(the whole block, for code that needs it at once).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

CHUNK_RECORDS = 65_536  # records per chunk: 65,536 x 100 classes x 8 bytes = 52 MB of float64 logits


class SignalSource(Protocol):
    """Signals of whole models, each computed once: ``stacked`` gives (K, n) of signal ``name`` for the models'
    ``rows``, or None when its labels for those rows are not ``labels`` (then the stack computes them)."""

    def stacked(self, per_model: Sequence[np.ndarray], rows: np.ndarray, name: str, labels: np.ndarray) -> Any: ...

    def digest(self, logits: np.ndarray) -> str:
        """BLAKE3 digest of a model's logits (what keys its signals, and attack results in ``experiment.cached``)."""
        ...


class LogitStack:
    """(K, n, C) logits as K per-model arrays ``per_model[k]`` (each (N_all, C), any float dtype, often a
    memory map) read at rows ``rows``; ``source`` serves their signals when given."""

    ndim = 3

    def __init__(
        self, per_model: Sequence[np.ndarray], rows: np.ndarray, n_classes: int, source: SignalSource | None = None
    ):
        self.per_model = list(per_model)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.source = source

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.per_model), len(self.rows), self.n_classes)

    def __len__(self) -> int:
        return len(self.per_model)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return LogitStack(self.per_model[key], self.rows, self.n_classes, self.source)
        if isinstance(key, (int, np.integer)):
            return self._rows_of(self.per_model[key], self.rows)
        return np.asarray(self)[key]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        block = np.empty(self.shape, dtype=np.float64)
        for k, logits in enumerate(self.per_model):
            block[k] = self._rows_of(logits, self.rows)
        return block if dtype is None else block.astype(dtype, copy=False)

    def map_records(self, fn: Callable[[np.ndarray, slice], np.ndarray], chunk: int = CHUNK_RECORDS) -> np.ndarray:
        """(K, n): ``fn(logits, records)`` on each model's logits of each chunk of records, in the model's own
        float dtype (``records`` is the chunk's slice of 0..n-1, e.g. to pick its labels); fn maps (c, C) to (c,)."""
        out = np.empty(self.shape[:2], dtype=np.float64)
        for k, logits in enumerate(self.per_model):
            for start in range(0, len(self.rows), chunk):
                part = slice(start, start + chunk)
                out[k, part] = fn(logits[self.rows[part]], part)
        return out

    def joined(self, other: LogitStack) -> LogitStack:
        """These records then ``other``'s, for the same models (the axis-1 concatenation)."""
        if len(other.per_model) != len(self.per_model) or any(
            a is not b for a, b in zip(self.per_model, other.per_model, strict=True)
        ):
            raise ValueError("joined: the two stacks hold different models")
        return LogitStack(self.per_model, np.concatenate([self.rows, other.rows]), self.n_classes, self.source)

    @staticmethod
    def _rows_of(logits: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return np.asarray(logits[rows], dtype=np.float64)


def concat_records(first: Any, second: Any) -> Any:
    """Axis-1 concatenation of two (K, n, C) logit blocks, either arrays or stacks of the same models."""
    if isinstance(first, LogitStack) and isinstance(second, LogitStack):
        return first.joined(second)
    return np.concatenate([np.asarray(first), np.asarray(second)], axis=1)
