"""The blind guard: can the suspect records be told from the validation records without the model?

A classifier that never queries the model (logistic regression on the records' inputs and labels: tabular
features, pixels, the label one-hot; for texts, the bag of words of the LM audits' blind baseline, TF-IDF, fitted
on the training half only) learns suspect-vs-validation on one half of the records and scores the other
half, and the other way round (stratified halves). Each half's AUC has DeLong's standard error, valid because the
half's classifier never saw it; the guard's AUC is the mean of the two and its interval is as wide as one half's
(the mean of their standard errors: valid whatever the two halves' correlation). Pooling the out-of-fold scores of
five folds instead gave intervals too narrow by a third (the null's false alarms 10-15% on digits and Location,
benchmarks/dataset_inference). When the interval lies above 0.5 the sets differ without the model, so a difference
in the model's behaviour on them is no evidence of training: the verdict is "no claim" (Das, Zhang and Tramèr 2025).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
MAX_INPUTS = 512  # inputs wider than this are reduced to their first 64 principal components (pixels)


@dataclass(frozen=True)
class BlindGuard:
    auc: float
    ci: tuple[float, float]
    shifted: bool  # the interval lies above 0.5: the sets differ without the model
    classifier: str


def record_matrix(x: np.ndarray, y: np.ndarray, n_classes: int, seed: int = 0) -> np.ndarray:
    """The records alone as a matrix: the inputs flattened (wider than ``MAX_INPUTS``: their first 64 principal
    components over the pooled records, which no label enters) and the label one-hot."""
    flat = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    if flat.shape[1] > MAX_INPUTS:
        from sklearn.decomposition import PCA

        flat = PCA(n_components=min(64, len(flat) - 1), random_state=seed).fit_transform(flat)
    onehot = np.eye(max(n_classes, int(np.max(y, initial=0)) + 1))[np.asarray(y, dtype=np.int64)]
    return np.concatenate([flat, onehot], axis=1)


def delong(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """The AUC of the positives against the rest (ties 1/2) and DeLong's standard error."""
    pos, neg = scores[positive], scores[~positive]
    m, n = len(pos), len(neg)
    # structural components: V10_i = P(neg < pos_i) + 1/2 P(=), V01_j = P(pos > neg_j) + 1/2 P(=)
    sn, sp = np.sort(neg), np.sort(pos)
    v10 = (np.searchsorted(sn, pos, "left") + np.searchsorted(sn, pos, "right")) / (2 * n)
    v01 = (2 * m - np.searchsorted(sp, neg, "left") - np.searchsorted(sp, neg, "right")) / (2 * m)
    var = (v10.var(ddof=1) if m > 1 else 0.0) / m + (v01.var(ddof=1) if n > 1 else 0.0) / n
    return float(v10.mean()), float(np.sqrt(max(var, 0.0)))


def delong_interval(
    scores: np.ndarray, positive: np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """The AUC and DeLong's normal interval, clipped to [0, 1]."""
    a, se = delong(scores, positive)
    half = float(stats.norm.ppf(0.5 + confidence / 2)) * se
    return a, max(0.0, a - half), min(1.0, a + half)


def guard(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    is_suspect: np.ndarray,
    seed: int = 0,
    texts: Sequence[str] | None = None,
) -> BlindGuard:
    """The cross-fitted blind classifier's AUC for suspect-vs-validation, with its interval (module docstring);
    ``texts``: the records are texts (a language model's), read as a bag of words instead of ``x`` and ``y``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import StandardScaler

    from ..lm.blind import make_classifier

    is_suspect = np.asarray(is_suspect, dtype=bool)
    if min(int(is_suspect.sum()), int((~is_suspect).sum())) < 4:
        return BlindGuard(0.5, (0.0, 1.0), False, "none: fewer than 4 records on a side")

    def tabular() -> Pipeline:
        return make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000))

    records: list[str] | np.ndarray
    if texts is not None:
        records, classifier = list(texts), make_classifier
        name = "TF-IDF + logistic regression on the texts alone, 2-fold cross-fitted"
    else:
        records, classifier = record_matrix(x, y, n_classes, seed), tabular
        name = "logistic regression (L2, C=0.1) on the inputs and the label one-hot, 2-fold cross-fitted"

    def take(idx: np.ndarray) -> list[str] | np.ndarray:
        return [records[i] for i in idx] if isinstance(records, list) else records[idx]

    aucs, ses = [], []
    for train, test in StratifiedKFold(2, shuffle=True, random_state=seed).split(is_suspect, is_suspect):
        model = classifier()
        model.fit(take(train), is_suspect[train])
        a, se = delong(model.decision_function(take(test)), is_suspect[test])
        aucs.append(a)
        ses.append(se)
    auc, half = float(np.mean(aucs)), float(stats.norm.ppf(0.5 + CONFIDENCE / 2)) * float(np.mean(ses))
    lo, hi = max(0.0, auc - half), min(1.0, auc + half)
    return BlindGuard(auc, (lo, hi), lo > 0.5, name)
