"""Power before the answer: how large a suspect set the test needs to see use, at the leak measured on the
references (or, without them, at the effect observed).

The test's statistic is an AUC of suspects against validation records; under no use its standard deviation is
``sqrt((n_s + n_v + 1) / (12 n_s n_v))`` (Mann-Whitney). A suspect set of which a fraction pi was used shifts it by
``pi (A_1 - 1/2)``, A_1 the members' AUC. The normal approximation then gives the power at level alpha, the smallest
fully used suspect set detected with the wanted power, and the smallest fraction a set of this size reveals.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

POWER = 0.8
MOST = 100_000


def null_sd(n_suspect: int, n_validation: int) -> float:
    """The Mann-Whitney AUC's standard deviation under no difference."""
    return float(np.sqrt((n_suspect + n_validation + 1) / (12 * n_suspect * n_validation)))


def _needed(level: float, power: float) -> float:
    return float(stats.norm.ppf(1 - level) + stats.norm.ppf(power))


def power_at(member_auc: float, fraction: float, n_suspect: int, n_validation: int, level: float) -> float:
    """The approximate chance that the test says "used" at ``level``."""
    shift = fraction * (member_auc - 0.5)
    return float(stats.norm.cdf(shift / null_sd(n_suspect, n_validation) - stats.norm.ppf(1 - level)))


def smallest_suspect_set(member_auc: float, n_validation: int, level: float, power: float = POWER) -> int | None:
    """The fewest fully used suspect records detected with ``power`` against ``n_validation`` validation records;
    None when no number would (the leak is too small for this many validation records)."""
    shift, need = member_auc - 0.5, _needed(level, power)
    if shift <= 0 or shift < need * null_sd(MOST, n_validation):
        return None
    lo, hi = 2, MOST  # null_sd decreases in n_suspect: bisect for the first n that suffices
    while lo < hi:
        mid = (lo + hi) // 2
        if shift >= need * null_sd(mid, n_validation):
            hi = mid
        else:
            lo = mid + 1
    return lo


def detectable_fraction(
    member_auc: float, n_suspect: int, n_validation: int, level: float, power: float = POWER
) -> float | None:
    """The smallest fraction of a suspect set of this size whose use is detected with ``power``; None above 1."""
    shift = member_auc - 0.5
    if shift <= 0:
        return None
    f = _needed(level, power) * null_sd(n_suspect, n_validation) / shift
    return float(f) if f <= 1 else None
