"""Precision (positive predictive value) of a membership test at a realistic share of members.

An attack's TPR and FPR are rates among members and among non-members; what a flag means for one record
depends on how many members the attacker's candidates hold. With a member prior pi,
PPV = pi TPR / (pi TPR + (1 - pi) FPR). At pi = 1% a test with TPR 5% at FPR 1% is right about 5% of
the time it says "member" (Jayaraman et al. 2021, "Revisiting membership inference under realistic
assumptions").

The interval: PPV rises with TPR and falls with FPR, so its bounds are the PPVs at the opposite corners of
the TPR and FPR intervals. Members and non-members are independent samples, so two exact intervals at
confidence sqrt(c) hold together with probability at least c. Like the TPR interval, it treats the
threshold as fixed (it was picked on the same non-members).
"""

from __future__ import annotations

import math

from .metrics import CONFIDENCE, clopper_pearson

PRIORS = (0.01, 0.1, 0.5)


def ppv(tpr: float, fpr: float, prior: float) -> float | None:
    """pi TPR / (pi TPR + (1 - pi) FPR); None where the test flags nobody (TPR = FPR = 0)."""
    flagged = prior * tpr + (1 - prior) * fpr
    return None if flagged <= 0 else prior * tpr / flagged


def ppv_interval(
    tp: int, n_members: int, fp: int, n_nonmembers: int, prior: float, confidence: float = CONFIDENCE
) -> tuple[float | None, tuple[float, float]]:
    """PPV from the counts at an operating point, with its interval from the exact TPR and FPR intervals.

    No point estimate (None) where no non-member is flagged: the plug-in PPV would be 1 on no evidence about
    the FPR at all, while the interval (its upper end 1) still says what the counts allow."""
    each = math.sqrt(confidence)
    tpr_lo, tpr_hi = clopper_pearson(tp, n_members, each)
    fpr_lo, fpr_hi = clopper_pearson(fp, n_nonmembers, each)
    point = ppv(tp / n_members, fp / n_nonmembers, prior) if fp > 0 else None
    lo, hi = ppv(tpr_lo, fpr_hi, prior), ppv(tpr_hi, fpr_lo, prior)
    return point, (0.0 if lo is None else lo, 1.0 if hi is None else hi)
