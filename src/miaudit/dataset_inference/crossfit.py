"""The set-level test: per-record features combined by a direction learned on one half of the suspect and
validation records and applied to the other half (cross-fitted, so every record is scored by a combination that
never saw it), and a permutation p-value that holds exactly under the null.

The statistic is the cross-fitted AUC: in each half, the Mann-Whitney AUC of the suspects' combined scores against
the validation records', the halves weighted by their pairs. Its null distribution comes from the same whole
procedure (halves, combination, AUC) recomputed on the pooled records with the suspect/validation labels permuted:
when the suspects are exchangeable with the validation records (unused, drawn the same way), every permutation is as
likely as the observed labels, so ``(1 + #{T_b >= T}) / (1 + B)`` is a valid p-value for any features and any
combination (Phipson and Smyth 2010). The combination is Fisher's discriminant with a ridge (closed form, so a
thousand refits cost well under a second).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RIDGE = 0.1  # added to the within-class covariance of standardised features: a few records, many features
PERMUTATIONS = 999  # the p-value's resolution is 1 / (1 + PERMUTATIONS)


@dataclass(frozen=True)
class SetTest:
    """The cross-fitted test of one suspect set against its validation records."""

    auc: float  # the cross-fitted AUC of suspects against validation records (0.5: no shift)
    p_value: float  # the permutation p-value of that AUC, one-sided (suspects score higher)
    scores: np.ndarray  # (n,) each record's cross-fitted combined score (comparable within its half only)
    half: np.ndarray  # (n,) 0 or 1: the half each record was scored in
    permutations: int


def standardised(x: np.ndarray) -> np.ndarray:
    """Columns centred and scaled on the pooled records (label-free, so permutations leave it unchanged); NaN
    replaced by the column's median, constant columns dropped."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be (records, features), got shape {x.shape}")
    med = np.nanmedian(np.where(np.isfinite(x), x, np.nan), axis=0)
    x = np.where(np.isfinite(x), x, np.where(np.isnan(med), 0.0, med))
    sd = x.std(axis=0)
    keep = sd > 1e-12
    return (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]


def direction(x: np.ndarray, is_suspect: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Fisher's discriminant direction (suspect minus validation) with a ridge on the within-class covariance."""
    a, b = x[is_suspect], x[~is_suspect]
    if len(a) == 0 or len(b) == 0:
        return np.zeros(x.shape[1])
    centred = np.concatenate([a - a.mean(axis=0), b - b.mean(axis=0)])
    cov = centred.T @ centred / max(len(x) - 2, 1)
    return np.linalg.solve(cov + ridge * np.eye(x.shape[1]), a.mean(axis=0) - b.mean(axis=0))


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The Mann-Whitney AUC of the positives against the rest, ties counting 1/2 (0.5 when a side is empty)."""
    neg, pos = np.sort(scores[~positive]), scores[positive]
    if len(pos) == 0 or len(neg) == 0:
        return 0.5
    lo, hi = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float(((lo + hi) / 2).sum() / (len(pos) * len(neg)))


def halves(is_suspect: np.ndarray, seed: int) -> np.ndarray:
    """0/1 per record: each class (suspect, validation) split at random into two halves of equal size (+- 1)."""
    rng = np.random.default_rng(seed)
    half = np.zeros(len(is_suspect), dtype=np.int64)
    for cls in (True, False):
        idx = np.flatnonzero(is_suspect == cls)
        half[idx[rng.permutation(len(idx))[len(idx) // 2 :]]] = 1
    return half


def crossfitted(x: np.ndarray, is_suspect: np.ndarray, seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The cross-fitted AUC, each record's combined score, and its half (``x`` standardised)."""
    half = halves(is_suspect, seed)
    scores = np.zeros(len(x))
    num = den = 0.0
    for h in (0, 1):
        test, train = half == h, half != h
        scores[test] = x[test] @ direction(x[train], is_suspect[train])
        pairs = float(is_suspect[test].sum() * (~is_suspect[test]).sum())
        num += pairs * auc(scores[test], is_suspect[test])
        den += pairs
    return (num / den if den else 0.5), scores, half


def set_test(features: np.ndarray, is_suspect: np.ndarray, seed: int = 0, permutations: int = PERMUTATIONS) -> SetTest:
    """The cross-fitted AUC of the suspects and its permutation p-value (module docstring).

    Args:
        features: (n, d) per-record features, higher meaning more member-like is not required.
        is_suspect: (n,) bool, True for the suspect records, False for the validation records.
        seed: the halves' and the permutations' seed.
        permutations: how many label permutations make the null.
    """
    is_suspect = np.asarray(is_suspect, dtype=bool)
    x = standardised(features)
    if is_suspect.all() or not is_suspect.any():
        raise ValueError("the test needs suspect and validation records")
    if x.shape[1] == 0:
        return SetTest(0.5, 1.0, np.zeros(len(x)), halves(is_suspect, seed), 0)
    observed, scores, half = crossfitted(x, is_suspect, seed)
    rng = np.random.default_rng([seed, 1])
    null = np.array([crossfitted(x, rng.permutation(is_suspect), seed)[0] for _ in range(permutations)])
    p = (1 + int((null >= observed - 1e-12).sum())) / (1 + permutations)
    return SetTest(observed, p, scores, half, permutations)
