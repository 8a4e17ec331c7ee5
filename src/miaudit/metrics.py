"""ROC metrics as docs/conventions.md defines them.

TPR at FPR a is the largest TPR on the ROC curve with FPR <= a (inclusive).
With n non-members the smallest meaningful a is 1/n; below 10/n the figure is
flagged unreliable, never silently reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import rankdata
from sklearn.metrics import roc_auc_score, roc_curve

FPR_LEVELS = (0.001, 0.01, 0.05)
ALPHAS = (0.01, 0.05)


def roc(scores: np.ndarray, is_member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr) over every threshold, ties handled as one step (sklearn)."""
    fpr, tpr, _ = roc_curve(is_member.astype(int), scores, drop_intermediate=False)
    return fpr, tpr


def tpr_at_fpr(fpr: np.ndarray, tpr: np.ndarray, level: float) -> float:
    ok = fpr <= level + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def unreliable_levels(n_nonmembers: int, levels=FPR_LEVELS) -> list[float]:
    """FPR levels below 10/n: too few non-members to estimate TPR there."""
    return [a for a in levels if a < 10.0 / max(n_nonmembers, 1)]


def fpr_at_alpha(log_pvalues: np.ndarray, is_member: np.ndarray, alphas=ALPHAS) -> dict[str, float]:
    """Empirical FPR of the test 'reject H0 when p < alpha', measured on the non-members."""
    non = log_pvalues[~is_member.astype(bool)]
    return {str(a): float((non < np.log(a)).mean()) if non.size else float("nan") for a in alphas}


@dataclass
class AttackMetrics:
    auc: float
    tpr_at_fpr: dict[str, float]
    unreliable: list[str]
    fpr_at_alpha: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"auc": self.auc, "tpr_at_fpr": self.tpr_at_fpr, "unreliable_fpr_levels": self.unreliable}
        if self.fpr_at_alpha:
            out["fpr_at_alpha"] = self.fpr_at_alpha
        return out


def evaluate(
    scores: np.ndarray,
    is_member: np.ndarray,
    pvalue_sets: dict[str, np.ndarray] | None = None,
    levels: tuple[float, ...] = FPR_LEVELS,
) -> AttackMetrics:
    """AUC, TPR at the FPR levels (the standard ones, plus any the user asked for), and FPR at alpha for every
    named set of log p-values."""
    is_member = np.asarray(is_member, dtype=bool)
    if is_member.all() or not is_member.any():
        raise ValueError("metrics: need both members and non-members to compute a ROC")
    # The ROC depends on the order only; ranks keep +-inf scores (p-values of 0 or 1) usable, NaN ranks lowest.
    raw = np.asarray(scores, dtype=np.float64)
    scores = rankdata(np.where(np.isnan(raw), -np.inf, raw))
    fpr, tpr = roc(scores, is_member)
    return AttackMetrics(
        auc=float(roc_auc_score(is_member.astype(int), scores)),
        tpr_at_fpr={str(a): tpr_at_fpr(fpr, tpr, a) for a in levels},
        unreliable=[str(a) for a in unreliable_levels(int((~is_member).sum()), levels)],
        fpr_at_alpha={name: fpr_at_alpha(lp, is_member) for name, lp in (pvalue_sets or {}).items()},
    )
