"""Conformal calibration of every p-value attack (BMIA paper, appendix F.1).

An attack's raw p-values rest on its model of the null (a Gaussian, a t distribution,
a posterior) and can be far from valid: BMIA's raw t-test flags 13-30% of true
non-members at p < 0.05 with one reference. Calibration replaces that model with
data: records known not to be members of the target (the validation records, which
no model trains on) are scored by the same attack, and each query's p-value is the
rank of its score among theirs, (1 + #{null >= s}) / (1 + n). When the queries'
non-members and the calibration records are exchangeable, this p-value is valid for
any n, whatever the attack's own model.

Exchangeability needs the *same* scoring function for both, so the attack runs once
on the queries and the calibration records together: whatever it fits from the batch
(LiRA's global variance, BaVarIA's priors) it fits on both, blind to which is which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import numpy as np

from ..stats.logitstack import concat_records
from ..stats.pvalues import empirical_log_pvalues
from .base import AttackInputs, AttackResult, RecordSet


def joined_records(first: RecordSet, second: RecordSet) -> RecordSet:
    def both(a: np.ndarray | None, b: np.ndarray | None, axis: int = 0) -> np.ndarray | None:
        return None if a is None or b is None else np.concatenate([a, b], axis=axis)

    return RecordSet(
        labels=np.concatenate([first.labels, second.labels]),
        target_logits=np.concatenate([first.target_logits, second.target_logits]),
        ref_logits=concat_records(first.ref_logits, second.ref_logits),
        ref_in=both(first.ref_in, second.ref_in, axis=1),
        x=both(first.x, second.x),
        target_views=both(first.target_views, second.target_views, axis=1),
        ref_views=both(first.ref_views, second.ref_views, axis=2),
    )


def with_calibration_queries(
    inputs: AttackInputs, part: Literal["validation", "population"] = "validation"
) -> AttackInputs:
    """The inputs with the calibration records appended to the queries (the attack scores both alike).

    Offline they are the validation records. Online they are the population records: like the queries
    they are IN for half the reference models (an online attack needs IN observations of every record)
    and none trained the target."""
    calibration = inputs.require(part)
    joined = joined_records(inputs.queries, calibration)
    models = inputs.models
    if models is not None and calibration.x is not None:
        query_x = np.concatenate([models.query_x, calibration.x])
        models = replace(models, query_x=query_x, query_set=f"queries+{part}")
    return replace(inputs, queries=joined, models=models)


def split_calibrated(result: AttackResult, n_queries: int) -> AttackResult:
    """The queries' part of a joined result, with conformal log p-values from the calibration part's scores.

    A NaN score (an attack that could not score a record) is least significant: p = 1."""
    scores, null = result.scores[:n_queries], result.scores[n_queries:]
    calibrated = empirical_log_pvalues(scores, null[~np.isnan(null)])
    calibrated[np.isnan(scores)] = 0.0
    per_query = {k: v[:n_queries] for k, v in result.extra.items() if len(v) == len(result.scores)}
    return AttackResult(
        scores=scores,
        log_pvalues=None if result.log_pvalues is None else result.log_pvalues[:n_queries],
        log_pvalues_calibrated=calibrated,
        extra={**result.extra, **per_query},
    )
