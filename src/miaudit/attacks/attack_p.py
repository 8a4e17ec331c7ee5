"""Attack-P (Ye et al. 2022): one global threshold on the target model's score.

The population records were never in the target's training set, so the target's
scores on them sample the non-member score distribution. The p-value of a query
is its score's upper-tail rank among those scores (with the +1 correction that
makes it a valid conformal p-value). No reference model is needed.
"""

from __future__ import annotations

from typing import Literal

from ..stats import signals
from ..stats.pvalues import empirical_log_pvalues
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register


class AttackPParams(AttackParams):
    signal: Literal["hinge", "rescaled_logit", "loss", "confidence"] = "hinge"


@register("attack-p", params=AttackPParams, needs=frozenset({"population"}), pvalues=True, max_references=0)
def attack_p(inputs: AttackInputs, params: AttackPParams) -> AttackResult:
    """Attack-P: global threshold on the target score, calibrated on population (non-member) records"""
    q, pop = inputs.queries, inputs.require("population")
    scores = signals.oriented(params.signal, q.target_logits, q.labels)
    null = signals.oriented(params.signal, pop.target_logits, pop.labels)
    return AttackResult(scores=scores, log_pvalues=empirical_log_pvalues(scores, null))
