"""Every answer an endpoint gave, kept by the content of the record asked about, in miaudit's store.

The answers live in the one content-addressed store (``storage.Store``, the cache's root), namespace
``endpoint/<endpoint key>``: an entry per answered batch, published as soon as the batch is answered (its
records' digests and stored rows, ``outputs.rows``, as float64), so an audit stopped at any point keeps what it
paid for, and a rerun (or another audit asking about the same inputs, in this process or another) spends no
query on them. A damaged entry is dropped and its records asked again. Every key is storage's hash (BLAKE3):
the endpoint's hashes its URL, wire format and output mode, so the URL (which may carry a key in its query
string) is never stored in clear; credentials are not in it at all. A record's digest hashes its float32 bytes
(what the wire carries) and its shape.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .. import storage

NAMESPACE = "endpoint"
DIGEST_BYTES = 16


def endpoint_key(url: str, wire: str, output: str, k: int) -> str:
    """What identifies an endpoint's answers: the hash of its URL, wire format, output mode and k."""
    return storage.key([url, wire, output, k])


def digests(x: np.ndarray) -> list[bytes]:
    """Per record, the hash of its float32 bytes (what the wire carries) and its shape."""
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(len(x), -1)
    return storage.row_digests(flat, prefix=repr(tuple(x.shape[1:])).encode(), size=DIGEST_BYTES)


def _packed(pairs: list[tuple[bytes, np.ndarray]]) -> bytes:
    rows = [np.ascontiguousarray(v, dtype=np.float64).ravel() for _, v in pairs]
    buf = io.BytesIO()
    np.savez(
        buf,
        digests=np.frombuffer(b"".join(d for d, _ in pairs), dtype=np.uint8).reshape(len(pairs), -1),
        lengths=np.array([len(r) for r in rows], dtype=np.int64),
        values=np.concatenate(rows) if rows else np.zeros(0),
    )
    return buf.getvalue()


def _unpacked(blob: bytes) -> dict[bytes, np.ndarray]:
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        ends = np.cumsum(z["lengths"])
        values = z["values"]
        return {d.tobytes(): values[e - n : e] for d, n, e in zip(z["digests"], z["lengths"], ends, strict=True)}


class AnswerStore:
    """One endpoint's answers in the store under ``root``: ``get`` the stored rows of records by digest, ``put``
    a batch's rows (published at once)."""

    def __init__(self, root: Path, endpoint: str):
        self.store = storage.Store(root)
        self.endpoint = endpoint
        self.namespace = f"{NAMESPACE}/{endpoint}"
        self._known: dict[bytes, np.ndarray] = {}
        self._read: set[str] = set()  # the entries already read

    def _refresh(self) -> None:
        """Read the entries published since the last look (by this process or another)."""
        folder = self.store.root / self.namespace
        if not folder.is_dir():
            return
        for path in sorted(folder.iterdir()):
            if path.name in self._read or not path.is_dir():
                continue
            blob = self.store.get_bytes(self.namespace, path.name)
            if blob is None:  # still being written, or damaged (then removed): its records are asked again
                continue
            self._read.add(path.name)
            self._known.update(_unpacked(blob))

    def get(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The stored rows among ``keys``."""
        self._refresh()
        return {k: self._known[k] for k in keys if k in self._known}

    def put(self, pairs: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Keep a batch's answered rows, published at once."""
        batch = list(pairs)
        if not batch:
            return
        blob = _packed(batch)
        name = storage.key(blob)
        self.store.put_bytes(self.namespace, name, blob)
        self._read.add(name)
        self._known.update((d, np.ascontiguousarray(v, dtype=np.float64).ravel()) for d, v in batch)

    def close(self) -> None:
        """Nothing held open (kept for the client's ``close``)."""
