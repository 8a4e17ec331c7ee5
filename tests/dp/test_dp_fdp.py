"""The f-DP one-run bound against jax_privacy and on Gaussian mechanisms of known mu; coverage of every analysis
(binomial, f-DP, multi-run) on known mechanisms over seeded repetitions. Simulated mechanism outputs, no training;
every assertion is deterministic (fixed seeds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from miaudit.dp import bounds
from miaudit.dp.canaries import canary_bounds
from miaudit.dp.multi_run import multi_run_bound

CONFIDENCE, DELTA = 0.95, 1e-5


def gaussian_epsilon(mu: float, delta: float) -> float:
    """epsilon(delta) of the mu-GDP mechanism, solved by bisection on its closed-form delta(epsilon)."""
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        d = stats.norm.cdf(-mid / mu + mu / 2) - math.exp(mid) * stats.norm.cdf(-mid / mu - mu / 2)
        lo, hi = (mid, hi) if d > delta else (lo, mid)
    return lo


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0, 10.0])
def test_gaussian_mu_inverts_the_gaussian_privacy_curve(eps: float) -> None:
    mu = bounds.gaussian_mu(eps, DELTA)
    assert gaussian_epsilon(mu, DELTA) == pytest.approx(eps, abs=1e-9)
    assert bounds.gaussian_delta(eps, mu) == pytest.approx(DELTA, rel=1e-9)


@pytest.mark.slow
def test_fdp_bound_matches_jax_privacy_on_a_grid() -> None:
    auditing = pytest.importorskip(
        "jax_privacy.auditing", reason="jax_privacy is an optional test extra: pip install -e '.[audit-ref]'"
    )
    for m, r, v, delta, confidence in [
        (200, 40, 38, 1e-5, 0.95),
        (200, 40, 30, 1e-5, 0.95),
        (1000, 200, 190, 1e-5, 0.95),
        (1000, 100, 100, 1e-6, 0.99),
        (5000, 1000, 900, 1e-5, 0.95),
        (10_000, 200, 200, 1e-5, 0.9),
        (100, 20, 12, 1e-3, 0.95),
    ]:
        theirs = auditing._epsilon_one_run_fdp(0.0, m, r, v, 1 - confidence, delta)
        ours = bounds.fdp_epsilon_lb(m, r, v, confidence, delta)
        assert ours == pytest.approx(theirs, abs=2e-6), (m, r, v)  # their brentq stops at xtol 1e-6


def simulated_canaries(mu: float, m: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """m canaries through the mu-GDP Gaussian mechanism: score N(mu, 1) when included, N(0, 1) when not."""
    included = rng.random(m) < 0.5
    return rng.standard_normal(m) + mu * included, included


@pytest.mark.parametrize("mu", [1.0, 3.0])
def test_one_run_bounds_on_gaussian_mechanisms_never_exceed_epsilon_more_than_allowed(mu: float) -> None:
    rng = np.random.default_rng(2025)
    truth = gaussian_epsilon(mu, DELTA)
    found = {"binomial": [], "fdp": []}
    for _ in range(60):
        scores, included = simulated_canaries(mu, 1000, rng)
        for b in canary_bounds(scores, included, 50, CONFIDENCE, DELTA, seed=0):
            found[b.analysis].append(b.epsilon_lower_bound)
            assert b.epsilon_lower_bound <= b.max_attainable
    for analysis, lbs in found.items():
        assert np.mean(np.array(lbs) > truth) <= 1 - CONFIDENCE, analysis
    # f-DP uses the whole tradeoff curve: tighter than the binomial bound on the same guesses
    assert np.mean(found["fdp"]) > np.mean(found["binomial"]) > 0
    assert np.mean(found["fdp"]) > 0.3 * truth


def test_fdp_bound_recovers_most_of_a_gaussian_mechanisms_epsilon_with_many_canaries() -> None:
    """mu = 1 (epsilon 4.38 at delta 1e-5) on 10,000 canaries, 100 guesses each side: f-DP recovers most of it."""
    rng = np.random.default_rng(7)
    truth = gaussian_epsilon(1.0, DELTA)
    lbs = []
    for _ in range(5):
        scores, included = simulated_canaries(1.0, 10_000, rng)
        lbs.append(canary_bounds(scores, included, 100, CONFIDENCE, DELTA, seed=1)[1].epsilon_lower_bound)
    assert max(lbs) <= truth and np.mean(lbs) > 0.6 * truth


def test_power_is_the_bound_with_every_guess_right() -> None:
    found = bounds.one_run_bounds(200, 40, 40, CONFIDENCE, DELTA)
    assert [b.analysis for b in found] == ["binomial", "fdp"]
    assert all(b.epsilon_lower_bound == b.max_attainable for b in found)
    pure = bounds.one_run_bounds(200, 40, 40, CONFIDENCE, 0.0)
    assert [b.analysis for b in pure] == ["binomial"]  # the f-DP conversion needs delta > 0
    q = (1 - CONFIDENCE) ** (1 / 40)
    assert pure[0].max_attainable == pytest.approx(math.log(q / (1 - q)), abs=1e-8)


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_multi_run_counts_on_randomized_response_cover_epsilon(eps: float) -> None:
    """R runs with and R without the canary through eps-DP randomized response: the counts are exact binomials,
    the bound stays below eps at the confidence asked and approaches it with many runs."""
    rng = np.random.default_rng(11)
    p = 1 / (1 + math.exp(-eps))
    found = []
    for _ in range(200):
        included = np.arange(400) % 2 == 0
        said_in = np.where(rng.random(400) < p, included, ~included)
        out = multi_run_bound(said_in + 0.01 * rng.standard_normal(400), included, 0.0, CONFIDENCE, seed=3)
        assert out.guesses == 200 and out.runs == 400 and 0 <= out.correct <= 200
        found.append(out.epsilon_lower_bound)
    assert np.mean(np.array(found) > eps) <= 1 - CONFIDENCE
    assert np.median(found) > 0.4 * eps  # 100 + 100 runs for the bound, Clopper-Pearson at 97.5% each


def test_multi_run_counts_by_hand() -> None:
    scores = np.array([5.0, 0.0, 5.0, 0.0, 5.0, 0.0, 5.0, 0.0])
    included = np.array([True, False] * 4)
    out = multi_run_bound(scores, included, 0.0, CONFIDENCE, seed=0)
    assert out.guesses == 4 and out.correct == 4  # 2 in-runs flagged, 2 out-runs not
    assert out.epsilon_lower_bound == pytest.approx(out.max_attainable)
    assert out.max_attainable == pytest.approx(bounds.rate_bound(2, 2, 0, 2, 0.0, CONFIDENCE).epsilon_lb)
