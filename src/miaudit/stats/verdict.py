"""The verdict: does the model leak membership? One decision over every attack and FPR level, with its
family-wise error rate held at alpha.

Each (attack, FPR level a) pair is one test. Its null: the attack's scores do not tell members from
non-members (the two are exchangeable, as for a model audited with "members" it never trained on). The
statistic is TP, the members above the operating threshold, the one that catches the most members while
flagging at most k = floor(a n0) of the n0 non-members. Under the null every ordering of the n1 + n0 scores
is equally likely, and TP is at most the number of members ranked above the (k+1)-th non-member, which
follows the negative hypergeometric distribution (draws without replacement until k + 1 non-members).
Its tail is the exact p-value: no normal approximation, and the threshold being set on the same
non-members is accounted for (a binomial test at the realized FPR is not: that FPR is biased low). Ties
only make it conservative.

"Leaks" when Holm's step-down procedure (Holm 1979) rejects at least one of the m tests at alpha, which
happens exactly when the smallest p-value is <= alpha / m: the chance of a false "leaks" is at most alpha
whatever the dependence between attacks and levels (they share records, so they are strongly dependent).
A naive rule ("any attack's 95% interval clears its level") makes m chances of error and said "leaks" on
2 of 8 null seeds on digits. "No leak detected" comes with the audit's power: the smallest TPR that would
have been called a leak at that level with these numbers of members and non-members.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from .metrics import operating_points
from .multiple_testing import holm

FAMILY_ALPHA = 0.05


def allowed_false_positives(level: float, n_nonmembers: int) -> int:
    """k: the most non-members a threshold at FPR <= level may flag."""
    return int(math.floor(level * n_nonmembers + 1e-9))


def exceedance_pvalue(tp: int, n_members: int, n_nonmembers: int, level: float) -> float:
    """P(TP >= tp) under exchangeability: members drawn before the (k+1)-th non-member (negative hypergeometric).

    That is scipy.stats.nhypergeom.sf(tp - 1, n1 + n0, n1, k + 1); it is computed here as the equal
    hypergeometric tail (at least tp members among the first tp + k draws), a sum of at most k + 1 terms in
    log space, because importing scipy.stats costs a scores-only audit a second (tests/stats/test_verdict.py
    holds it to a brute-force count and to scipy.stats.nhypergeom)."""
    if tp <= 0:
        return 1.0
    if tp > n_members:
        return 0.0
    k = allowed_false_positives(level, n_nonmembers)
    draws = min(tp + k, n_members + n_nonmembers)
    j = np.arange(tp, min(n_members, draws) + 1)  # members among the draws
    log_terms = (
        _log_choose(n_members, j) + _log_choose(n_nonmembers, draws - j) - _log_choose(n_members + n_nonmembers, draws)
    )
    top = log_terms.max()
    return float(min(1.0, np.exp(top) * np.exp(log_terms - top).sum()))


def _log_choose(n: int | np.ndarray, k: int | np.ndarray) -> np.ndarray:
    """log C(n, k), -inf where k is outside [0, n]."""
    n, k = np.asarray(n, dtype=np.float64), np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        value = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    return np.where((k >= 0) & (k <= n), value, -np.inf)


def smallest_detectable_tp(n_members: int, n_nonmembers: int, level: float, alpha: float) -> int | None:
    """The fewest members above the threshold that the test at ``alpha`` calls significant (None: none would).

    The tail falls as tp grows, so a bisection over 1..n1 finds it."""
    lo, hi = 1, n_members + 1  # invariant: the answer lies in [lo, hi]; hi = n1 + 1 stands for none
    while lo < hi:
        mid = (lo + hi) // 2
        if exceedance_pvalue(mid, n_members, n_nonmembers, level) <= alpha:
            hi = mid
        else:
            lo = mid + 1
    return lo if lo <= n_members else None


@dataclass(frozen=True)
class Test:
    """One (attack, FPR level) test at its operating point."""

    attack: str
    level: float
    tp: int
    fp: int
    n_members: int
    n_nonmembers: int
    p_value: float
    adjusted: float  # Holm over every test of the verdict


@dataclass(frozen=True)
class Verdict:
    leaks: bool
    tests: tuple[Test, ...]
    alpha: float

    @property
    def rejected(self) -> list[Test]:
        return [t for t in self.tests if t.adjusted <= self.alpha]

    def basis(self, headline_level: float = 0.01) -> Test:
        """The test the statement rests on: with a leak, the rejected test at the headline level with the most
        members caught (else the most significant rejected one); without, the best attack at the headline level."""
        pool = self.rejected or list(self.tests)
        at_level = [t for t in pool if abs(t.level - headline_level) < 1e-12]
        if at_level:
            return max(at_level, key=lambda t: (t.tp / t.n_members, -t.p_value))
        return min(pool, key=lambda t: (t.adjusted, t.p_value))

    def smallest_detectable_tpr(self, level: float) -> float | None:
        """Power: the TPR at ``level`` this audit would have called a leak (Bonferroni's alpha / m threshold)."""
        t = self.tests[0]
        tp = smallest_detectable_tp(t.n_members, t.n_nonmembers, level, self.alpha / len(self.tests))
        return None if tp is None else tp / t.n_members


def decide(
    scores: Mapping[str, np.ndarray], is_member: np.ndarray, levels: tuple[float, ...], alpha: float = FAMILY_ALPHA
) -> Verdict:
    """The verdict over every attack's scores (higher = member) at every FPR level, at family-wise error alpha."""
    member = np.asarray(is_member, dtype=bool)
    n1, n0 = int(member.sum()), int((~member).sum())
    raw: list[tuple[str, float, int, int, float]] = []
    for label, s in scores.items():
        points = operating_points(s, member)
        for level in levels:
            ok = np.flatnonzero(points.fp <= allowed_false_positives(level, n0))
            i = ok[np.argmax(points.tp[ok])]
            tp, fp = int(points.tp[i]), int(points.fp[i])
            raw.append((label, level, tp, fp, exceedance_pvalue(tp, n1, n0, level)))
    if not raw:
        raise ValueError("verdict: no membership test to decide on")
    adjusted = holm(np.array([r[4] for r in raw]))
    tests = tuple(Test(a, lv, tp, fp, n1, n0, p, float(q)) for (a, lv, tp, fp, p), q in zip(raw, adjusted))
    return Verdict(bool((adjusted <= alpha).any()), tests, alpha)
