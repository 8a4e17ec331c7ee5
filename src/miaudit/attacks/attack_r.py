"""Attack-R (Ye et al. 2022): a per-record threshold from the references' OUT scores.

Inputs: the target's and the K references' logits on the queries (online,
``queries.ref_in`` to leave out the references that trained on a query).
Attack-R calls x a member at level alpha when its target score exceeds the
alpha-quantile of the OUT references' scores on x. Its score is the level at
which the target score sits in that per-record distribution: the inverse of
the linearly interpolated quantile function.

Anchors. Inverting the quantile of the K OUT scores alone saturates: every
record at or above its largest reference score gets level 1, and with few
references a large share of members and non-members tie there, exactly in the
low-FPR tail (TPR@1% = 0). Ye et al.'s research code (the Attack-R experiments'
``linear_itp_threshold_func(distribution, alpha, signal_min=0, signal_max=1000)``)
appends two fixed anchors, the loss range limits 0 and 1000, to each record's
reference losses before taking ``np.quantile(..., interpolation='linear')``; the
released ml_privacy_meter package's function of that name adds no anchors (a plain
linear quantile of the reference losses). We add them, on the oriented
signal (higher = member): the anchors are the signal's range limits, ``ANCHORS``
(loss and confidence: their true bounds, the loss bound 1000 as in the lineage;
hinge and rescaled logit are unbounded, so +-1000, beyond any logit gap a
float32 network produces in practice). The quantile function then runs through
n + 2 points, level (j + t) / (n + 1), and a target score above the largest
reference score still gets a distinct level that grows with its margin. Beyond
an anchor (never for loss and confidence) the level keeps moving by 1 / (n + 1)
per anchor span, so it is strictly increasing in the target score for every
record: scores tie only where inputs are equal.

The log p-value stays the conformal one, (1 + #{OUT >= s}) / (1 + n_out) of
``pvalues.empirical_log_pvalues``, per record: valid without the anchors (they
are not reference draws), and coarse by nature (K + 1 values); rank by the
score. Needs one OUT reference per query.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator

from ._refstats import Signal, membership_masks, observations, require_each
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register

# The oriented signal's range limits (low, high), the fixed anchors of the quantile interpolation.
ANCHORS: dict[str, tuple[float, float]] = {
    "hinge": (-1000.0, 1000.0),
    "rescaled_logit": (-1000.0, 1000.0),
    "loss": (-1000.0, 0.0),  # oriented loss = log p_y <= 0; ml_privacy_meter's loss range [0, 1000]
    "confidence": (0.0, 1.0),
}


class AttackRParams(AttackParams):
    signal: Signal = "hinge"
    anchors: tuple[float, float] | None = Field(
        default=None, description="fixed (low, high) anchors of the interpolation; None: the signal's range"
    )

    @field_validator("anchors")
    @classmethod
    def _ordered(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not v[0] < v[1]:
            raise ValueError(f"anchors: low < high required, got {list(v)}")
        return v


def quantile_level(z0: np.ndarray, z: np.ndarray, mask: np.ndarray, anchors: tuple[float, float]) -> np.ndarray:
    """Per record, the level q with np.quantile(z[mask] + anchors, q) == z0, extended linearly beyond the anchors.

    Between order statistics x_j <= z0 < x_{j+1} of the m = n + 2 values (n
    references and the two anchors), the linear quantile at level (j + t) / (m - 1)
    is x_j + t (x_{j+1} - x_j); solve for t. Outside [x_0, x_{m-1}] the level moves
    by 1 / (m - 1) per anchor span. NaN where z0 is NaN.
    """
    low, high = anchors
    rows = np.where(mask, z, np.inf)  # masked-out values sort last
    ordered = np.sort(np.concatenate([np.full((2, z.shape[1]), [[low], [high]]), rows]), axis=0)
    m = mask.sum(axis=0) + 2
    top = np.take_along_axis(ordered, (m - 1)[None], axis=0)[0]
    n_le = (ordered <= z0).sum(axis=0)
    j = np.clip(n_le - 1, 0, None)
    lower = np.take_along_axis(ordered, j[None], axis=0)[0]
    upper = np.take_along_axis(ordered, np.minimum(n_le, ordered.shape[0] - 1)[None], axis=0)[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        inside = (j + (z0 - lower) / (upper - lower)) / (m - 1)
    span = (high - low) * (m - 1)
    level = np.where(z0 < ordered[0], (z0 - ordered[0]) / span, inside)
    level = np.where(z0 >= top, 1 + (z0 - top) / span, level)
    return np.where(np.isnan(z0), np.nan, level)


def per_record_log_pvalues(z0: np.ndarray, z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """empirical_log_pvalues(z0[i], z[mask[:, i], i]) for every record i at once."""
    n = mask.sum(axis=0)
    n_ge = (mask & (z >= z0)).sum(axis=0)
    return np.log1p(n_ge) - np.log1p(n)


@register("attack-r", params=AttackRParams, min_references=1, pvalues=True)
def attack_r(inputs: AttackInputs, params: AttackRParams) -> AttackResult:
    """Attack-R: per-record quantile of the OUT references' scores"""
    z0, z = observations(inputs.queries, params.signal)
    _, out = membership_masks(inputs, "attack-r")
    require_each(out, "attack-r", "OUT")
    anchors = params.anchors or ANCHORS[params.signal]
    return AttackResult(scores=quantile_level(z0, z, out, anchors), log_pvalues=per_record_log_pvalues(z0, z, out))
