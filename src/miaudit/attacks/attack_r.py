"""Attack-R (Ye et al. 2022): a per-record threshold from the references' OUT scores.

Inputs: the target's and the K references' logits on the queries (online,
``queries.ref_in`` to leave out the references that trained on a query).
Attack-R calls x a member at level alpha when its target score exceeds the
alpha-quantile (linear interpolation, numpy's default) of the OUT references'
scores on x. Its score is therefore the level at which the target score sits
in that per-record distribution: the inverse of the linearly interpolated
quantile function, in [0, 1]. The log p-value is the empirical one-sided
(1 + #{OUT >= s}) / (1 + n_out) of ``pvalues.empirical_log_pvalues``, per
record. Needs one OUT reference per query.
"""

from __future__ import annotations

import numpy as np

from ._refstats import Signal, membership_masks, observations, require_each
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register


class AttackRParams(AttackParams):
    signal: Signal = "hinge"


def quantile_level(z0: np.ndarray, z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per record, the level q with np.quantile(z[mask], q) == z0 (0 below, 1 at or above the range).

    Between order statistics x_j <= z0 < x_{j+1} of n values, the linear
    quantile at level (j + t) / (n - 1) is x_j + t (x_{j+1} - x_j); solve for t.
    """
    ordered = np.sort(np.where(mask, z, np.inf), axis=0)  # masked-out values sort last
    n = mask.sum(axis=0)
    n_le = (ordered <= z0).sum(axis=0)
    inside = (n_le > 0) & (n_le < n)
    j = np.clip(n_le - 1, 0, None)
    lower = np.take_along_axis(ordered, j[None], axis=0)[0]
    upper = np.take_along_axis(ordered, np.minimum(n_le, ordered.shape[0] - 1)[None], axis=0)[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        level = (j + (z0 - lower) / (upper - lower)) / (n - 1)
    return np.where(inside, level, (n_le == n).astype(np.float64))


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
    return AttackResult(scores=quantile_level(z0, z, out), log_pvalues=per_record_log_pvalues(z0, z, out))
