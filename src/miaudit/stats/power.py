"""Power before the run: how precise the numbers of an audit of this size will be, and what it could detect.

From the numbers of members n1 and non-members n0 alone: the exact (Clopper-Pearson) interval a TPR will
have, the smallest TPR the verdict (``stats.verdict``) would call a leak, and how many records a wanted
precision needs. At FPR a, the operating threshold lets through floor(a n0) non-members: below 10 of them the
level is unreliable (``metrics.unreliable_levels``), so resolving a needs n0 >= 10 / a.
"""

from __future__ import annotations

import math

from .metrics import clopper_pearson
from .verdict import FAMILY_ALPHA, smallest_detectable_tp


def tpr_halfwidth(tpr: float, n_members: int) -> float:
    """Half the width of the exact 95% interval of a TPR measured on n_members."""
    lo, hi = clopper_pearson(round(tpr * n_members), n_members)
    return (hi - lo) / 2


def members_for_halfwidth(tpr: float, halfwidth: float, most: int = 10_000_000) -> int:
    """The fewest members for the exact interval of ``tpr`` to be at most +-``halfwidth`` (bisection)."""
    lo, hi = 1, 1
    while tpr_halfwidth(tpr, hi) > halfwidth:
        if hi >= most:
            return most
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if tpr_halfwidth(tpr, mid) > halfwidth else (lo, mid)
    return hi


def nonmembers_for_level(level: float) -> int:
    """The fewest non-members for at least 10 false positives at FPR ``level`` (a reliable level)."""
    return math.ceil(10 / level - 1e-9)


def smallest_detectable_tpr(n_members: int, n_nonmembers: int, level: float, tests: int) -> float | None:
    """The smallest TPR at ``level`` the verdict calls a leak with ``tests`` tests in its family (Bonferroni)."""
    tp = smallest_detectable_tp(n_members, n_nonmembers, level, FAMILY_ALPHA / max(tests, 1))
    return None if tp is None else tp / n_members
