"""How much of the suspect set was used: a mixture estimate of the fraction with a bootstrap interval.

A suspect set of which a fraction pi was used is a mixture: its records score like the model's members with
probability pi and like its non-members otherwise. On any fixed score, the AUC of the suspects against the
validation records (unused) is then ``A_SV = (1 - pi) / 2 + pi * A_1``, where ``A_1`` is the AUC of the model's
members against its non-members; so ``pi = (A_SV - 1/2) / (A_1 - 1/2)``. Nobody knows the target's members, so
``A_1`` is measured on the references as pseudo-targets (models trained the same way, whose members are known):
the estimate assumes the target leaks as much as they do. The interval is a percentile bootstrap over the suspect
records, the validation records, each pseudo-target's members and non-members and the pseudo-targets themselves,
widened by the spread between pseudo-targets as a prediction interval for one more model (the target is one more
model drawn like them: Student's t with K - 1 degrees of freedom).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95
RIDGE = 0.1  # added to the within-class covariance of standardised features
MIN_LEAK = 0.01  # A_1 - 1/2 below this: the members are no different, the fraction is not identified


@dataclass(frozen=True)
class Fraction:
    estimate: float
    ci: tuple[float, float]
    member_auc: float  # A_1: the members' AUC against non-members on the pseudo-targets
    suspect_auc: float  # A_SV


def fisher_direction(x: np.ndarray, positive: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Fisher's discriminant direction (positives minus the rest) with a ridge on the within-class covariance: the
    pseudo-targets' members against their non-members, whose membership is known (no suspect label enters it)."""
    a, b = x[positive], x[~positive]
    if len(a) == 0 or len(b) == 0:
        return np.zeros(x.shape[1])
    centred = np.concatenate([a - a.mean(axis=0), b - b.mean(axis=0)])
    cov = centred.T @ centred / max(len(x) - 2, 1)
    return np.linalg.solve(cov + ridge * np.eye(x.shape[1]), a.mean(axis=0) - b.mean(axis=0))


def bootstrap_aucs(pos: np.ndarray, neg: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    """``resamples`` bootstrap draws of the AUC of ``pos`` against ``neg`` (each side resampled with replacement;
    ties 1/2), without re-sorting: with the negatives sorted once, a draw is sum_i c_i (D[lo_i] + D[hi_i]) / 2 /
    (n1 n0), c the positives' multiplicities and D the cumulated multiplicities of the negatives."""
    neg = np.sort(np.asarray(neg, dtype=np.float64))
    pos = np.asarray(pos, dtype=np.float64)
    lo, hi = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    n1, n0 = len(pos), len(neg)
    c = rng.multinomial(n1, np.full(n1, 1 / n1), size=resamples)
    d = rng.multinomial(n0, np.full(n0, 1 / n0), size=resamples)
    cum = np.concatenate([np.zeros((resamples, 1)), np.cumsum(d, axis=1)], axis=1)
    return (c * (cum[:, lo] + cum[:, hi]) / 2).sum(axis=1) / (n1 * n0)


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    neg = np.sort(np.asarray(neg, dtype=np.float64))
    lo, hi = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float(((lo + hi) / 2).sum() / (len(pos) * len(neg)))


def estimate(
    suspect: np.ndarray,
    validation: np.ndarray,
    pseudo: list[tuple[np.ndarray, np.ndarray]],
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Fraction | None:
    """The fraction of the suspect set used and its interval (module docstring).

    Args:
        suspect, validation: the target's scores of the suspect and the validation records (higher: more
            member-like), on a score fixed before they were seen.
        pseudo: per pseudo-target, (its members' scores, its non-members' scores) on the same score.
    Returns:
        None when there is no pseudo-target or its members score like its non-members (nothing to scale by).
    """
    if not pseudo or len(suspect) == 0 or len(validation) == 0:
        return None
    per_model = np.array([auc(m, n) for m, n in pseudo])
    a1 = float(per_model.mean())
    if a1 - 0.5 < MIN_LEAK:
        return None
    a_sv = auc(suspect, validation)
    rng = np.random.default_rng([seed, 7])
    a_sv_b = bootstrap_aucs(suspect, validation, rng, resamples)
    draws = np.stack([bootstrap_aucs(m, n, rng, resamples) for m, n in pseudo])  # (K, B)
    k = len(pseudo)
    which = rng.integers(0, k, size=(resamples, k))  # the pseudo-targets resampled too
    a1_b = draws[which, np.arange(resamples)[:, None]].mean(axis=1)
    if k > 1:  # the target is one more model drawn like them: its AUC deviates from their mean as a new draw does,
        # Student's t with K - 1 degrees of freedom times s sqrt(1 + 1/K) (a prediction interval's spread)
        spread = float(per_model.std(ddof=1)) * np.sqrt(1 + 1 / k)
        a1_b = a1_b + spread * rng.standard_t(k - 1, size=resamples)
    pi_b = (a_sv_b - 0.5) / np.maximum(a1_b - 0.5, MIN_LEAK / 2)
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(pi_b, [tail, 100 - tail])
    est = float(np.clip((a_sv - 0.5) / (a1 - 0.5), 0.0, 1.0))
    return Fraction(est, (float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))), a1, a_sv)


def at_least(scores: np.ndarray, is_suspect: np.ndarray, confidence: float = CONFIDENCE) -> float:
    """A one-sided lower confidence bound on the fraction of the suspect set used that assumes nothing of how far a
    member stands out: on any fixed score ``A_SV = 1/2 + pi (A_1 - 1/2) <= 1/2 + pi / 2`` (``A_1 <= 1``), so
    ``pi >= 2 A_SV - 1``. Read on the test's score (fixed before the labels are read): its AUC less ``z`` times
    DeLong's standard error, doubled, less 1, clipped to [0, 1]. It needs no reference model to scale by, and so
    holds where the target leaks unlike them; it is loose when members stand out little.
    """
    from scipy import stats

    from .blind import delong

    a, se = delong(np.asarray(scores, dtype=np.float64), np.asarray(is_suspect, dtype=bool))
    low = a - float(stats.norm.ppf(confidence)) * se
    return float(np.clip(2 * low - 1, 0.0, 1.0))
