"""Deployable thresholds: the pooled threshold by hand, the pseudo-target swap, and the FPR it holds."""

from __future__ import annotations

import numpy as np

from miaudit.attacks import AttackInputs, RecordSet, registry
from miaudit.experiment import deployable


def test_pooled_threshold_by_hand() -> None:
    null = np.array([5.0, 4.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0, -3.0])
    assert deployable.pooled_threshold(null, 0.1) == 5.0  # one of ten may reach it
    assert deployable.pooled_threshold(null, 0.2) == 5.0  # 4.0 would admit two tied scores plus 5.0: three
    assert deployable.pooled_threshold(null, 0.3) == 4.0
    assert deployable.pooled_threshold(null, 0.05) is None  # not even the top score


def test_pseudo_target_swaps_reference_k_in() -> None:
    ref = np.arange(3 * 4 * 2, dtype=float).reshape(3, 4, 2)
    records = RecordSet(labels=np.zeros(4, dtype=np.int64), target_logits=np.ones((4, 2)), ref_logits=ref)
    swapped = deployable.as_pseudo_target(records, 1)
    np.testing.assert_array_equal(swapped.target_logits, ref[1])
    np.testing.assert_array_equal(swapped.ref_logits, ref[[0, 2]])


def _records(rng: np.random.Generator, n: int, k: int, shift: np.ndarray) -> RecordSet:
    """Two-class logits: each record has its own difficulty; every model (target included) sees it with noise."""
    difficulty = rng.normal(size=n)

    def logits(offset: np.ndarray | float) -> np.ndarray:
        return np.stack([difficulty + offset + 0.3 * rng.normal(size=n), np.zeros(n)], axis=1)

    return RecordSet(
        labels=np.zeros(n, dtype=np.int64),
        target_logits=logits(shift),
        ref_logits=np.stack([logits(0.0) for _ in range(k)]),
    )


def test_a_target_like_its_references_realizes_the_level() -> None:
    """Non-member queries of a target exchangeable with the references: the threshold set on the references
    realizes about the level's FPR on the target (LiRA offline, 8 references, 4000 records)."""
    rng = np.random.default_rng(0)
    n = 4000
    member = np.arange(n) < n // 2
    queries = _records(rng, n, 8, shift=1.0 * member)
    info = registry.get("lira")
    inputs = AttackInputs(queries=queries)
    scores = registry.execute(info, info.params(), 8, inputs).scores
    got = deployable.thresholds(info, info.params(), 8, inputs, member, scores, (0.05,))
    assert got is not None and got["pseudo_targets"] == 8
    lo, hi = got["0.05"]["realized_fpr_ci"]
    assert lo <= 0.05 <= hi and got["0.05"]["tpr"] > 0.2


def test_pseudo_targets_are_capped_so_cost_grows_linearly_in_k(monkeypatch) -> None:
    """With more references than MAX_PSEUDO_TARGETS, only that many play the target (each costs one attack run)."""
    rng = np.random.default_rng(1)
    n, k = 400, deployable.MAX_PSEUDO_TARGETS + 4
    member = np.arange(n) < n // 2
    inputs = AttackInputs(queries=_records(rng, n, k, shift=1.0 * member))
    info = registry.get("lira")
    calls = []
    real_execute = registry.execute

    def counting(*args, **kwargs):
        calls.append(args[2])
        return real_execute(*args, **kwargs)

    scores = real_execute(info, info.params(), k, inputs).scores
    monkeypatch.setattr(registry, "execute", counting)
    got = deployable.thresholds(info, info.params(), k, inputs, member, scores, (0.05,))
    assert got is not None and got["pseudo_targets"] == deployable.MAX_PSEUDO_TARGETS
    assert calls == [k - 1] * deployable.MAX_PSEUDO_TARGETS  # each against the other k - 1 references


def test_pseudo_targets_fill_the_pool_between_four_and_eight() -> None:
    """Few records: all eight pseudo-targets (a pool of 8n null scores); many: four already pool 100,000."""
    assert deployable.pseudo_targets(64, 359) == deployable.MAX_PSEUDO_TARGETS
    assert deployable.pseudo_targets(64, 20_000) == 5  # ceil(100,000 / 20,000)
    assert deployable.pseudo_targets(64, 50_000) == deployable.MIN_PSEUDO_TARGETS
    assert deployable.pseudo_targets(3, 50_000) == 3  # never more than the references
