"""GLS: the last-layer Generalized Leverage Score as a per-record vulnerability score.

GLS paper, appendix C.2 with the trace summary (Remark B.1), by default in the
probability space of section 4.4: score_i = trace(d p_i / d y_i) =
trace(S_i GLS_i), S_i = diag(p_i) - p_i p_i^T, the self-influence of a record on
its own predicted probabilities. This is the paper's measure for ranking
records by exposure, and ours: on location it has Spearman +0.42 with per-record
online-LiRA vulnerability over the target's training records, ahead of the loss
(+0.36) and the gradient norm (+0.34) (benchmarks/gls/gls_validation.md).
It reads only the target model: penultimate features (one backbone pass, eval
mode, no grad) and the head; no reference model is used.

GLS ranks records by exposure; it is NOT a membership test, and its ROC in a
run's results says so by being poor: S_i vanishes on records the target fits
confidently, most of them members, so over members and non-members together
members rank low (membership AUC 0.14 on location). ``space="logit"``
(trace(d f_i / d y_i), eq. C.30) separates members better (AUC 0.64) but is
anti-correlated with vulnerability (Spearman -0.22), so it is only an option.

Whose Hessian (``hessian_data``). The paper builds H from the target's training
set, which an auditor has but our attacker does not (docs/conventions.md, threat model). The
attacker substitutes records it holds, with the target's own probabilities on
them:
* ``queries`` (default): the queried records themselves. Each query's own term
  is in H, as in the paper's in-sample definition, and about half the queries
  are members, so H mixes training and unseen records.
* ``population``: the population records, which the target never saw. H does
  not depend on which other records were queried; by Sherman-Morrison a
  record's in-sample leverage is h/(1 + h) of its out-of-sample one h for the
  quadratic loss, so leaving the query out of H keeps the ranking there.
Either way n in eq. C.31 is the number of those records; it rescales all
scores alike, so rankings are unaffected.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field
from scipy.special import softmax

from ..errors import AttackRequirementError
from ..stats import leverage
from .base import AttackInputs, AttackParams, AttackResult, ModelAccess
from .registry import register


class GLSParams(AttackParams):
    damping: float = Field(default=1e-3, gt=0, description="lambda added to the averaged-loss Hessian (Algorithm 1)")
    structure: leverage.Structure = Field(default="full", description="exact Hessian, or its K-FAC approximation")
    space: leverage.Space = Field(default="probability", description="trace of dp/dy (section 4.4) or df/dy (eq. C.30)")
    hessian_data: Literal["queries", "population"] = "queries"


def _target_features(models: ModelAccess, which: str, x: np.ndarray) -> np.ndarray:
    """The target's penultimate features of one record set, float64 (one backbone pass per run)."""
    return models.features(None, which, x).cpu().numpy()


def _target_probs(models: ModelAccess, features: np.ndarray) -> np.ndarray:
    """Softmax of the head applied to the cached features, in float64, so p matches g exactly."""
    weight = models.target.head.weight.detach().cpu().numpy().astype(np.float64)
    bias = models.target.head.bias.detach().cpu().numpy().astype(np.float64)
    return softmax(features @ weight.T + bias, axis=1)


def _hessian_records(inputs: AttackInputs, params: GLSParams) -> np.ndarray:
    models = inputs.require_models()
    if params.hessian_data == "queries":
        return models.query_features(None).cpu().numpy()
    pop = inputs.population
    if pop is None or pop.x is None:
        raise AttackRequirementError("gls: hessian_data=population needs population records with inputs x")
    return _target_features(models, "population", pop.x)


@register("gls", params=GLSParams, max_references=0, needs=frozenset({"models", "last-layer"}), kind="ranking")
def gls(inputs: AttackInputs, params: GLSParams) -> AttackResult:
    """GLS: per-record exposure (last-layer generalized leverage score) from the target alone; a risk ranking.

    Not a membership test: it needs no reference model and returns no p-values."""
    models = inputs.require_models()
    query_features = models.query_features(None).cpu().numpy()
    train_features = _hessian_records(inputs, params)
    scores = leverage.cross_entropy_gls(
        train_features,
        _target_probs(models, train_features),
        query_features,
        _target_probs(models, query_features),
        damping=params.damping,
        structure=params.structure,
        space=params.space,
    )
    return AttackResult(scores=scores)
