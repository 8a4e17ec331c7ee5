"""Signals kept in the store: computed once per model's logits, read back checked, new when the logits change."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from miaudit.stats import signals
from miaudit.stats.logitstack import LogitStack
from miaudit.training import signal_store
from miaudit.training.signal_store import SignalCache


@pytest.fixture
def models(tmp_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Three models' float32 logits on 40 records in one (K, N, C) file, memory-mapped as `miaudit score` reads it."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "refs.npy", (3 * rng.standard_normal((3, 40, 5))).astype(np.float32))
    return np.load(tmp_path / "refs.npy", mmap_mode="r"), rng.integers(0, 5, 40)


def no_pass(*args: object, **kwargs: object) -> None:
    raise AssertionError("the signals were computed again")


def test_stored_once_then_read_back(models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refs, labels = models
    rows = np.array([5, 0, 39, 12])
    first = SignalCache(tmp_path / "store", labels).stacked(list(refs), rows, "rescaled_logit", labels[rows])
    want = np.stack([signals.rescaled_logit(refs[k], labels)[rows] for k in range(3)])
    np.testing.assert_array_equal(first, want)
    assert len(list((tmp_path / "store" / "signals").glob("*/meta.json"))) == 3
    monkeypatch.setattr(signal_store, "bundle", no_pass)  # a later run (a new cache object) only reads
    again = SignalCache(tmp_path / "store", labels)
    np.testing.assert_array_equal(again.stacked(list(refs), rows, "rescaled_logit", labels[rows]), want)
    np.testing.assert_array_equal(
        again.stacked(list(refs), rows, "hinge", labels[rows]), np.stack([signals.hinge(r, labels)[rows] for r in refs])
    )
    assert again.accuracy(refs[1], rows) == np.mean(refs[1][rows].argmax(axis=1) == labels[rows])


def test_changed_logits_get_new_signals(models, tmp_path: Path) -> None:
    refs, labels = models
    SignalCache(tmp_path / "store", labels).entries(list(refs))
    changed = np.array(refs) + np.float32(1.5) * (np.arange(5) == 2)  # class 2 raised: every signal moves
    np.save(tmp_path / "refs.npy", changed.astype(np.float32))
    os.utime(tmp_path / "refs.npy", ns=(1, 1))  # even a rewrite that keeps the size is a new file state
    reread = np.load(tmp_path / "refs.npy", mmap_mode="r")
    got = SignalCache(tmp_path / "store", labels).stacked(list(reread), np.arange(40), "loss", labels)
    np.testing.assert_array_equal(got, np.stack([signals.loss(m, labels) for m in changed.astype(np.float32)]))
    assert len(list((tmp_path / "store" / "signals").glob("*/meta.json"))) == 6


def test_other_labels_are_not_served(models, tmp_path: Path) -> None:
    refs, labels = models
    cache = SignalCache(tmp_path / "store", labels)
    assert cache.stacked(list(refs), np.arange(3), "hinge", (labels[:3] + 1) % 5) is None
    stack = LogitStack(list(refs), np.arange(40), 5, cache)
    other = (labels + 1) % 5  # compute() falls back to the logits: the signals of the labels asked for
    np.testing.assert_array_equal(signals.compute("hinge", stack, other), signals.hinge(np.asarray(refs), other))


def test_a_damaged_entry_is_computed_again(models, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    refs, labels = models
    SignalCache(tmp_path / "store", labels).entries(list(refs))
    stored = next((tmp_path / "store" / "signals").glob("*/confidence.npy"))
    stored.write_bytes(stored.read_bytes()[:-8] + b"\0" * 8)
    got = SignalCache(tmp_path / "store", labels).stacked(list(refs), np.arange(40), "confidence", labels)
    np.testing.assert_array_equal(got, np.stack([signals.confidence(m, labels) for m in refs]))
    assert "damaged" in caplog.text


def test_in_memory_logits_are_keyed_by_content(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, 30)
    logits = rng.standard_normal((30, 4))
    cache = SignalCache(tmp_path, labels)
    assert cache.digest(logits) == cache.digest(logits.copy()) != cache.digest(logits.astype(np.float32))
    assert signal_store.file_span(logits) is None
