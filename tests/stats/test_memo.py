"""Results kept in the store by the content of their inputs: read back unchanged, recomputed when damaged or
when any input differs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from miaudit.stats import memo, metrics


def test_kept_then_read_back_and_keyed_by_every_input(isolated_cache: Path) -> None:
    calls = []

    def compute() -> bytes:
        calls.append(1)
        return b"payload"

    parts = [np.arange(5.0), "label", 3]
    assert memo.memoized("k", parts, compute) == memo.memoized("k", parts, compute) == b"payload"
    assert len(calls) == 1
    memo.memoized("k", [np.arange(5.0).astype(np.float32), "label", 3], compute)  # same values, other dtype
    memo.memoized("k", [np.arange(5.0), "label", 4], compute)
    assert len(calls) == 3


def test_a_damaged_entry_is_recomputed(isolated_cache: Path) -> None:
    memo.memoized("k", ["x"], lambda: b"right")
    (entry,) = (isolated_cache / "memo" / "k").glob("*/payload.bin")
    entry.write_bytes(entry.read_bytes()[:-1] + b"?")
    assert memo.memoized("k", ["x"], lambda: b"again") == b"again"


def test_auc_interval_is_computed_once_per_content(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    member = rng.random(400) < 0.5
    scores = rng.normal(size=400) + member
    first = metrics.auc_with_interval(scores, member)

    def no_bootstrap(*args: object) -> None:
        raise AssertionError("resampled again")

    monkeypatch.setattr(metrics, "_bootstrap_interval", no_bootstrap)
    assert metrics.auc_with_interval(scores, member) == first
    with pytest.raises(AssertionError, match="resampled again"):
        metrics.auc_with_interval(scores, ~member)
