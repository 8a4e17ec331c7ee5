"""QMIA (Bertran et al. 2024): quantile regression of the non-member score on the input.

Inputs: the target's logits and the raw inputs ``x`` of the queries and of the
validation split, which neither the target nor any reference trained on. No
reference model is used. A gradient-boosted quantile regressor (scikit-learn's
HistGradientBoostingRegressor, pinball loss) learns, from the flattened
validation inputs (PCA-reduced when wide) and their labels, the
(1 - alpha)-quantile q(x, y) of the target's score on non-members; the
membership score is s(x, y) - q(x, y), positive on a fraction ~alpha of
non-members (QMIA's per-record threshold at FPR alpha).

alpha defaults to 0.01: QMIA trains the regressor for the low FPR it is judged
at, and 0.01 is the lowest of the reported FPRs (0.001, 0.01, 0.05) the
validation split can support. A (1 - alpha)-quantile is learnt from the ~alpha V
validation scores above it; at alpha = 0.001 a validation split of a few
thousand records leaves only a handful.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..errors import AttackRequirementError
from ..stats import signals
from ._refstats import Signal
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register

MAX_CATEGORIES = 255  # HistGradientBoosting's limit on a categorical feature's cardinality


class QmiaParams(AttackParams):
    alpha: float = Field(default=0.01, gt=0, lt=0.5, description="target FPR: the regressor fits the 1-alpha quantile")
    signal: Signal = "hinge"
    pca_components: int | None = Field(default=64, ge=1, description="reduce wider inputs to this many; None: no PCA")
    use_label: bool = Field(default=True, description="condition the quantile on the class label too")
    max_iter: int = Field(default=100, ge=1, description="boosting iterations")


def _features(x_val: np.ndarray, x_query: np.ndarray, params: QmiaParams, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened inputs, PCA-reduced (fitted on validation only) when wider than pca_components."""
    x_val = np.asarray(x_val, dtype=np.float64).reshape(len(x_val), -1)
    x_query = np.asarray(x_query, dtype=np.float64).reshape(len(x_query), -1)
    k = params.pca_components
    if k is None or x_val.shape[1] <= k:
        return x_val, x_query
    from sklearn.decomposition import PCA  # here: importing scikit-learn takes a second

    pca = PCA(n_components=min(k, len(x_val)), random_state=seed).fit(x_val)
    return pca.transform(x_val), pca.transform(x_query)


@register("qmia", params=QmiaParams, max_references=0, needs=frozenset({"validation", "x"}))
def qmia(inputs: AttackInputs, params: QmiaParams) -> AttackResult:
    """QMIA: quantile regression of the non-member score on the input (validation split)"""
    q, val = inputs.queries, inputs.require("validation", inputs_x=True)
    if val.x is None or q.x is None:
        raise AttackRequirementError("qmia: needs the inputs x of the queries and the validation records")
    f_val, f_query = _features(val.x, q.x, params, inputs.seed)
    categorical = None
    if params.use_label:
        if max(q.labels.max(), val.labels.max()) >= MAX_CATEGORIES:
            raise AttackRequirementError(f"qmia: use_label supports fewer than {MAX_CATEGORIES} classes")
        f_val, f_query = np.column_stack([f_val, val.labels]), np.column_stack([f_query, q.labels])
        categorical = [f_val.shape[1] - 1]
    from sklearn.ensemble import HistGradientBoostingRegressor

    regressor = HistGradientBoostingRegressor(
        loss="quantile",
        quantile=1 - params.alpha,
        max_iter=params.max_iter,
        categorical_features=categorical,
        random_state=inputs.seed,
    )
    regressor.fit(f_val, signals.oriented(params.signal, val.target_logits, val.labels))
    threshold = regressor.predict(f_query)
    scores = signals.oriented(params.signal, q.target_logits, q.labels) - threshold
    return AttackResult(scores=scores, extra={"threshold": threshold})
