"""The epsilon lower bounds (miaudit.dp.bounds) on mechanisms of known epsilon, and the one-run theorem against an
independent recomputation. Statistics with fixed seeds: every assertion is deterministic."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from miaudit.config import run as config
from miaudit.dp import audit, bounds
from miaudit.dp.canaries import canary_bounds, guesses
from miaudit.dp.verdict import FDP_ASSUMES
from miaudit.results import SelectionRecords
from miaudit.stats.metrics import clopper_pearson

CONFIDENCE = 0.95


def rr_rate(eps: float) -> float:
    """Randomized response at eps: the true bit is reported with probability e^eps / (1 + e^eps)."""
    return 1 / (1 + math.exp(-eps))


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_two_run_bound_on_randomized_response_never_exceeds_epsilon_and_approaches_it(eps: float) -> None:
    rng = np.random.default_rng(20231)
    p = rr_rate(eps)
    reps = 400
    tp, fp = rng.binomial(1000, p, reps), rng.binomial(1000, 1 - p, reps)
    lb = bounds.rate_bounds(tp, 1000, fp, 1000, 0.0, CONFIDENCE)
    assert (lb > eps).mean() <= 1 - CONFIDENCE  # at most 5% above the truth (here: none)
    means, above = [], 0
    for n in (100, 1000, 10_000, 100_000, 1_000_000):
        tp, fp = rng.binomial(n, p, 50), rng.binomial(n, 1 - p, 50)
        lb = bounds.rate_bounds(tp, n, fp, n, 0.0, CONFIDENCE)
        above += int((lb > eps).sum())
        means.append(lb.mean())
    assert above <= (1 - CONFIDENCE) * 250
    assert np.all(np.diff(means) > 0)  # tighter with more trials
    assert eps - 0.05 < means[-1] <= eps  # and close to the truth at a million


@pytest.mark.slow
def test_two_run_with_threshold_selection_on_randomized_response_records() -> None:
    """The whole two-run audit (threshold on one half, bound on the other) on record-level RR at eps = 1."""
    cfg = config.from_dict({"attacks": ["attack-p"], "dp_audit": {"attack": "attack-p"}})
    rng = np.random.default_rng(7)
    p, n, found = rr_rate(1.0), 4000, []
    for _ in range(100):
        member = np.arange(2 * n) < n
        report = np.where(rng.random(2 * n) < p, member, ~member).astype(float)
        scores = report + 0.01 * rng.standard_normal(2 * n)  # continuous scores: many candidate thresholds
        out = audit.two_run(scores, member, cfg.dp_audit, cfg, "rr")
        assert out.selection_records == SelectionRecords(members=n // 2, nonmembers=n // 2)
        assert out.n_members == n // 2 and 0 <= out.realized_fpr <= 1
        found.append(out.epsilon_lb)
    assert (np.array(found) > 1.0).mean() <= 1 - CONFIDENCE
    assert 0.75 < np.median(found) <= 1.0


def test_two_run_formula_by_hand() -> None:
    b = bounds.rate_bound(90, 100, 10, 100, delta=0.0, confidence=0.9)
    lo, hi = stats.beta.ppf(0.05, 90, 11), stats.beta.ppf(0.95, 11, 90)
    assert b.tpr_lower == pytest.approx(lo) and b.fpr_upper == pytest.approx(hi)
    assert b.epsilon_lb == pytest.approx(max(math.log(lo / hi), math.log((1 - hi) / (1 - lo))))
    # the conservative ends are those of the two-sided interval at the same confidence
    assert (b.tpr_lower, b.fpr_upper) == pytest.approx(
        (clopper_pearson(90, 100, 0.9)[0], clopper_pearson(10, 100, 0.9)[1])
    )
    # delta lowers the bound; a useless attack gives 0
    assert bounds.rate_bound(90, 100, 10, 100, 0.05, 0.9).epsilon_lb < b.epsilon_lb
    assert bounds.rate_bound(50, 100, 50, 100, 0.0, 0.9).epsilon_lb == 0.0


def independent_pvalue(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Steinke et al. 2023, Thm 3.3, written out term by term in log space (math only, no scipy)."""
    q = math.exp(eps) / (1 + math.exp(eps))

    def pmf(j: int) -> float:
        if j < 0 or j > r:
            return 0.0
        logc = math.lgamma(r + 1) - math.lgamma(j + 1) - math.lgamma(r - j + 1)
        return math.exp(logc + j * math.log(q) + (r - j) * math.log1p(-q))

    def f(u: int) -> float:  # P[Binomial(r, q) >= u]
        return sum(pmf(j) for j in range(max(u, 0), r + 1))

    extra = max(((f(v - i) - f(v)) / i for i in range(1, v + 1)), default=0.0)
    return min(f(v) + 2 * m * delta * extra, 1.0)


