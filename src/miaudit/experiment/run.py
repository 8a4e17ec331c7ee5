"""One planned attack run on an Experiment, however it was built, and evaluated; and the values a run gives
(``AttackRun``, ``RunResult``, ``attacks: auto``'s ``PseudoTargetEstimates``) that the report reads.

Below the four audits: the membership audit's run over every planned attack (``membership.run``) and the one-run
DP audit (``dp.one_run``) run their attacks through ``run_attack``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..attack_plan import PlannedAttack
from ..attacks import AttackInputs, AttackResult, calibration
from ..config.settings import AuditSettings
from ..results import BlindBaseline, CanaryExposure, DPAudit
from ..stats import metrics
from . import cached, deployable
from .base import Experiment


@dataclass(frozen=True)
class CandidateEstimate:
    """One candidate's pseudo-target TPR per FPR level, and whether it runs."""

    name: str
    tpr: dict[str, float]  # FPR level -> pooled TPR over the pseudo-targets' members
    tpr_ci: dict[str, tuple[float, float]]  # Clopper-Pearson 95% interval of the pooled TPR
    per_pseudo_target: list[float]  # TPR at the choice's level, per pseudo-target (the models' spread)
    run: bool
    why: str


@dataclass(frozen=True)
class PseudoTargetEstimates:
    """What ``attacks: auto`` measured on the references (each in turn the target) and what it chose; results.json
    records it as ``results.AttackChoice``."""

    level: float
    pseudo_targets: int
    references_per_run: int
    members: int  # pooled over the pseudo-targets
    nonmembers: int  # per pseudo-target
    candidates: tuple[CandidateEstimate, ...]

    @property
    def chosen(self) -> list[str]:
        return [c.name for c in self.candidates if c.run]

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": "pseudo-targets",
            "level": self.level,
            "pseudo_targets": self.pseudo_targets,
            "references_per_pseudo_target": self.references_per_run,
            "pseudo_members": self.members,
            "pseudo_nonmembers": self.nonmembers,
            "chosen": self.chosen,
            "candidates": [
                {
                    "name": c.name,
                    "pseudo_target_tpr": c.tpr,
                    "pseudo_target_tpr_ci": {lv: list(ci) for lv, ci in c.tpr_ci.items()},
                    "per_pseudo_target": c.per_pseudo_target,
                    "decision": "run" if c.run else "left out",
                    "why": c.why,
                }
                for c in self.candidates
            ],
        }


@dataclass
class AttackRun:
    attack: PlannedAttack
    result: AttackResult
    metrics: metrics.AttackMetrics | None  # None when the queries' membership is unknown
    seconds: dict[str, float]
    deployable: dict | None = None  # thresholds set on the references alone (experiment.deployable)
    calibration_scores: np.ndarray | None = None  # the calibration records' scores (known non-members of the target)


@dataclass
class RunResult:
    experiment: Experiment
    attacks: list[AttackRun]
    dp_audit: DPAudit | None = None  # the epsilon lower bound (miaudit.dp.audit; audits.dp_audit), when asked
    blind_baseline: BlindBaseline | None = None  # LM audits: the text-only classifier beside the attacks (lm.blind)
    canary_exposure: CanaryExposure | None = None  # LM audits with canaries: their exposure (miaudit.lm.canaries)
    attack_choice: PseudoTargetEstimates | None = None  # attacks: auto's pseudo-target estimates (membership.choice)


def run_attack(exp: Experiment, attack: PlannedAttack, inputs: AttackInputs | None = None) -> AttackRun:
    """One planned attack on the experiment, timed (one-time setup such as imports excluded) and evaluated."""
    inputs = inputs or exp.attack_inputs()
    if attack.info.warmup is not None:
        attack.info.warmup()
    calibrating = attack.info.pvalues_in(inputs.mode) and exp.calibrates
    start = time.perf_counter()
    run_on = calibration.with_calibration_queries(inputs, exp.calibration_part) if calibrating else inputs
    result = cached.execute(attack.info, attack.params, attack.references, run_on)
    calibration_scores = result.scores[len(inputs.queries.labels) :] if calibrating else None
    if calibrating:
        result = calibration.split_calibrated(result, len(inputs.queries.labels))
    seconds = {
        "reference_training": float(sum(r.seconds for r in exp.references[: attack.references])),
        "attack": time.perf_counter() - start,
    }
    found = evaluate(exp, result)
    return AttackRun(
        attack,
        result,
        found,
        seconds,
        None if found is None else deployable_at(exp, attack, inputs, result),
        calibration_scores,
    )


def deployable_at(exp: Experiment, attack: PlannedAttack, inputs: AttackInputs, result: AttackResult) -> dict | None:
    """The attack's operating points with thresholds set on the references alone (``experiment.deployable``)."""
    assert exp.is_member is not None
    is_member, levels = exp.is_member, fpr_levels(exp.cfg)
    parts = cached.key_parts(attack.info, attack.params, inputs.first(attack.references))
    if parts is not None:
        parts += [attack.references, np.asarray(is_member, dtype=bool), result.scores, repr(levels)]
    return cached.memoized_json(
        "deployable",
        parts,
        lambda: deployable.thresholds(
            attack.info, attack.params, attack.references, inputs, is_member, result.scores, levels
        ),
    )


def fpr_levels(cfg: AuditSettings) -> tuple[float, ...]:
    """The standard FPR levels (docs/conventions.md), plus the one the user asked for."""
    return tuple(sorted(set(metrics.FPR_LEVELS) | ({cfg.min_fpr} if cfg.min_fpr else set())))


def evaluate(exp: Experiment, result: AttackResult) -> metrics.AttackMetrics | None:
    """ROC metrics against the true membership; none when it is unknown (a ranking is all there is)."""
    if exp.is_member is None:
        return None
    pvals = {} if result.log_pvalues is None else {"raw": result.log_pvalues}
    if result.log_pvalues_calibrated is not None:
        pvals["calibrated"] = result.log_pvalues_calibrated
    return metrics.evaluate(result.scores, exp.is_member, pvals, fpr_levels(exp.cfg))
