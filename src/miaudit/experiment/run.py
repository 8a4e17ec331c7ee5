"""Running the planned attacks on an Experiment, however it was built, and evaluating them.

Below the pipeline (which builds Experiments) and used by every way of running an audit: ``miaudit run``,
the Python API, ``miaudit score`` and the one-run DP audit (``dp.one_run``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..attack_plan import PlannedAttack
from ..attacks import AttackInputs, AttackResult, calibration, recommended
from ..config.settings import AuditSettings
from ..progress import log, working
from ..results import BlindBaseline, CanaryExposure, DPAudit
from ..stats import metrics
from . import cached, choice, deployable
from .base import Experiment


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
    dp_audit: DPAudit | None = None  # the epsilon lower bound (miaudit.dp.audit; pipeline.dp_audit), when asked
    blind_baseline: BlindBaseline | None = None  # LM audits: the text-only classifier beside the attacks (lm.blind)
    canary_exposure: CanaryExposure | None = None  # LM audits with canaries: their exposure (miaudit.lm.canaries)
    attack_choice: choice.PseudoTargetEstimates | None = (
        None  # attacks: auto's pseudo-target estimates (experiment.choice)
    )


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


def run_experiment(exp: Experiment) -> RunResult:
    """Every planned attack on a prepared experiment."""
    inputs = exp.attack_inputs()
    attacks, chosen = chosen_attacks(exp, inputs)
    runs = []
    for attack in attacks:
        with working(f"attack {attack.label}"):
            runs.append(run_attack(exp, attack, inputs))
        log.info("attack %s: %.2f s", attack.label, runs[-1].seconds["attack"])
    return RunResult(exp, runs, None, blind_baseline(exp, runs), canary_exposure(exp), chosen)  # dp_audit: pipeline's


def chosen_attacks(
    exp: Experiment, inputs: AttackInputs
) -> tuple[list[PlannedAttack], choice.PseudoTargetEstimates | None]:
    """The planned attacks to run: ``attacks: auto``'s candidates narrowed on the references as pseudo-targets
    (``experiment.choice``), or by the leave-one-data-set-out rule where the audit has no pseudo-targets."""
    plan = exp.plan
    if not plan.candidates:
        return list(plan.attacks), None
    candidates = [a for a in plan.attacks if a.name in plan.candidates]
    with working("attacks: auto, candidates on pseudo-targets"):
        found = choice.choose(candidates, inputs, plan.references, fpr_levels(exp.cfg), choice.LEVEL)
    keep = (
        set(found.chosen) if found else {choice.first_that_runs(candidates, recommended.rule(plan.references), inputs)}
    )
    if found:
        log.info("attacks: auto runs %s of %s", ", ".join(found.chosen), ", ".join(plan.candidates))
    return [a for a in plan.attacks if a.name not in plan.candidates or a.name in keep], found


def canary_exposure(exp: Experiment) -> CanaryExposure | None:
    """results.json's ``canary_exposure``: the target's exposure of the canaries it trained on."""
    spec = getattr(exp.cfg, "canary_exposure", None)
    if spec is None:
        return None
    from ..lm import canaries
    from ..lm.model import CausalLM

    if not isinstance(exp.target.module, CausalLM):
        return None

    with working("canary exposure"):
        found = canaries.measure(exp.target.module, spec, exp.dataset.x.shape[2], exp.device)
    means = ", ".join(f"{r}x {e:.2f}" for r, e in found.mean_exposure_by_repetitions.items())
    log.info(
        "canary exposure (%s, bits of at most %.2f) by repetitions: %s", found.estimator, found.max_exposure, means
    )
    return found


def blind_baseline(exp: Experiment, runs: list[AttackRun]) -> BlindBaseline | None:
    """results.json's ``blind_baseline`` for an audit of texts with known membership (``miaudit.lm.blind``)."""
    texts = getattr(exp.dataset, "texts", None)
    if not texts or exp.is_member is None:
        return None
    from ..lm import blind

    aucs = [r.metrics.auc for r in runs if r.metrics is not None]
    return blind.for_audit(texts, exp.query_idx, exp.is_member, aucs, fpr_levels(exp.cfg), exp.cfg.seed)
