"""The one hash function of miaudit's caches: BLAKE3 (cryptographic, about 3x sha256's speed on model outputs).

A cache key is the digest of a sequence of parts, each framed by its kind and length so that no two
sequences hash alike: arrays by dtype, shape and bytes; JSON-like values (configs, specs, names) in their
canonical JSON form (keys sorted, no whitespace), so a dict's order never changes a key. Files are hashed
in chunks of 1 MiB: ``hash_file`` equals the ``b3sum`` of the file.

Checksums published for data files (the sha256 each built-in loader pins) are not cache keys: they stay
sha256 (``data.base.require_file``), because they are compared with the value the data's publisher states.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import PurePath
from typing import Any

import blake3
import numpy as np

KEY_LENGTH = 32  # hex digits of an entry's key: 128 bits
CHUNK = 1 << 20


def canonical(value: object) -> bytes:
    """``value`` as canonical JSON: keys sorted, no whitespace, tuples as lists, numpy scalars as numbers,
    paths as strings; anything else JSON cannot say is a ``TypeError`` (a key must never depend on a repr)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain).encode()


def _plain(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return {"array": digest(value)}
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return sorted(value)
    raise TypeError(f"a cache key cannot hold a {type(value).__name__}: {value!r}")


class Hasher:
    """BLAKE3 over framed parts: each part is tagged with its kind and length before its bytes."""

    def __init__(self) -> None:
        self._h = blake3.blake3()

    def _frame(self, kind: bytes, data: bytes | memoryview) -> Hasher:
        self._h.update(kind + len(data).to_bytes(8, "little"))
        if len(data):
            self._h.update(data)
        return self

    def add_bytes(self, data: bytes | memoryview) -> Hasher:
        return self._frame(b"b", data)

    def add_array(self, array: np.ndarray) -> Hasher:
        """An array by dtype, shape and C-order bytes (hashed without the GIL)."""
        array = np.ascontiguousarray(array)
        self._frame(b"t", f"{array.dtype.str}{array.shape}".encode())
        return self._frame(b"a", array.data.cast("B") if array.size else b"")

    def add_value(self, value: object) -> Hasher:
        return self._frame(b"j", canonical(value))

    def add(self, part: object) -> Hasher:
        """An array, bytes, or a JSON-like value."""
        if isinstance(part, np.ndarray):
            return self.add_array(part)
        if isinstance(part, bytes | memoryview):
            return self.add_bytes(part)
        return self.add_value(part)

    def hexdigest(self, length: int = 64) -> str:
        return self._h.hexdigest()[:length]


def digest(*parts: Any) -> str:
    """The full BLAKE3 digest (64 hex digits) of the parts."""
    hasher = Hasher()
    for part in parts:
        hasher.add(part)
    return hasher.hexdigest()


def key(*parts: Any) -> str:
    """An entry's key: the digest of the parts, ``KEY_LENGTH`` hex digits."""
    return digest(*parts)[:KEY_LENGTH]


def row_digests(rows: np.ndarray, prefix: bytes = b"", size: int = 16) -> list[bytes]:
    """BLAKE3 of each row of a 2-D array (``prefix`` then the row's C-order bytes), ``size`` bytes each: the
    records' identities where a cache or a check looks records up by content (``size`` 16: 128 bits)."""
    rows = np.ascontiguousarray(rows)
    return [blake3.blake3(prefix + row.tobytes()).digest(length=size) for row in rows]


def hash_bytes(data: bytes | memoryview) -> str:
    """BLAKE3 of the bytes themselves (a checksum, no framing)."""
    return blake3.blake3(data).hexdigest()


def hash_file(path: PurePath | str) -> str:
    """BLAKE3 of a file's content, read in chunks (the ``b3sum`` of the file)."""
    h = blake3.blake3()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()
