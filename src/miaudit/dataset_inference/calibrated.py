"""The set-level test: one fixed, one-sided score per record, calibrated against the reference models, and a
permutation p-value that holds exactly when the suspects are exchangeable with the validation records.

Why calibrated. A record the model finds easy looks member-like to any model, trained on it or not: suspects chosen
among the easy (or hard) records differ from the validation records in every model's eyes. The references never saw
the suspects nor the validation records, so what they see is the records' doing, not training's. Each reference-free
signal of the target (log p(label), the margin, minus the entropy; an LM's likelihoods) is therefore read relative
to the references' mean signal on the same record (their difference: the references are trained as the target
was, which the answer assumes). The reference
attacks (LiRA, RMIA, BASE1, offline) already compare the target with the references record by record and are kept
as they are. Without references nothing calibrates: the raw signals are read, and the answer says so.

Why one-sided and fixed. Every feature is oriented in advance so that higher means more member-like; the score is
the mean of the features standardised on the pooled records. Nothing in it is learned from the suspect/validation
labels, so a selection cannot teach it a direction: a suspect set the target fits worse scores lower and can never
be "used". The statistic is the AUC of the suspects against the validation records on that score (``direction``:
AUC - 1/2, > 0 when the suspects look more like members). The score does not depend on the labels, so under
exchangeability every relabelling is as likely as the observed one and ``(1 + #{T_b >= T}) / (1 + B)`` is an exact
p-value (Phipson and Smyth 2010).

The reference guard. If the references themselves tell the suspects from the validation records (their mean signal's
AUC, DeLong 95% interval excluding 1/2 on either side), the two sets differ in a way any model of this kind sees
without training on them (difficulty, class, style): the calibration may leave part of it, so no claim is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

PERMUTATIONS = 999  # the p-value's resolution is 1 / (1 + PERMUTATIONS)
CONFIDENCE = 0.95  # the reference guard's two-sided interval


@dataclass(frozen=True)
class SetTest:
    """The one-sided test of one suspect set against its validation records."""

    auc: float  # the AUC of the suspects against the validation records on the fixed score (0.5: no difference)
    p_value: float  # its permutation p-value, one-sided (the suspects score higher)
    scores: np.ndarray  # (n,) each record's score (higher: more member-like)
    permutations: int

    @property
    def direction(self) -> float:
        """AUC - 1/2: > 0 when the suspects look more like members than the validation records."""
        return self.auc - 0.5


@dataclass(frozen=True)
class ReferenceGuard:
    """What the references, which saw neither set, say about the two sets."""

    auc: float  # the references' mean signal: suspects against validation records
    ci: tuple[float, float]
    shifted: bool  # the interval excludes 1/2: the sets differ in the references' eyes


def standardised(x: np.ndarray) -> np.ndarray:
    """Columns centred and scaled on the pooled records (label-free, so permutations leave it unchanged); NaN and
    infinities replaced by the column's median, constant columns dropped."""
    if np.ndim(x) != 2:
        raise ValueError(f"features must be (records, features), got shape {np.shape(x)}")
    x = filled(x)
    sd = x.std(axis=0)
    keep = sd > 1e-12
    return (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]


def calibrated(target: np.ndarray, references: np.ndarray) -> np.ndarray:
    """(n, d) the target's signals ``target`` less the references' mean signals on the same records
    (``references``: (K, n, d)).

    The plain difference, not a fitted line: the references are trained as the target was, so on a record none of
    them trained on, the target's signal and theirs have the same expectation and the difference none, whatever the
    record's difficulty. A fitted slope would need correcting for the noise of the references' mean (errors in
    variables) and follows the curvature of the pooled records' relation, which a selection of the easiest or the
    hardest records reads as a shift (on digits, the hardest unused records came out member-like)."""
    return filled(target) - filled(reference_mean(references))


def filled(x: np.ndarray) -> np.ndarray:
    """Non-finite values replaced by the column's median over the pooled records (0 for a column with none)."""
    x = np.asarray(x, dtype=np.float64)
    finite = np.where(np.isfinite(x), x, np.nan)
    med = np.array([np.median(c[np.isfinite(c)]) if np.isfinite(c).any() else 0.0 for c in finite.T])
    return np.where(np.isfinite(x), x, med)


def reference_mean(references: np.ndarray) -> np.ndarray:
    """(n, d) the references' mean signals ((K, n, d) in), over the references with a finite value."""
    r = np.where(np.isfinite(references), references, 0.0)
    n = np.isfinite(references).sum(axis=0)
    return np.where(n > 0, r.sum(axis=0) / np.maximum(n, 1), np.nan)


def score(features: np.ndarray) -> np.ndarray:
    """(n,) the fixed score: the mean of the pooled-standardised features (each oriented: higher, more member-like);
    zeros when no feature varies."""
    z = standardised(features)
    return z.mean(axis=1) if z.shape[1] else np.zeros(len(z))


def set_test(scores: np.ndarray, is_suspect: np.ndarray, seed: int = 0, permutations: int = PERMUTATIONS) -> SetTest:
    """The suspects' AUC on ``scores`` (fixed before the labels are read) and its one-sided permutation p-value."""
    is_suspect = np.asarray(is_suspect, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    if is_suspect.all() or not is_suspect.any():
        raise ValueError("the test needs suspect and validation records")
    n1, n0 = int(is_suspect.sum()), int((~is_suspect).sum())
    ranks = stats.rankdata(scores)  # midranks: the AUC is (rank sum of the suspects - n1 (n1 + 1) / 2) / (n1 n0)
    observed = (ranks[is_suspect].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
    rng = np.random.default_rng([seed, 1])
    null = np.empty(permutations)
    for b in range(permutations):
        null[b] = (ranks[rng.permutation(is_suspect)].sum() - n1 * (n1 + 1) / 2) / (n1 * n0)
    p = (1 + int((null >= observed - 1e-12).sum())) / (1 + permutations)
    return SetTest(float(observed), p, scores, permutations)


def reference_guard(references: np.ndarray, is_suspect: np.ndarray, confidence: float = CONFIDENCE) -> ReferenceGuard:
    """The references' view of the two sets (module docstring): the AUC of the suspects against the validation
    records on the references' mean signals (``references``: (K, n, d), oriented as the target's), combined as the
    test combines the target's, and DeLong's interval; shifted when it excludes 1/2."""
    from .blind import delong_interval

    a, lo, hi = delong_interval(score(reference_mean(references)), np.asarray(is_suspect, dtype=bool), confidence)
    return ReferenceGuard(a, (lo, hi), lo > 0.5 or hi < 0.5)
