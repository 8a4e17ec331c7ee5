"""The blind baseline: how well the audit's members are told from its non-members by their text alone.

A bag-of-words classifier (TF-IDF + logistic regression, scikit-learn) never sees the model. Its
out-of-fold scores (stratified k-fold cross-validation: every query scored by a classifier that did
not train on it) get the same metrics as an attack. When members and non-members are drawn from one
pool at random it sits at chance; when they were collected differently (before and after a date, two
sources), it detects the split, and so may an attack that looks like it detects the model (Das et al.
2024; "SoK: membership inference attacks on LLMs are rushing nowhere", SaTML 2025). So it is
reported beside every LM result, with a warning when it is near or above the attacks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline, make_pipeline

from ..results import BlindBaseline
from ..stats import metrics

FOLDS = 5
NEAR = 0.05  # AUC within this of the best attack's counts as "near"


def out_of_fold_scores(texts: Sequence[str], is_member: np.ndarray, seed: int = 0) -> np.ndarray:
    """(n,) each text's cross-validated probability of being a member, from a classifier that did not see it."""
    y = np.asarray(is_member, dtype=int)
    folds = min(FOLDS, int(np.bincount(y, minlength=2).min()))
    if folds < 2:
        raise ValueError("blind baseline: needs at least two members and two non-members")
    splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return cross_val_predict(make_classifier(), list(texts), y, cv=splits, method="predict_proba")[:, 1]


def make_classifier() -> Pipeline:
    """TF-IDF of words (sublinear counts, words in at least two texts) into an L2-regularised logistic regression."""
    return make_pipeline(
        TfidfVectorizer(sublinear_tf=True, min_df=2, max_features=20000), LogisticRegression(C=1.0, max_iter=1000)
    )


def blind_baseline(
    texts: Sequence[str], is_member: np.ndarray, levels: tuple[float, ...], seed: int = 0
) -> BlindBaseline:
    """results.json's ``blind_baseline``: the text classifier's metrics (the attacks' fields: auc, auc_ci,
    tpr_at_fpr, ...) and what it is."""
    scores = out_of_fold_scores(texts, is_member, seed)
    found = metrics.evaluate(scores, np.asarray(is_member, dtype=bool), {}, levels).section()
    return BlindBaseline.model_validate(
        {
            "method": f"TF-IDF + logistic regression, {FOLDS}-fold cross-validated, text only",
            **found.model_dump(exclude_unset=True),
        }  # fmt: skip
    )


def warning(baseline: BlindBaseline, attack_aucs: Sequence[float]) -> str | None:
    """A warning when the blind baseline is above chance (its AUC interval excludes 0.5) and within NEAR of
    the best attack's AUC or above it: the split, not the model, may be what the attacks detect."""
    low = (baseline.auc_ci or [0.5])[0]
    best = max(attack_aucs, default=0.5)
    auc = baseline.auc if baseline.auc is not None else 0.5
    if low > 0.5 and auc >= best - NEAR:
        return (
            f"blind baseline: a text-only classifier tells members from non-members with AUC "
            f"{auc:.3f} (best attack {best:.3f}): members and non-members differ in distribution, "
            "so the attacks may detect the split rather than the model"
        )
    return None


def for_audit(
    texts: Sequence[str],
    query_idx: np.ndarray,
    is_member: np.ndarray,
    attack_aucs: Sequence[float],
    levels: tuple[float, ...],
    seed: int = 0,
) -> BlindBaseline:
    """The blind baseline of an audit's queries (``texts`` every record's, ``query_idx`` the queries'), with
    its ``warning`` when it is near or above the attacks."""
    found = blind_baseline([texts[i] for i in query_idx], is_member, levels, seed)
    note = warning(found, attack_aucs)
    return BlindBaseline.model_validate({**found.model_dump(exclude_unset=True), **({"warning": note} if note else {})})
