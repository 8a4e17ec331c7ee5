"""The Dataset value, where data files live, and the checksum and cache helpers
every loader shares.

Two hashes, for two purposes: a data file's published checksum is sha256 (``require_file`` compares it with
the value its loader pins, as the data's publisher states it), and so is ``Dataset.content_sha256``,
results.json's ``data_fingerprint``, which users compare across runs; cache keys are the one store's
BLAKE3 (``miaudit.storage``): decoded arrays are kept in its ``data`` namespace (``cached_arrays``)."""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from .. import storage
from ..errors import DataError
from ..registries import Registry


@dataclass(frozen=True)
class Dataset:
    """Records as plain arrays: x float32 (n, ...), y int64 (n,) in [0, n_classes)."""

    name: str
    x: np.ndarray
    y: np.ndarray
    n_classes: int

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape[1:])

    def __len__(self) -> int:
        return int(self.y.shape[0])

    @cached_property
    def content_sha256(self) -> str:
        """sha256 of the data's content (shapes, dtype, classes, features, labels): results.json's
        ``data_fingerprint``. Computed once per Dataset (it reads every byte)."""
        h = hashlib.sha256()
        h.update(str((self.x.shape, str(self.x.dtype), self.n_classes)).encode())
        h.update(np.ascontiguousarray(self.x).tobytes())
        h.update(np.ascontiguousarray(self.y).tobytes())
        return h.hexdigest()

    @property
    def fingerprint(self) -> str:
        """The content hash's prefix, part of every cache key, so a changed file never reuses stale models."""
        return self.content_sha256[:16]


Tokenize = Callable[[list[str]], np.ndarray]  # texts -> float32 (n, 2, L): token ids and attention mask


@dataclass(frozen=True)
class LoadContext:
    data_dir: Path | None  # where the original files are (None: not configured / not found)
    cache_dir: Path  # where decoded arrays are kept, outside the repository
    tokenize: Tokenize | None = None  # a model's tokenizer: text sets give token ids (models/hf.py) when set


Loader = Callable[[LoadContext], Dataset]
log = logging.getLogger(__name__)
DATA = "data"  # the store's namespace of decoded data sets
ARRAYS = "arrays.npz"
LOADERS: Registry[Loader] = Registry("data set")
loader = LOADERS.register  # @loader("name"): a built-in data set's loader


