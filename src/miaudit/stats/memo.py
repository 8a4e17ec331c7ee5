"""Results that are pure functions of arrays, kept in the store by the content of their inputs.

A second audit of the same outputs recomputes nothing that only their content determines: the
signals are kept per model (``training.signal_store``), and what is costly after them (the AUC's
bootstrap interval, the report's figures, the attack runs of ``experiment.cached``) is kept here, in the
``memo/<kind>`` namespace of the one store (``miaudit.storage``), the key the BLAKE3 of every input
(arrays by dtype, shape and bytes, the rest as canonical JSON) and of miaudit's code (every source file
of the installed package, so an edited attack never reads a result its old code computed); the payload is
checked against its recorded checksum on read (a damaged or unwritable entry is recomputed). Keys were
sha256 before the one store: a memo of an older miaudit is cold, its files ignored.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .. import storage
from .._version import __version__

PACKAGE = Path(__file__).resolve().parents[1]

Part = np.ndarray | str | float | int | None


@cache
def code_digest() -> str:
    """BLAKE3 of miaudit's version and of every .py file of the package (path and bytes): a few ms, once."""
    hasher = storage.Hasher().add_value(__version__)
    for path in sorted(PACKAGE.rglob("*.py")):
        hasher.add_value(str(path.relative_to(PACKAGE).as_posix())).add_bytes(path.read_bytes())
    return hasher.hexdigest()


def key(parts: Sequence[Part]) -> str:
    """The hash of the parts (arrays by dtype, shape and bytes; the rest as canonical JSON) and miaudit's code."""
    return storage.key(code_digest(), *parts)


def memoized(kind: str, parts: Sequence[Part], compute: Callable[[], bytes]) -> bytes:
    """``compute()``'s bytes for these inputs: read from the store when kept there, else computed and kept."""
    store, namespace, entry_key = storage.Store(storage.default_cache_dir()), f"memo/{kind}", key(parts)
    kept = store.get_bytes(namespace, entry_key)
    if kept is not None:
        return kept
    payload = compute()
    with contextlib.suppress(OSError):  # a read-only store: computed again next time
        store.put_bytes(namespace, entry_key, payload)
    return payload


def memoized_floats(kind: str, parts: Sequence[Part], compute: Callable[[], Any]) -> np.ndarray:
    """``memoized`` for a short vector of float64 numbers."""
    raw = memoized(kind, parts, lambda: np.asarray(compute(), dtype=np.float64).tobytes())
    return np.frombuffer(raw, dtype=np.float64)
