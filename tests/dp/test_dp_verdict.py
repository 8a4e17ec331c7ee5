"""The one-run verdict over every observer (``miaudit.dp.verdict``): Holm and Bonferroni by hand, its validity on a
mechanism of known epsilon (randomized response: false alarms at most alpha over seeded repetitions), its power when
one observer of several sees the fault, and the f-DP bound kept out of the (eps, delta) verdict."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from miaudit.dp import bounds, verdict
from miaudit.dp.canaries import guesses
from miaudit.results import Bound
from miaudit.stats.multiple_testing import holm


def entry(observer: str, m: int, r: int, v: int, analysis: str = "binomial", delta: float = 1e-5) -> Bound:
    """An observer's counts as ``dp_audit.bounds`` holds them (its own bounds play no part in the verdict)."""
    return Bound(observer=observer, threat_model="black-box", analysis=analysis, canaries=m, guesses=r, correct=v,
                 delta=delta, epsilon_lower_bound=0.0, max_attainable=0.0, confidence=0.95)  # fmt: skip


def test_each_observer_is_tested_by_its_exact_binomial_p_value_and_bonferroni_bound() -> None:
    entries = [entry("a", 200, 100, 80), entry("b", 200, 100, 55), entry("c", 200, 40, 30)]
    tests = verdict.observer_tests(entries, 1.0, 0.95)
    q = np.exp(1.0) / (1 + np.exp(1.0))
    for e, t in zip(entries, tests):
        p = bounds.one_run_pvalue(e.canaries, e.guesses, e.correct, 1.0, 1e-5)
        assert t.p_value == pytest.approx(p)
        assert p >= stats.binom.sf(e.correct - 1, e.guesses, q)  # the delta term only adds
        corrected = bounds.one_run_epsilon_lb(e.canaries, e.guesses, e.correct, 1 - 0.05 / 3, 1e-5)
        assert t.bonferroni_bound == pytest.approx(corrected)
        assert t.bonferroni_bound <= bounds.one_run_epsilon_lb(e.canaries, e.guesses, e.correct, 0.95, 1e-5)
    adjusted = holm(np.array([t.p_value for t in tests]))
    assert [t.holm_adjusted_p_value for t in tests] == pytest.approx(adjusted)


def test_holm_rejects_exactly_when_the_largest_bonferroni_bound_exceeds_the_claim() -> None:
    rng = np.random.default_rng(0)
    for _ in range(30):
        entries = [entry(f"o{i}", 300, 100, int(rng.integers(40, 101)), delta=0.0) for i in range(3)]
        claim = float(rng.uniform(0.2, 3.0))
        d = verdict.decide(entries, ("declared", claim), 0.95, None)
        assert d.violated == (d.epsilon_lb > claim)
        assert d.verdict.startswith("violation" if d.violated else "no violation detected")


def randomized_response(eps: float, included: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each canary's bit, reported truthfully with probability e^eps / (1 + e^eps): exactly eps-DP."""
    truthful = rng.random(len(included)) < np.exp(eps) / (1 + np.exp(eps))
    return np.where(truthful, included, ~included).astype(float)


def observe(name: str, scores: np.ndarray, included: np.ndarray, k: int, seed: int) -> Bound:
    g = guesses(scores, k, seed)
    truth = np.where(included, 1, -1)
    return entry(name, len(g), int((g != 0).sum()), int(((g != 0) & (g == truth)).sum()), delta=0.0)


@pytest.mark.slow
def test_correct_mechanism_is_flagged_at_most_alpha_of_the_time() -> None:
    """Three observers of a mechanism that is exactly 1-DP (randomized response at eps 1, the worst case for the
    binomial test): over 300 seeded runs the verdict flags at most alpha = 5% of them, within an allowance that a
    valid test exceeds with probability below 1e-4 (Binomial(300, 0.05) > 31)."""
    eps, false_alarms = 1.0, 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        included = rng.random(200) < 0.5
        entries = [observe(f"o{i}", randomized_response(eps, included, rng), included, 50, seed) for i in range(3)]
        false_alarms += verdict.decide(entries, ("declared", eps), 0.95, None).violated
    assert stats.binom.sf(31, 300, 0.05) < 1e-4
    assert false_alarms <= 31


def test_one_observer_that_sees_the_fault_is_enough() -> None:
    """Claimed epsilon 1, true epsilon 4 seen by one observer; the two others see nothing (coin flips): flagged in
    nearly every run, by that observer."""
    flagged = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        included = rng.random(200) < 0.5
        entries = [observe("sees", randomized_response(4.0, included, rng), included, 50, seed)]
        entries += [observe(f"blind{i}", rng.random(200), included, 50, seed) for i in range(2)]
        d = verdict.decide(entries, ("declared", 1.0), 0.95, None)
        flagged += d.violated and d.verdict.startswith("violation: sees")
    assert flagged >= 36


def test_the_f_dp_bound_tests_mu_gdp_only_and_never_makes_a_violation() -> None:
    """Counts where the f-DP bound exceeds the claim and the binomial bound does not: no (eps, delta) violation; the
    mu-GDP test says it rejects, with its Gaussian-tradeoff assumption."""
    m, r, v = 1000, 200, 130
    assert bounds.fdp_epsilon_lb(m, r, v, 0.95, 1e-5) > 0.4 > bounds.one_run_epsilon_lb(m, r, v, 0.95, 1e-5)
    entries = [entry("w", m, r, v), entry("w", m, r, v, analysis="fdp")]
    d = verdict.decide(entries, ("declared", 0.4), 0.95, None)
    assert not d.violated and d.verdict.startswith("no violation detected")
    assert (
        d.gdp_test is not None
        and d.gdp_test.rejected
        and "assumes a Gaussian tradeoff curve (mu-GDP)" in d.gdp_test.statement
    )
    assert d.epsilon_lb == pytest.approx(bounds.one_run_epsilon_lb(m, r, v, 0.95, 1e-5))  # one observer


def test_a_planted_fault_is_said_beside_the_verdict() -> None:
    privacy = {"planted_fault": {"clip": "none", "description": "per-sample clipping skipped"}}
    d = verdict.decide([entry("a", 200, 100, 95)], ("declared", 1.0), 0.95, privacy)
    assert d.violated and d.verdict.startswith("violation (fault planted on purpose")
    assert "per-sample clipping skipped" in d.verdict[:120]
