"""Epsilon lower bounds from membership guesses: pure functions of counts (scipy.stats), no models.

Two-run (hypothesis-testing) bound. A mechanism M is (epsilon, delta)-DP iff every test of "record in" against
"record out" with false-positive rate FPR and true-positive rate TPR satisfies (Kairouz, Oh & Viswanath 2015,
Theorem 2.1; used for auditing by Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021)

    TPR <= e^eps FPR + delta        and        1 - FPR <= e^eps (1 - TPR) + delta,

so an attack whose rates are known gives

    epsilon_lb = max( log((TPR - delta) / FPR),  log((1 - FPR - delta) / (1 - TPR)) ).

Measured rates are estimates: we put the exact one-sided Clopper-Pearson lower bound TPR_lo and upper bound
FPR_hi (each at level (1 - confidence) / 2, i.e. the conservative ends of the two-sided confidence intervals)
into the formula. Both inequalities decrease in FPR and increase in TPR, so with probability at least
``confidence`` (union bound over the two intervals) the true rates satisfy TPR >= TPR_lo and FPR <= FPR_hi and
the bound does not exceed the mechanism's epsilon. A bound below 0 is reported as 0 (nothing shown).

One-run bound (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run", Theorems 3.1 and
3.3 and their appendix code). m canaries, each included independently with probability 1/2; the auditor makes
r guesses (abstaining on the rest), v of them correct. If M is eps-DP, the number of correct guesses is
stochastically dominated by Binomial(r, q), q = e^eps / (1 + e^eps), so

    p(eps, 0) = P[Binomial(r, q) >= v]

is a valid p-value for "M is eps-DP". For (eps, delta)-DP the theorem adds a term:

    p(eps, delta) = f(v) + 2 m delta max_{i = 1..v} (f(v - i) - f(v)) / i,     f(u) = P[Binomial(r, q) >= u].

epsilon_lb is the largest eps whose p-value is below 1 - confidence (p increases with eps); 0 when even eps = 0
is not rejected.

f-DP one-run bound (Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run", ICML 2025,
their ``audit_rh_with_cap``; as jax_privacy's ``epsilon_one_run_fdp`` computes it). The null hypothesis is "M is
mu-GDP" (tradeoff function f(x) = Phi(Phi^-1(1 - x) - mu)), mu being the Gaussian mechanism's whose
(eps, delta) curve passes through (eps, delta) (Balle & Wang 2018; Dong, Roth & Su 2019, Cor. 2.13). The
recursion bounds how many of r guesses can be right at level 1 - confidence under f; the claim is falsified when
r / m exceeds that cap, and epsilon_lb is the largest eps so falsified. Its statement is "M is not
mu(eps, delta)-GDP": a lower bound on epsilon for mechanisms whose tradeoff curve is Gaussian (the Gaussian
mechanism; DP-SGD is close to one by the CLT of Dong et al.). It uses the whole tradeoff curve, not one
(eps, delta) point, so it is tighter than the binomial bound on the same guesses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import optimize, special, stats

FORMULA_TWO_RUN = "max(log((TPR_lo - delta) / FPR_hi), log((1 - FPR_hi - delta) / (1 - TPR_lo)))"
SOURCE_TWO_RUN = "Kairouz, Oh & Viswanath 2015 (Thm 2.1); Jagielski et al. 2020; Nasr et al. 2021"
SOURCE_ONE_RUN = "Steinke, Nasr & Jagielski 2023, Privacy Auditing with One (1) Training Run, Thms 3.1, 3.3"
SOURCE_FDP = "Mahloujifar, Melis & Chaudhuri 2025, Auditing f-Differential Privacy in One Run (audit_rh_with_cap)"
EPS_MAX = 100.0  # search ceiling: a bound at it means "any epsilon we can represent is rejected"


def cp_lower(k: np.ndarray | int, n: np.ndarray | int, alpha: float) -> np.ndarray:
    """One-sided exact (Clopper-Pearson) lower confidence bound at level 1 - alpha on a binomial rate k / n."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    safe = np.where(k > 0, k, 1.0)
    return np.where(k > 0, stats.beta.ppf(alpha, safe, n - k + 1), 0.0)