def default_data_dir() -> Path | None:
    """$MIAUDIT_DATA_DIR, else ../shared/data next to the working directory if it exists."""
    env = os.environ.get("MIAUDIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    guess = Path.cwd().parent / "shared" / "data"
    return guess if guess.is_dir() else None


def sha256_file(path: Path) -> str:
    """A file's sha256, for the checksums data sets publish (cache keys use ``storage.hash_file``)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def require_file(ctx: LoadContext, relpath: str, sha256: str | None, dataset: str) -> Path:
    """The verified path of a data file, or a DataError saying where it was looked for."""
    if ctx.data_dir is None:
        raise DataError(
            f"dataset {dataset}: no data directory; set MIAUDIT_DATA_DIR or data_dir in the config "
            f"to a folder holding {relpath}"
        )
    path = ctx.data_dir / relpath
    if not path.is_file():
        raise DataError(f"dataset {dataset}: file {path} not found (expected {relpath} under the data directory)")
    if sha256 is not None and sha256_file(path) != sha256:
        raise DataError(f"dataset {dataset}: checksum mismatch for {path} (expected sha256 {sha256[:12]}...)")
    return path


def file_key(path: Path, sha256: str | None) -> str:
    """Cache-key part naming a file's content: its verified published checksum, or the store's hash of it
    where none is pinned."""
    return (sha256 or storage.hash_file(path))[:16]


_KEEP_DECODED: contextvars.ContextVar[bool] = contextvars.ContextVar("miaudit_keep_decoded", default=True)


@contextlib.contextmanager
def cache_untouched() -> Iterator[None]:
    """Within the block, decoded data sets are read from the cache where they are and never written to it (nor a
    damaged entry removed): ``miaudit plan`` writes nothing."""
    token = _KEEP_DECODED.set(False)
    try:
        yield
    finally:
        _KEEP_DECODED.reset(token)


def cached_arrays(ctx: LoadContext, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Decode once: arrays are kept as one ``.npz`` (read without pickle) in the store's ``data`` namespace,
    under the hash of ``key`` (the data set's name and its source's content), and reused; a damaged entry is
    decoded again, a store this process cannot write (``Store.check_access``) decodes every time, and so does
    ``cache_untouched``'s block, which writes nothing."""
    store = storage.Store(ctx.cache_dir)
    entry = store.at(DATA, storage.key(key))
    keep = _KEEP_DECODED.get()
    if entry.published:
        try:
            with np.load(store.verified(entry, ARRAYS), allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (storage.DamagedEntry, OSError, ValueError) as e:
            log.warning("cached arrays %s are damaged (%s); decoding again", entry.dir, e)
            if keep:
                store.discard(entry)
    arrays = build()
    if keep:
        with contextlib.suppress(OSError):  # a store this process cannot write: decoded again next time
            store.write(entry, {ARRAYS: lambda path: _save_npz(path, arrays)}, {"name": key})
    return arrays


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to another name
        np.savez(f, allow_pickle=False, **arrays)


def validate_features(name: str, x: np.ndarray) -> np.ndarray:
    """x as float32 (n, features...), refusing other shapes, non-numbers, NaN and inf."""
    x = np.asarray(x)
    if x.ndim < 2:
        raise DataError(f"dataset {name}: x must have shape (n, features...), got {x.shape}")
    if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.complexfloating):
        raise DataError(f"dataset {name}: x must be real numbers, got dtype {x.dtype}")
    x = x.astype(np.float32, copy=False)  # no second copy of large image sets already in float32
    if not np.isfinite(x).all():
        bad = int((~np.isfinite(x)).any(axis=tuple(range(1, x.ndim))).sum())
        raise DataError(f"dataset {name}: x contains NaN or inf in {bad} record(s); clean or drop them first")
    return x


def validate_arrays(name: str, x: np.ndarray, y: np.ndarray, n_classes: int | None = None) -> Dataset:
    """Check shapes, finiteness and labels at the boundary; return a clean Dataset."""
    x = validate_features(name, x)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise DataError(f"dataset {name}: y must have shape ({x.shape[0]},), got {y.shape}")
    if np.issubdtype(y.dtype, np.floating):
        if not np.isfinite(y).all() or not np.all(y == np.round(y)):
            raise DataError(f"dataset {name}: y must hold integer class labels")
    elif not np.issubdtype(y.dtype, np.integer):
        raise DataError(f"dataset {name}: y must hold integer class labels, got dtype {y.dtype}")
    y = y.astype(np.int64)
    if not y.size:
        raise DataError(f"dataset {name}: no records")
    k = check_labels(name, y, n_classes)
    if k < 2:
        raise DataError(f"dataset {name}: needs at least 2 classes, found {k}")
    return Dataset(name=name, x=x, y=y, n_classes=k)


def check_labels(name: str, y: np.ndarray, n_classes: int | None) -> int:
    """The number of classes: ``n_classes`` when given (labels in [0, n_classes)), else the number of
    distinct labels C, which must be exactly 0..C-1. A refusal lists the offending values."""
    present = np.unique(y)
    k = len(present) if n_classes is None else n_classes
    bad = present[(present < 0) | (present >= k)]
    if len(bad):
        shown = ", ".join(map(str, bad[:8])) + (f" and {len(bad) - 8} more" if len(bad) > 8 else "")
        if n_classes is not None:
            raise DataError(f"dataset {name}: labels must be in [0, {k}), found {shown}")
        raise DataError(
            f"dataset {name}: labels must be 0..{k - 1} ({k} distinct labels), found {shown}; relabel, or set "
            "dataset.num_classes to allow classes with no records"
        )
    return k
