"""Results that are pure functions of arrays, kept in the store by the content of their inputs.

A second audit of the same outputs recomputes nothing that only their content determines: the
signals are kept per model (``training.signal_store``), and what is costly after them (the AUC's
bootstrap interval, the report's figures) is kept here, under ``<cache>/memo/<kind>/<key>.bin``, the
key the sha256 of every input (arrays by dtype, shape and bytes) and of miaudit's code (every source file
of the installed package, so an edited attack never reads a result its old code computed), the file
the payload behind its own sha256 (checked on read; a damaged or unwritable entry is recomputed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..data.base import default_cache_dir
from ..training.store import atomic_write

PACKAGE = Path(__file__).resolve().parents[1]

Part = np.ndarray | str | float | int | None


@cache
def code_digest() -> str:
    """sha256 of miaudit's version and of every .py file of the package (path and bytes): ~5 ms, once."""
    h = hashlib.sha256(__version__.encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def key(parts: Sequence[Part]) -> str:
    """sha256 over the parts (arrays by dtype, shape and bytes; the rest by repr) and miaudit's code."""
    h = hashlib.sha256(code_digest().encode())
    for part in parts:
        if isinstance(part, np.ndarray):
            array = np.ascontiguousarray(part)
            h.update(f"{array.dtype.str}{array.shape}".encode())
            if array.size:  # a memoryview of an empty array cannot be cast; its dtype and shape say it all
                h.update(array.data.cast("B"))
        else:
            h.update(repr(part).encode())
        h.update(b"\0")
    return h.hexdigest()


def memoized(kind: str, parts: Sequence[Part], compute: Callable[[], bytes]) -> bytes:
    """``compute()``'s bytes for these inputs: read from the store when kept there, else computed and kept."""
    path = default_cache_dir() / "memo" / kind / f"{key(parts)}.bin"
    try:
        blob = path.read_bytes()
        if hashlib.sha256(blob[64:]).hexdigest().encode() == blob[:64]:
            return blob[64:]
    except OSError:
        pass
    payload = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda p: p.write_bytes(hashlib.sha256(payload).hexdigest().encode() + payload))
    except OSError:
        pass  # a read-only store: computed again next time
    return payload


def memoized_floats(kind: str, parts: Sequence[Part], compute: Callable[[], Any]) -> np.ndarray:
    """``memoized`` for a short vector of float64 numbers."""
    raw = memoized(kind, parts, lambda: np.asarray(compute(), dtype=np.float64).tobytes())
    return np.frombuffer(raw, dtype=np.float64)
