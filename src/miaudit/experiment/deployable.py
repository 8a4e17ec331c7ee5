"""Deployable thresholds: an operating point an attacker could set without knowing the target's membership.

The table's TPR at FPR a uses a threshold picked on the target's own non-members, which an attacker does not
know. An attacker does know its reference models. Offline, no reference trained on the audited records, so
with reference k in the target's place (scored by the same attack against the other K - 1 references) every
audited record is a known non-member of that pseudo-target. The threshold is the score that at most a share a
of the K pseudo-targets' pooled scores reach; applied to the target, it realizes an FPR and a TPR (exact
intervals), which say whether a threshold set on references alone holds its FPR on the target.

Between ``MIN_PSEUDO_TARGETS`` and ``MAX_PSEUDO_TARGETS`` references play the target (the first ones:
references are exchangeable, each trained on its own seeded half of the population): each costs one run of
the attack, so all K of them would make the audit's cost grow as K squared. Four average over the models'
idiosyncrasies; more join, up to eight, until the pool holds ``POOLED_NULL_SCORES`` null scores (100 above
the threshold at 0.1% FPR): 8 pseudo-targets for a few hundred records, 4 for 50,000.

Only for attacks on logits (an attack that needs the models would refit posteriors per pseudo-target) with at
least one reference left, and offline (online, each record is a member of half the references).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ..attacks import AttackInputs, RecordSet, registry
from ..attacks.base import AttackParams
from ..errors import AttackRequirementError
from ..stats.logitstack import LogitStack
from ..stats.metrics import clopper_pearson, nan_lowest

MIN_PSEUDO_TARGETS, MAX_PSEUDO_TARGETS = 4, 8
POOLED_NULL_SCORES = 100_000


def pseudo_targets(references: int, n_queries: int) -> int:
    """How many references play the target (module docstring)."""
    wanted = max(MIN_PSEUDO_TARGETS, -(-POOLED_NULL_SCORES // max(n_queries, 1)))
    return min(references, MAX_PSEUDO_TARGETS, wanted)


def _without(block: LogitStack | np.ndarray, k: int) -> LogitStack | np.ndarray:
    """The (K, n, C) references' logits without model k."""
    if isinstance(block, LogitStack):
        kept = [m for j, m in enumerate(block.per_model) if j != k]
        return LogitStack(kept, block.rows, block.n_classes, block.source)
    return np.delete(np.asarray(block), k, axis=0)


def records_where(records: RecordSet, keep: np.ndarray) -> RecordSet:
    """The records ``keep`` (a boolean mask) of a record set."""
    block = records.ref_logits
    ref = (
        LogitStack(block.per_model, block.rows[keep], block.n_classes, block.source)
        if isinstance(block, LogitStack)
        else np.asarray(block)[:, keep]
    )
    return replace(
        records,
        labels=records.labels[keep],
        target_logits=records.target_logits[keep],
        ref_logits=ref,
        ref_in=None if records.ref_in is None else records.ref_in[:, keep],
        x=None if records.x is None else records.x[keep],
        target_views=None if records.target_views is None else records.target_views[:, keep],
        ref_views=None if records.ref_views is None else records.ref_views[:, :, keep],
    )


def population_out_of(records: RecordSet, k: int) -> RecordSet:
    """The population records reference k did not train on: the attacker's non-member population for it (the
    target's population is none of its members either)."""
    return records if records.ref_in is None else records_where(records, ~records.ref_in[k])


def as_pseudo_target(records: RecordSet, k: int) -> RecordSet:
    """The records as seen with reference k in the target's place and the other references as references."""
    views = records.ref_views
    return replace(
        records,
        target_logits=np.asarray(records.ref_logits[k], dtype=np.float64),
        ref_logits=_without(records.ref_logits, k),
        ref_in=None if records.ref_in is None else np.delete(records.ref_in, k, axis=0),
        target_views=None if views is None else views[:, k],
        ref_views=None if views is None else np.delete(views, k, axis=1),
    )


def applies(info: registry.AttackInfo, references: int, mode: str) -> bool:
    if mode != "offline" or references < 2 or info.needs_models:
        return False
    try:
        info.check(references - 1, mode, {"population", "validation", "x"})
    except AttackRequirementError:
        return False
    return True


def pooled_threshold(null_scores: np.ndarray, level: float) -> float | None:
    """The lowest threshold t with share(null >= t) <= level; None when even the top score exceeds the level."""
    s = np.sort(nan_lowest(null_scores))[::-1]
    allowed = int(np.floor(level * s.size + 1e-9))
    if allowed == 0:
        return None
    distinct = np.flatnonzero(np.r_[s[1:] != s[:-1], True])  # last index of each tie group
    ok = distinct[distinct < allowed]
    return None if ok.size == 0 else float(s[ok[-1]])


def thresholds(
    info: registry.AttackInfo, params: AttackParams, references: int, inputs: AttackInputs, is_member: np.ndarray,
    target_scores: np.ndarray, levels: tuple[float, ...],
) -> dict[str, Any] | None:  # fmt: skip
    """Per FPR level: the threshold set on the references as pseudo-targets and what it realizes on the target."""
    if not applies(info, references, inputs.mode):
        return None
    base = inputs.first(references)
    pooled = []
    for k in range(pseudo_targets(references, len(base.queries.labels))):
        pseudo = replace(
            base,
            queries=as_pseudo_target(base.queries, k),
            population=None if base.population is None else as_pseudo_target(population_out_of(base.population, k), k),
            validation=None if base.validation is None else as_pseudo_target(base.validation, k),
            models=None,
        )
        pooled.append(registry.execute(info, params, references - 1, pseudo).scores)
    null = np.concatenate(pooled)
    member, s = np.asarray(is_member, dtype=bool), nan_lowest(target_scores)
    out: dict[str, Any] = {"pseudo_targets": len(pooled)}
    for level in levels:
        t = pooled_threshold(null, level)
        tp, fp = (0, 0) if t is None else (int((s[member] >= t).sum()), int((s[~member] >= t).sum()))
        n1, n0 = int(member.sum()), int((~member).sum())
        out[str(level)] = {
            "threshold": t,
            "realized_fpr": fp / n0,
            "realized_fpr_ci": list(clopper_pearson(fp, n0)),
            "tpr": tp / n1,
            "tpr_ci": list(clopper_pearson(tp, n1)),
        }
    return out
