"""The statistics of an unlearning verification, on simulated signals: hand cases, validity on exact retraining
(per-record p-values uniform, the verdict's false alarm rate at most the level), power against a remembering and a
wrecked model."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from miaudit.unlearning import verify


def simulated(rng: np.random.Generator, k: int, n_forget: int, n_unseen: int, shift: float = 0.0, wreck: float = 0.0):
    """Signals of an unlearned model and K retrained ones on forget + unseen records: each record a difficulty,
    each model a model-wide offset (seed to seed), noise per (model, record). ``shift`` moves the unlearned model's
    forget records (remembering > 0); ``wreck`` moves every record of the unlearned model. Exact retraining: 0, 0."""
    n = n_forget + n_unseen
    difficulty = rng.normal(0, 2, n)
    offsets = rng.normal(0, 0.3, k + 1)
    signals = difficulty + offsets[:, None] + rng.standard_t(5, (k + 1, n))
    signals[0, :n_forget] += shift
    signals[0] += wreck
    return signals[0], signals[1:]


def test_conformal_pvalues_by_hand() -> None:
    cal = np.array([1.0, 2.0, 3.0])
    assert verify.conformal_pvalues(np.array([2.0]), cal).tolist() == [3 / 4]  # 2 and 3 are >= 2: (1 + 2) / 4
    assert verify.conformal_pvalues(np.array([5.0]), cal).tolist() == [1 / 4]
    assert verify.conformal_pvalues(np.array([2.0]), cal, upper=False).tolist() == [3 / 4]  # 1 and 2 are <= 2
    assert verify.conformal_pvalues(np.array([0.0]), cal, upper=False).tolist() == [1 / 4]


def test_standardized_by_hand() -> None:
    ref = np.array([[0.0, 1.0], [2.0, 3.0]])  # per record mean 1 and 2, variance 2 each: pooled 2, shrunk 2
    z = verify.standardized(np.array([3.0, 2.0]), ref)
    assert z == pytest.approx([2 / np.sqrt(2 * 1.5), 0.0])
    with pytest.raises(ValueError, match="at least 2"):
        verify.standardized(np.zeros(2), ref[:1])


def test_auc_by_hand_and_interval() -> None:
    assert verify.auc(np.array([3.0, 4.0]), np.array([1.0, 2.0])) == 1.0
    assert verify.auc(np.array([1.0, 3.0]), np.array([2.0, 2.0])) == 0.5
    assert verify.auc(np.array([2.0]), np.array([2.0])) == 0.5
    e = verify.auc_by_records(np.array([[3.0, 4.0, 5.0]]), np.array([[1.0, 2.0, 0.0]]), seed=0, resamples=50)
    assert e.value == 1.0 and e.low == 1.0 and e.high == 1.0


def test_rank_test_directions_by_hand() -> None:
    high = verify.rank_test(np.array([30.0, 31.0, 32.0]), np.arange(20.0), seed=0, resamples=999)
    assert high.p_remembered < 0.01 and high.p_over_forgotten > 0.99 and high.p_value == 2 * high.p_remembered
    low = verify.rank_test(np.array([-3.0, -2.0, -1.0]), np.arange(20.0), seed=0, resamples=999)
    assert low.p_over_forgotten < 0.01 and low.p_remembered > 0.99
    assert low.p_value >= 2 / 1000  # the Monte Carlo permutation p-value's floor: (1 + 0) / (B + 1), two-sided


def test_model_test_by_hand() -> None:
    m = verify.model_test(5.0, np.array([1.0, 2.0, 3.0]))  # mean 2, sd 1, scale sqrt(4/3): t = 3 / 1.1547
    assert m.statistic == pytest.approx(3 / np.sqrt(4 / 3))
    assert m.p_remembered == pytest.approx(sps.t.sf(m.statistic, 2))
    assert m.p_value == pytest.approx(2 * m.p_remembered)


def test_decide_by_hand() -> None:
    rec = verify.RankTest(0.5, 0.4, 0.6, 0.8, 999)
    mod = verify.ModelTest(0.0, 0.01, 0.99, 0.02)
    d = verify.decide(rec, mod, 0.05)
    assert (d.verdict, d.p_value, d.p_remembered) == ("not_forgotten", 0.04, 0.02)
    assert verify.decide(rec, verify.ModelTest(0.0, 0.99, 0.02, 0.04), 0.05).verdict == "verified"  # 0.08 > level


def _pvalues_and_verdict(rng: np.random.Generator, k: int = 4, **kw) -> tuple[np.ndarray, str]:
    u, r = simulated(rng, k, 50, 400, **kw)
    z = verify.standardized(u, r)
    test = verify.rank_test(z[:50], z[50:], seed=int(rng.integers(1 << 30)), resamples=199)
    models = verify.model_test(float(u[:50].mean()), r[:, :50].mean(axis=1))
    return verify.conformal_pvalues(z[:50], z[50:]), verify.decide(test, models, 0.05).verdict


def test_per_record_pvalues_uniform_on_exact_retraining() -> None:
    """KS over 60 simulated retrains x 50 forgotten records: the upper-tail p-values are uniform (the conformal
    p-value's grid of 1/401 is far finer than what KS at this size resolves)."""
    rng = np.random.default_rng(46)
    p = np.concatenate([_pvalues_and_verdict(rng)[0] for _ in range(60)])
    assert sps.kstest(p, "uniform").pvalue > 0.001
    assert abs(np.mean(p <= 0.05) - 0.05) < 0.02


def test_verdict_false_alarm_rate_on_exact_retraining() -> None:
    """Over 200 simulated retrains (model-wide offsets included) the verdict is not verified at most at the level,
    up to the binomial spread (an upper bound on 200 draws at 5%: 18 alarms has probability < 0.1%)."""
    rng = np.random.default_rng(7)
    verdicts = [_pvalues_and_verdict(rng)[1] for _ in range(200)]
    alarms = sum(v != "verified" for v in verdicts)
    assert alarms <= 18
    assert sum(v == "not_forgotten" for v in verdicts) <= 12


def test_power_remembered_and_wrecked() -> None:
    rng = np.random.default_rng(3)
    assert all(_pvalues_and_verdict(rng, shift=3.0)[1] == "not_forgotten" for _ in range(10))
    assert all(_pvalues_and_verdict(rng, shift=-3.0)[1] == "over_forgotten" for _ in range(10))
    assert all(_pvalues_and_verdict(rng, wreck=-20.0)[1] == "over_forgotten" for _ in range(10))


def test_named_and_tpr_and_exposure_by_hand() -> None:
    assert verify.named(np.array([0.001, 0.9, 0.02]), 0.05).tolist() == [0, 2]  # BH: 0.003 and 0.03 <= 0.05
    assert verify.named(np.array([]), 0.05).tolist() == []
    unseen = np.arange(99.0)  # a forget score above all 99 unseen: p = 1/100 <= 0.01
    t = verify.tpr_at(np.array([100.0, 50.0]), unseen)
    assert t.value == 0.5 and t.low < 0.5 < t.high
    exposed = verify.newly_exposed(np.array([50.0, 100.0, 100.0]), np.array([100.0, 100.0, 50.0]), unseen, unseen)
    assert exposed.tolist() == [0]
