"""Conformal calibration: valid p-values under the null, whatever the attack's own model."""

from __future__ import annotations

import numpy as np
from scipy import stats

from miaudit.attacks import AttackInputs, AttackResult, RecordSet, calibration, registry


def null_world(rng: np.random.Generator, n: int, k: int = 4) -> RecordSet:
    """Records whose target logits are drawn like the references' (nobody trained on them): non-members."""
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(k + 1, n, 3))
    return RecordSet(labels=labels, target_logits=logits[0], ref_logits=logits[1:])


def test_calibrated_pvalues_are_uniform_under_the_null() -> None:
    rng = np.random.default_rng(0)
    queries, validation = null_world(rng, 3000), null_world(rng, 3000)
    inputs = AttackInputs(queries=queries, validation=validation)
    joined = registry.score("lira", calibration.with_calibration_queries(inputs), variance="global")
    result = calibration.split_calibrated(joined, 3000)
    p = np.exp(result.log_pvalues_calibrated)
    assert stats.kstest(p, "uniform").statistic < 0.03  # 0.03 is ~1.6x the 1% critical value at n=3000
    assert abs((p < 0.05).mean() - 0.05) < 0.012


def test_calibration_controls_fpr_where_the_raw_test_does_not() -> None:
    """A miscalibrated raw test (references too narrow) flags far more than alpha; the conformal p-value
    does not, on average over seeded repetitions (its conditional FPR varies with the calibration set)."""
    raw_fpr, calibrated_fpr = [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        q, v = null_world(rng, 400), null_world(rng, 400)
        q.ref_logits *= 0.5  # reference spread half the target's: the raw Gaussian tail is far too thin
        v.ref_logits *= 0.5
        joined = registry.score("lira", calibration.with_calibration_queries(AttackInputs(queries=q, validation=v)))
        result = calibration.split_calibrated(joined, 400)
        raw_fpr.append((result.log_pvalues < np.log(0.05)).mean())
        calibrated_fpr.append((result.log_pvalues_calibrated < np.log(0.05)).mean())
    assert np.mean(raw_fpr) > 0.15
    assert abs(np.mean(calibrated_fpr) - 0.05) < 0.01  # sd of the mean over 40 repetitions is about 0.002


def test_split_keeps_the_queries_part_and_makes_nan_least_significant() -> None:
    joined = AttackResult(
        scores=np.array([3.0, np.nan, 0.5, 1.0, 2.0, np.nan]),
        log_pvalues=np.log([0.1, 0.5, 0.6, 0.7, 0.2, 0.9]),
        extra={"t": np.arange(6.0), "a": np.array([0.3])},
    )
    result = calibration.split_calibrated(joined, 3)
    np.testing.assert_array_equal(result.scores[[0, 2]], [3.0, 0.5])
    np.testing.assert_array_equal(result.extra["t"], [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(result.extra["a"], [0.3])  # not per record: kept whole
    # null scores 1.0 and 2.0 (the NaN one dropped): 3.0 beats both, 0.5 neither
    np.testing.assert_allclose(np.exp(result.log_pvalues_calibrated), [1 / 3, 1.0, 1.0])


def test_joined_inputs_append_the_validation_records() -> None:
    rng = np.random.default_rng(1)
    q, v = null_world(rng, 5), null_world(rng, 3)
    joined = calibration.with_calibration_queries(AttackInputs(queries=q, validation=v))
    assert joined.queries.labels.shape == (8,) and joined.queries.ref_logits.shape == (4, 8, 3)
    np.testing.assert_array_equal(joined.queries.target_logits[5:], v.target_logits)
