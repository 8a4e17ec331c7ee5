"""The one-sided test calibrated against the references: hand cases, a p-value uniform under the null, one-sidedness
(suspects the model fits worse are never "used"), a selection by difficulty that moves the references as much as
the target gives no "used" and fires the reference guard, and use still seen."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from miaudit.dataset_inference import calibrated
from miaudit.dataset_inference.features import Features
from miaudit.dataset_inference.infer import Measured, decide
from miaudit.dataset_inference.request import InferenceOptions
from miaudit.stats import metrics


def test_auc_by_hand() -> None:
    scores = np.array([3.0, 1.0, 2.0, 2.0, 0.0])
    positive = np.array([True, True, True, False, False])
    # positives 3, 1, 2 against negatives 2, 0: 3 beats both (2), 1 beats 0 (1), 2 ties 2 and beats 0 (1.5)
    assert metrics.auc(scores, positive) == pytest.approx(4.5 / 6)
    assert calibrated.set_test(scores, positive, permutations=99).auc == pytest.approx(4.5 / 6)  # midranks agree


def test_standardised_drops_constant_columns_and_fills_nan() -> None:
    x = np.array([[1.0, 5.0, np.nan], [3.0, 5.0, 2.0], [2.0, 5.0, 4.0]])
    z = calibrated.standardised(x)
    assert z.shape == (3, 2) and np.all(np.isfinite(z))
    assert np.allclose(z.mean(axis=0), 0) and np.allclose(z.std(axis=0), 1)


def test_calibration_removes_what_the_references_see() -> None:
    """The target's signal less the references' mean on the same record: the difficulty both read goes, the target's
    own excess (a member's) stays."""
    rng = np.random.default_rng(1)
    difficulty = rng.normal(size=(500, 2))
    refs = difficulty[None] + rng.normal(scale=0.3, size=(4, 500, 2))
    target = difficulty + rng.normal(scale=0.3, size=(500, 2))
    target[:50, 0] += 1.0
    out = calibrated.calibrated(target, refs)
    for j in range(2):
        assert abs(stats.pearsonr(target[:, j], difficulty[:, j])[0]) > 0.9
        assert abs(stats.pearsonr(out[50:, j], difficulty[50:, j])[0]) < 0.15  # chance: sd 1 / sqrt(450) = 0.047
    assert out[:50, 0].mean() - out[50:, 0].mean() == pytest.approx(1.0, abs=0.15)
    refs[1, 3, 0] = np.nan  # a reference without a value on a record: the others' mean
    assert calibrated.calibrated(target, refs)[3, 0] == pytest.approx(target[3, 0] - np.delete(refs[:, 3, 0], 1).mean())


def test_the_p_value_is_uniform_under_the_null() -> None:
    """300 draws of exchangeable suspects and validation records (scores skewed, with ties): with 99 permutations
    P(p <= k/100) = k/100 exactly; the counts at 5%, 10% and 50% stay within their binomial 99.9% ranges."""
    rng = np.random.default_rng(2024)
    draws, ps = 300, []
    for i in range(draws):
        s = np.round(rng.standard_exponential(60), 1)
        is_suspect = rng.permutation(np.r_[np.ones(20, dtype=bool), np.zeros(40, dtype=bool)])
        ps.append(calibrated.set_test(s, is_suspect, seed=i, permutations=99).p_value)
    p = np.array(ps)
    for level in (0.05, 0.10, 0.50):
        lo, hi = stats.binom.ppf([0.0005, 0.9995], draws, level)
        assert lo <= (p <= level + 1e-9).sum() <= hi, level
    assert p.min() >= 1 / 100


def test_one_sided_suspects_scoring_lower_are_never_significant() -> None:
    rng = np.random.default_rng(5)
    s = rng.normal(size=400)
    is_suspect = np.arange(400) < 100
    s[is_suspect] -= 1.0  # the model fits the suspects worse
    low = calibrated.set_test(s, is_suspect, permutations=199)
    assert low.direction < -0.2 and low.p_value > 0.99
    s[is_suspect] += 2.0
    high = calibrated.set_test(s, is_suspect, permutations=199)
    assert high.direction > 0.2 and high.p_value == pytest.approx(1 / 200)
    assert calibrated.set_test(s, is_suspect, permutations=199).p_value == high.p_value  # seeded


def _world(rng: np.random.Generator, n: int = 600, leak: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Records of varying difficulty; 4 references that never trained on them, and a target whose signals (two:
    log p and margin) follow the same difficulty (plus ``leak`` on the first ``n // 6`` records, its members)."""
    easy = rng.normal(size=n)
    refs = np.stack([np.c_[easy, 1.5 * easy] + rng.normal(scale=0.5, size=(n, 2)) for _ in range(4)])
    target = np.c_[easy, 1.5 * easy] + rng.normal(scale=0.5, size=(n, 2))
    target[: n // 6] += leak
    return easy, refs, target


def _decide(target: np.ndarray, refs: np.ndarray | None, is_suspect: np.ndarray, seed: int) -> object:
    m = Measured(Features(["log_p_label", "margin"], target, 2), None, [], references=refs)
    n = len(target)
    x = np.random.default_rng(seed).normal(size=(n, 3))  # the records alone: no shift the blind guard could see
    y = np.zeros(n, dtype=np.int64)
    return decide(m, is_suspect, x, y, 2, InferenceOptions(permutations=199), seed)[0]


def test_a_selection_by_difficulty_is_not_use() -> None:
    """Suspects chosen among unused records by an independent model's view of their difficulty (the easiest and the
    hardest), 20 draws each: the uncalibrated score calls the easiest 'used' nearly always; the calibrated test
    never does, the reference guard makes no claim, and the direction of the hardest is never positive and 'used'."""
    rng = np.random.default_rng(7)
    raw_used = calibrated_p = 0
    for draw in range(20):
        easy, refs, target = _world(rng)
        own_view = easy + rng.normal(scale=0.3, size=len(easy))  # an independent model's difficulty
        unused = np.arange(100, len(easy))  # the first 100 are members: never suspects here
        order = unused[np.argsort(-own_view[unused])]
        for easiest, pool in ((True, order[:120]), (False, order[-120:])):
            sus = rng.choice(pool, 60, replace=False)
            val = rng.choice(np.setdiff1d(unused, pool), 200, replace=False)
            rows = np.r_[sus, val]
            is_suspect = np.arange(len(rows)) < 60
            d = _decide(target[rows], refs[:, rows], is_suspect, draw)
            assert d.used is not True and d.references_guard is not None and d.references_guard.shifted
            assert d.used is None and d.fraction is None
            calibrated_p += d.p_value < 0.05  # the test itself, the guard aside
            raw = _decide(target[rows], None, is_suspect, draw)
            assert not (raw.used and raw.direction <= 0)
            raw_used += easiest and raw.used is True
    assert raw_used >= 18  # what the calibration is for: uncalibrated, the easiest unused records look used
    assert calibrated_p <= 6  # 40 draws at 5%: 2 expected; the calibration removes the selection, not only the guard


def test_use_is_still_seen_and_the_reference_guard_is_silent() -> None:
    """Random members against random unused records: 'used' in 20 of 20 draws with a modest leak, the reference
    guard silent in most (its two-sided level is 5%), the direction positive whenever 'used'."""
    rng = np.random.default_rng(8)
    used = fired = 0
    for draw in range(20):
        _, refs, target = _world(rng, leak=0.6)
        sus = rng.choice(100, 60, replace=False)
        val = rng.choice(np.arange(100, 600), 200, replace=False)
        rows = np.r_[sus, val]
        d = _decide(target[rows], refs[:, rows], np.arange(len(rows)) < 60, draw)
        used += d.used is True
        fired += d.used is None
        assert d.used is not True or d.direction > 0
    assert used >= 17 and fired <= 3
