"""Every answer an endpoint gave, kept by the content of the record asked about.

One SQLite file in the cache (``endpoint/answers.sqlite``): a row per (endpoint, input digest) holding the
stored row (``outputs.rows``) as float64 bytes. Each batch is committed as soon as it is answered, so an
audit stopped at any point keeps what it paid for, and a rerun (or another audit asking about the same
inputs) spends no query on them. The endpoint's key hashes its URL, wire format and output mode: the URL
(which may carry a key in its query string) is never stored in clear; credentials are not in it at all.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

SCHEMA = "CREATE TABLE IF NOT EXISTS answers (endpoint TEXT, digest BLOB, value BLOB, PRIMARY KEY (endpoint, digest))"
LOOKUP_CHUNK = 500  # digests per SELECT (SQLite's default limit on bound parameters is 999)


def endpoint_key(url: str, wire: str, output: str, k: int) -> str:
    """What identifies an endpoint's answers: sha256 of its URL, wire format, output mode and k."""
    return hashlib.sha256(json.dumps([url, wire, output, k]).encode()).hexdigest()


def digests(x: np.ndarray) -> list[bytes]:
    """sha256 per record of its float32 bytes (what the wire carries) and shape."""
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(len(x), -1)
    shape = repr(tuple(x.shape[1:])).encode()
    return [hashlib.sha256(shape + row.tobytes()).digest() for row in flat]


class AnswerStore:
    def __init__(self, root: Path, endpoint: str):
        path = Path(root) / "endpoint" / "answers.sqlite"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(SCHEMA)
        self.db.commit()
        self.endpoint = endpoint

    def get(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The stored rows among ``keys``."""
        found: dict[bytes, np.ndarray] = {}
        for i in range(0, len(keys), LOOKUP_CHUNK):
            chunk = keys[i : i + LOOKUP_CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT digest, value FROM answers WHERE endpoint = ? AND digest IN ({marks})"
            for digest, value in self.db.execute(query, [self.endpoint, *chunk]):
                found[bytes(digest)] = np.frombuffer(value, dtype=np.float64)
        return found

    def put(self, pairs: Iterable[tuple[bytes, np.ndarray]]) -> None:
        """Keep answered rows, committed at once."""
        rows = [(self.endpoint, d, np.ascontiguousarray(v, dtype=np.float64).tobytes()) for d, v in pairs]
        self.db.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?)", rows)
        self.db.commit()

    def close(self) -> None:
        self.db.close()
