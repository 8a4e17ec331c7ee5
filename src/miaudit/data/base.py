"""The Dataset value, where data files live, and the checksum and cache helpers
every loader shares."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

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
LOADERS: Registry[Loader] = Registry("data set")
loader = LOADERS.register  # @loader("name"): a built-in data set's loader


def default_data_dir() -> Path | None:
    """$MIAUDIT_DATA_DIR, else ../shared/data next to the working directory if it exists."""
    env = os.environ.get("MIAUDIT_DATA_DIR")
    if env:
        return Path(env).expanduser()
    guess = Path.cwd().parent / "shared" / "data"
    return guess if guess.is_dir() else None


def default_cache_dir() -> Path:
    env = os.environ.get("MIAUDIT_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "miaudit"


def sha256_file(path: Path) -> str:
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
    """Cache-key part naming a file's content: its verified checksum, or a fresh hash where none is pinned."""
    return (sha256 or sha256_file(path))[:16]


def cached_arrays(ctx: LoadContext, key: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Decode once: arrays are kept as ``<cache>/data/<key>.npz`` (no pickle) and reused."""
    path = ctx.cache_dir / "data" / f"{key}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    arrays = build()
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(tmp, allow_pickle=False, **arrays)
        os.replace(tmp, path)
    except OSError:  # a cache this process cannot write (Store.check_access): decoded again next time
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return arrays


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
