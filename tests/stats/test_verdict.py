"""The verdict rule: exact per-test p-values, Holm over every (attack, level), and its false-"leaks" rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import comb

from miaudit.stats import verdict

LEVELS = (0.001, 0.01, 0.05)


def _brute_sf(tp: int, n1: int, n0: int, k: int) -> float:
    """P(at least tp members before the (k+1)-th non-member) by counting arrangements."""
    total = 0.0
    for x in range(tp, n1 + 1):  # exactly x members among the first x + k draws, then a non-member
        total += comb(x + k, x) * comb(n1 - x + n0 - k - 1, n1 - x) / comb(n1 + n0, n1)
    return total


@pytest.mark.parametrize(("tp", "n1", "n0", "level"), [(1, 5, 6, 0.0), (3, 5, 6, 0.2), (2, 4, 10, 0.1), (4, 4, 3, 0.5)])
def test_exceedance_pvalue_is_the_negative_hypergeometric_tail(tp: int, n1: int, n0: int, level: float) -> None:
    k = verdict.allowed_false_positives(level, n0)
    assert verdict.exceedance_pvalue(tp, n1, n0, level) == pytest.approx(_brute_sf(tp, n1, n0, k), rel=1e-10)


@pytest.mark.parametrize(("n1", "n0", "level"), [(359, 359, 0.01), (1000, 1002, 0.001), (2004, 1003, 0.05)])
def test_exceedance_pvalue_equals_scipy_nhypergeom_at_audit_sizes(n1: int, n0: int, level: float) -> None:
    """The log-space hypergeometric sum (no scipy.stats import at run time) against scipy's distribution where
    that is accurate (its sf is 1 - cdf: it floors near 1e-12), and in the far tail, where strong leaks put
    their p-values, against the exact count in integers."""
    stats = pytest.importorskip("scipy.stats")
    k = verdict.allowed_false_positives(level, n0)
    tps = np.unique(np.linspace(1, n1, 60).astype(int))
    want = stats.nhypergeom.sf(tps - 1, n1 + n0, n1, k + 1)
    got = np.array([verdict.exceedance_pvalue(int(tp), n1, n0, level) for tp in tps])
    accurate = want > 1e-6
    np.testing.assert_allclose(got[accurate], want[accurate], rtol=1e-6)
    np.testing.assert_array_less(got[~accurate], 1e-6 + 1e-11)
    for tp in (int(tps[6]), int(tps[12])):  # tails far below scipy's floor
        draws = tp + k
        exact = sum(math.comb(n1, j) * math.comb(n0, draws - j) for j in range(tp, min(n1, draws) + 1))
        assert verdict.exceedance_pvalue(tp, n1, n0, level) == pytest.approx(
            exact / math.comb(n1 + n0, draws), rel=1e-9
        )
    assert verdict.exceedance_pvalue(n1 + 1, n1, n0, level) == 0.0


def test_hand_case_member_above_every_nonmember() -> None:
    # 1 member, 3 non-members, level 0 (k = 0): the member tops all four by chance with probability 1/4.
    assert verdict.exceedance_pvalue(1, 1, 3, 0.0) == pytest.approx(0.25)
    assert verdict.exceedance_pvalue(0, 1, 3, 0.0) == 1.0


def test_smallest_detectable_tp_is_the_critical_value() -> None:
    n1, n0, level, alpha = 300, 300, 0.01, 0.05 / 9
    tp = verdict.smallest_detectable_tp(n1, n0, level, alpha)
    assert verdict.exceedance_pvalue(tp, n1, n0, level) <= alpha < verdict.exceedance_pvalue(tp - 1, n1, n0, level)


def _null_scores(rng: np.random.Generator, n: int, attacks: int) -> dict[str, np.ndarray]:
    """Correlated attacks whose scores ignore membership (a shared per-record component plus noise)."""
    shared = rng.normal(size=n)
    return {f"a{j}": shared + rng.normal(scale=0.7, size=n) for j in range(attacks)}


def test_false_leaks_at_most_five_percent_under_the_null() -> None:
    reps, n = 120, 400
    member = np.arange(n) < n // 2
    leaks = naive = 0
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        v = verdict.decide(_null_scores(rng, n, 4), member, LEVELS)
        leaks += v.leaks
        naive += min(t.p_value for t in v.tests) <= 0.05  # no correction for the 12 tests
    se = math.sqrt(0.05 * 0.95 / reps)
    assert leaks / reps <= 0.05 + 2 * se
    assert naive / reps > 0.05 + 2 * se  # the uncorrected rule does err more often: the test can tell


def test_a_real_leak_is_found_and_named() -> None:
    n = 400
    member = np.arange(n) < n // 2
    found = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        scores = _null_scores(rng, n, 3)
        scores["a0"] = scores["a0"] + 1.5 * member  # one attack sees membership
        v = verdict.decide(scores, member, LEVELS)
        found += v.leaks and v.basis().attack == "a0"
    assert found >= 19