def independent_eps(m: int, r: int, v: int, delta: float, confidence: float) -> float:
    lo, hi = 0.0, 60.0
    if independent_pvalue(m, r, v, 0.0, delta) >= 1 - confidence:
        return 0.0
    for _ in range(100):  # bisection: the p-value increases with eps
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if independent_pvalue(m, r, v, mid, delta) < 1 - confidence else (lo, mid)
    return lo


@pytest.mark.slow
@pytest.mark.parametrize(
    "m, r, v, delta",
    [(100, 20, 18, 0.0), (100, 20, 18, 1e-5), (1000, 200, 150, 1e-5), (1000, 100, 100, 1e-5), (5000, 500, 320, 1e-4)],
)
def test_one_run_bound_matches_an_independent_recomputation(m: int, r: int, v: int, delta: float) -> None:
    assert bounds.one_run_pvalue(m, r, v, 1.3, delta) == pytest.approx(
        independent_pvalue(m, r, v, 1.3, delta), rel=1e-9
    )
    assert bounds.one_run_epsilon_lb(m, r, v, CONFIDENCE, delta) == pytest.approx(
        independent_eps(m, r, v, delta, CONFIDENCE), abs=1e-7
    )


def test_one_run_closed_forms() -> None:
    # all r guesses right, pure DP: q^r = 1 - confidence, eps = logit(q)
    for r in (10, 40, 200):
        q = (1 - CONFIDENCE) ** (1 / r)
        assert bounds.one_run_epsilon_lb(1000, r, r, CONFIDENCE) == pytest.approx(math.log(q / (1 - q)), abs=1e-8)
    assert bounds.one_run_epsilon_lb(1000, 100, 50, CONFIDENCE) == 0.0  # chance level shows nothing
    assert bounds.one_run_epsilon_lb(1000, 100, 90, CONFIDENCE, 1e-3) < bounds.one_run_epsilon_lb(
        1000, 100, 90, CONFIDENCE
    )


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_one_run_bound_on_randomized_response(eps: float) -> None:
    """Canaries through eps-DP randomized response: the bound stays below eps and approaches it as m grows."""
    rng = np.random.default_rng(2023)
    p = rr_rate(eps)
    correct = rng.binomial(1000, p, 200)  # no abstention: r = m, and v ~ Binomial(m, p) exactly
    lb = np.array([bounds.one_run_epsilon_lb(1000, 1000, int(v), CONFIDENCE) for v in correct])
    assert (lb > eps).mean() <= 1 - CONFIDENCE
    big = [bounds.one_run_epsilon_lb(10**5, 10**5, int(v), CONFIDENCE, 1e-6) for v in rng.binomial(10**5, p, 5)]
    small = [bounds.one_run_epsilon_lb(100, 100, int(v), CONFIDENCE, 1e-6) for v in rng.binomial(100, p, 5)]
    assert eps - 0.08 < np.mean(big) <= eps and np.mean(small) < np.mean(big)


def test_canary_guesses_and_bound_on_record_level_randomized_response() -> None:
    rng = np.random.default_rng(11)
    m, p = 2000, rr_rate(1.0)
    included = rng.random(m) < 0.5
    scores = np.where(rng.random(m) < p, included, ~included) + 0.01 * rng.standard_normal(m)
    g = guesses(scores, 100, seed=0)
    assert (g == 1).sum() == 100 and (g == -1).sum() == 100
    assert scores[g == 1].min() > scores[g == 0].max() > scores[g == 0].min() > scores[g == -1].max()
    binomial, fdp = canary_bounds(scores, included, 1000, CONFIDENCE, 1e-5, seed=0)
    assert binomial.guesses == fdp.guesses == 2000 and binomial.correct == fdp.correct
    assert binomial.epsilon_lower_bound <= 1.0
    # randomized response is 1-DP but far from Gaussian in the middle of its tradeoff curve: the f-DP bound, which
    # tests "mu(eps, delta)-GDP", rightly rejects the Gaussian claim and so reads above 1 (its stated assumption)
    assert fdp.epsilon_lower_bound > 1.0 and fdp.assumes == FDP_ASSUMES and binomial.assumes is None
    nan = guesses(np.r_[np.nan, np.arange(5.0)], 3, seed=0)
    assert nan[0] == 0 and (nan != 0).sum() == 4  # NaN abstains; k shrinks to what remains
