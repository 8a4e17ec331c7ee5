"""The endpoint's answers in miaudit's store (``endpoint.store``): an entry per answered batch, read back by
record content, by this process or another; a damaged entry dropped (its records asked again); one hash."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from miaudit import storage
from miaudit.endpoint.store import NAMESPACE, AnswerStore, digests, endpoint_key


def answered(n: int, width: int = 3, seed: int = 0) -> tuple[np.ndarray, list[bytes], np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2, 2)).astype(np.float32)
    return x, digests(x), rng.standard_normal((n, width))


def test_batches_are_entries_of_the_store_read_back_by_another_store(tmp_path: Path) -> None:
    key = endpoint_key("http://127.0.0.1:9/v2/models/m/infer?key=x", "v2", "logits", 1)
    assert key == storage.key(["http://127.0.0.1:9/v2/models/m/infer?key=x", "v2", "logits", 1])
    x, keys, rows = answered(10)
    first = AnswerStore(tmp_path, key)
    first.put(zip(keys[:4], rows[:4]))
    first.put(zip(keys[4:], rows[4:]))
    entries = sorted((tmp_path / NAMESPACE / key).iterdir())
    assert len(entries) == 2 and all((e / "meta.json").is_file() for e in entries)  # one entry per batch
    other = AnswerStore(tmp_path, key)  # a rerun, or another process: the same answers
    got = other.get(keys + [b"\0" * 16])
    assert set(got) == set(keys)
    for k, row in zip(keys, rows, strict=True):
        np.testing.assert_array_equal(got[k], row)
    assert AnswerStore(tmp_path, endpoint_key("http://other", "v2", "logits", 1)).get(keys) == {}  # per endpoint


def test_an_entry_published_later_is_seen_and_a_damaged_one_dropped(tmp_path: Path) -> None:
    x, keys, rows = answered(6)
    reader, writer = AnswerStore(tmp_path, "e"), AnswerStore(tmp_path, "e")
    assert reader.get(keys) == {}
    writer.put(zip(keys[:3], rows[:3]))
    assert set(reader.get(keys)) == set(keys[:3])  # published by another store after the reader's first look
    writer.put(zip(keys[3:], rows[3:]))
    damaged = next(p for p in (tmp_path / NAMESPACE / "e").iterdir() if p.name not in reader._read)
    payload = next(f for f in damaged.iterdir() if f.name != "meta.json")
    payload.write_bytes(payload.read_bytes()[:-1] + b"!")
    assert set(AnswerStore(tmp_path, "e").get(keys)) == set(keys[:3])  # its records are asked again
    assert not damaged.exists()


def test_a_records_digest_is_its_float32_bytes_and_shape() -> None:
    x = np.arange(8, dtype=np.float64).reshape(2, 2, 2)
    assert digests(x) == digests(x.astype(np.float32)) != digests(x.reshape(2, 4))
    assert len(set(digests(np.stack([x[0], x[0], x[1]])))) == 2