def cp_upper(k: np.ndarray | int, n: np.ndarray | int, alpha: float) -> np.ndarray:
    """One-sided exact (Clopper-Pearson) upper confidence bound at level 1 - alpha on a binomial rate k / n."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    safe = np.where(k < n, n - k, 1.0)
    return np.where(k < n, stats.beta.ppf(1 - alpha, k + 1, safe), 1.0)


def epsilon_from_rates(tpr: np.ndarray | float, fpr: np.ndarray | float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The larger of the two (eps, delta)-DP inequalities solved for eps (0 where neither is positive), and which
    one gave it (0: TPR <= e^eps FPR + delta, 1: 1 - FPR <= e^eps (1 - TPR) + delta)."""
    tpr, fpr = np.asarray(tpr, dtype=np.float64), np.asarray(fpr, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where((tpr - delta > 0) & (fpr > 0), np.log((tpr - delta) / fpr), -np.inf)
        first = np.where((tpr - delta > 0) & (fpr <= 0), np.inf, first)
        second = np.where((1 - fpr - delta > 0) & (tpr < 1), np.log((1 - fpr - delta) / (1 - tpr)), -np.inf)
        second = np.where((1 - fpr - delta > 0) & (tpr >= 1), np.inf, second)
    eps = np.maximum(np.maximum(first, second), 0.0)
    return eps, (second > first).astype(int)


@dataclass(frozen=True)
class RateBound:
    """A two-run bound at one threshold: the counts, the rates with their conservative ends, epsilon_lb."""

    epsilon_lb: float
    tpr: float
    tpr_lower: float
    fpr: float
    fpr_upper: float
    true_positives: int
    n_members: int
    false_positives: int
    n_nonmembers: int
    inequality: str  # which DP inequality gave the bound


def rate_bounds(tp: np.ndarray, n1: int, fp: np.ndarray, n0: int, delta: float, confidence: float) -> np.ndarray:
    """epsilon_lb for each (tp, fp) pair (vectorised): Clopper-Pearson ends at (1 - confidence) / 2 each."""
    alpha = (1 - confidence) / 2
    return epsilon_from_rates(cp_lower(tp, n1, alpha), cp_upper(fp, n0, alpha), delta)[0]


def rate_bound(tp: int, n1: int, fp: int, n0: int, delta: float, confidence: float) -> RateBound:
    """The two-run bound from tp of n1 members and fp of n0 non-members flagged (module docstring)."""
    alpha = (1 - confidence) / 2
    lo, hi = float(cp_lower(tp, n1, alpha)), float(cp_upper(fp, n0, alpha))
    eps, which = epsilon_from_rates(lo, hi, delta)
    inequality = "1 - FPR <= e^eps (1 - TPR) + delta" if int(which) else "TPR <= e^eps FPR + delta"
    return RateBound(float(eps), tp / n1, lo, fp / n0, hi, int(tp), int(n1), int(fp), int(n0), inequality)


def one_run_pvalue(m: int, r: int, v: int, eps: float, delta: float = 0.0) -> float:
    """P-value of v or more correct of r guesses on m canaries under "M is (eps, delta)-DP" (module docstring)."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    q = 1.0 / (1.0 + math.exp(-eps))
    f_v = float(stats.binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    if delta <= 0 or v == 0:
        return min(f_v, 1.0)
    below = np.cumsum(stats.binom.pmf(v - np.arange(1, v + 1), r, q))  # f(v - i) - f(v), i = 1..v
    return min(f_v + 2 * m * delta * float(np.max(below / np.arange(1, v + 1))), 1.0)


def one_run_epsilon_lb(m: int, r: int, v: int, confidence: float, delta: float = 0.0) -> float:
    """The largest eps rejected at level 1 - confidence by ``one_run_pvalue`` (0 when eps = 0 is not)."""
    beta = 1 - confidence
    gap = lambda eps: one_run_pvalue(m, r, v, eps, delta) - beta
    if gap(0.0) >= 0:
        return 0.0
    if gap(EPS_MAX) < 0:
        return EPS_MAX
    return float(optimize.brentq(gap, 0.0, EPS_MAX, xtol=1e-10))


def gaussian_delta(eps: float, mu: float) -> float:
    """delta(eps) of the mu-GDP (Gaussian) mechanism: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), in logs."""
    if mu <= 0:
        return 0.0
    log_a, log_b = special.log_ndtr(-eps / mu + mu / 2), eps + special.log_ndtr(-eps / mu - mu / 2)
    return float(math.exp(log_a) * -math.expm1(log_b - log_a)) if log_b < log_a else 0.0


def gaussian_mu(eps: float, delta: float) -> float:
    """The mu of the Gaussian mechanism that is exactly (eps, delta)-DP (delta(eps; mu) increases with mu)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    hi = 1.0
    while gaussian_delta(eps, hi) < delta:
        hi *= 2
    return float(optimize.brentq(lambda mu: gaussian_delta(eps, mu) - delta, 0.0, hi, xtol=1e-14, rtol=1e-14))


def fdp_gap(m: int, r: int, v: int, eps: float, delta: float, alpha: float) -> float:
    """Positive when v of r correct guesses on m canaries falsify mu(eps, delta)-GDP at level alpha (the
    recursion of Mahloujifar et al.'s ``audit_rh_with_cap``: the most correct guesses the tradeoff allows)."""
    mu = gaussian_mu(eps, delta)
    right, wrong = alpha * v / m, alpha * (r - v) / m
    for i in range(v - 1, -1, -1):
        raised = max(wrong, float(special.ndtr(special.ndtri(right) - mu)))
        if raised == wrong:  # neither can change any more
            break
        right, wrong = min(right + i / (r - i) * (raised - wrong), 1.0), raised
    return right + wrong - r / m


def fdp_epsilon_lb(m: int, r: int, v: int, confidence: float, delta: float) -> float:
    """The largest eps whose mu(eps, delta)-GDP claim ``fdp_gap`` rejects at level 1 - confidence (0 if none)."""
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    alpha = 1 - confidence
    gap = lambda eps: fdp_gap(m, r, v, eps, delta, alpha)
    if r == 0 or gap(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while gap(hi) > 0:
        lo, hi = hi, 2 * hi
        if hi > EPS_MAX:
            return EPS_MAX
    return float(optimize.brentq(gap, lo, hi, xtol=1e-10))


ANALYSES = {"binomial": one_run_epsilon_lb, "fdp": fdp_epsilon_lb}


class AnalysisBound(NamedTuple):
    """One analysis of a set of guesses: its bound and its power (the bound had every guess been right)."""

    analysis: str
    epsilon_lower_bound: float
    max_attainable: float


def one_run_bounds(m: int, r: int, v: int, confidence: float, delta: float) -> list[AnalysisBound]:
    """Both analyses of one set of guesses, each with its power: the bound had every guess been right. The f-DP
    conversion needs delta > 0: at delta = 0 (pure DP) the binomial bound alone."""
    return [
        AnalysisBound(name, fn(m, r, v, confidence, delta), fn(m, r, r, confidence, delta))
        for name, fn in ANALYSES.items()
        if delta > 0 or name == "binomial"
    ]
