"""Wires the stages: plan -> data -> split -> models (cached) -> attack inputs -> attacks -> metrics.

No math of its own. The target's membership (``is_member``) stays in the
Experiment and is only used to evaluate attack outputs; attacks receive the
queries without it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from . import data
from .attacks import AttackInputs, AttackResult, registry
from .config.run import RunConfig
from .experiment import announce, deployable, validate
from .experiment import datasets as shift
from .experiment.build import (
    AuditRecords,
    Experiment,
    load_dataset,
    open_store,
    reference_recipe,
    shuffled_queries,
    trained_target,
    with_calibration_records,
    with_references,
)
from .plan import Plan, PlannedAttack
from .plan import build as build_plan
from .progress import ModelProgress, log, working
from .stats import calibration, metrics
from .training import executor


@dataclass
class AttackRun:
    attack: PlannedAttack
    result: AttackResult
    metrics: metrics.AttackMetrics | None  # None when the queries' membership is unknown
    seconds: dict[str, float]
    deployable: dict | None = None  # thresholds set on the references alone (experiment.deployable)


@dataclass
class RunResult:
    experiment: Experiment
    attacks: list[AttackRun]
    dp_audit: dict | None = None  # the epsilon lower bound (miaudit.dp.audit), when the config asks for it
    blind_baseline: dict | None = None  # LM audits: the text-only classifier beside the attacks (miaudit.lm.blind)


def prepare(cfg: RunConfig, plan: Plan | None = None) -> Experiment:
    """Plan the audit (before anything is loaded), load and split the data, then train (or load from
    the cache) the target and the reference models. With ``cfg.target`` the user's model is audited
    instead (``own_model``)."""
    plan = plan or build_plan(cfg)
    if cfg.target is not None:
        from .experiment import own_model  # torch and the user's model: not needed by `miaudit score`

        return own_model.from_checkpoint(cfg, plan, cfg.target)
    store = open_store(cfg)  # first: decoded data is cached there too
    ds = load_dataset(cfg)
    log.debug("data %s: %d records, %d classes, input shape %s", ds.name, len(ds), ds.n_classes, ds.input_shape)
    split = with_calibration_records(data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()), cfg)
    if cfg.nonmember_data is not None:
        ds, split = shift.with_ood_nonmembers(cfg, ds, split)
    validate.check_min_fpr(cfg.min_fpr, len(split.nonmembers))
    query_idx, is_member = shuffled_queries(split, cfg.seed)
    other_pool = shift.reference_pool(cfg, ds, split)  # reference_data: checked before any model trains
    records = AuditRecords(ds, split, query_idx, is_member)
    announce.start(cfg, plan, records, target_trains=True)
    with ModelProgress(1 + plan.references) as tracker:  # one estimate of the time left over every model
        target = trained_target(cfg, ds, split.members, store, tracker)
        recipe = reference_recipe(cfg, ds)
        return with_references(cfg, plan, records, target, recipe, store, tracker, other_pool=other_pool)


def run_attack(exp: Experiment, attack: PlannedAttack, inputs: AttackInputs | None = None) -> AttackRun:
    """One planned attack on the experiment, timed (one-time setup such as imports excluded) and evaluated."""
    inputs = inputs or exp.attack_inputs()
    if attack.info.warmup is not None:
        attack.info.warmup()
    calibrating = attack.info.pvalues and exp.calibrates
    start = time.perf_counter()
    run_on = calibration.with_calibration_queries(inputs, exp.calibration_part) if calibrating else inputs
    result = registry.execute(attack.info, attack.params, attack.references, run_on)
    if calibrating:
        result = calibration.split_calibrated(result, len(inputs.queries.labels))
    seconds = {
        "reference_training": float(sum(r.seconds for r in exp.references[: attack.references])),
        "attack": time.perf_counter() - start,
    }
    found = evaluate(exp, result)
    return AttackRun(
        attack, result, found, seconds, None if found is None else deployable_at(exp, attack, inputs, result)
    )


def deployable_at(exp: Experiment, attack: PlannedAttack, inputs: AttackInputs, result: AttackResult) -> dict | None:
    """The attack's operating points with thresholds set on the references alone (``experiment.deployable``)."""
    assert exp.is_member is not None
    return deployable.thresholds(
        attack.info, attack.params, attack.references, inputs, exp.is_member, result.scores, fpr_levels(exp.cfg)
    )


def fpr_levels(cfg: RunConfig) -> tuple[float, ...]:
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


def run_config(cfg: RunConfig) -> RunResult:
    """The whole audit of a config in memory; ``report.write`` puts it on disk. With ``executor: ray`` one
    cluster serves the run's training and attack tasks."""
    with executor.session(cfg.executor, log.info):
        return run_experiment(prepare(cfg))


def run_experiment(exp: Experiment) -> RunResult:
    """Every planned attack on a prepared experiment."""
    inputs = exp.attack_inputs()
    runs = []
    for attack in exp.plan.attacks:
        with working(f"attack {attack.label}"):
            runs.append(run_attack(exp, attack, inputs))
        log.info("attack %s: %.2f s", attack.label, runs[-1].seconds["attack"])
    return RunResult(exp, runs, dp_audit(exp, runs), blind_baseline(exp, runs))


def blind_baseline(exp: Experiment, runs: list[AttackRun]) -> dict | None:
    """results.json's ``blind_baseline`` for an audit of texts with known membership (``miaudit.lm.blind``)."""
    texts = getattr(exp.dataset, "texts", None)
    if not texts or exp.is_member is None:
        return None
    from .lm import blind

    aucs = [r.metrics.auc for r in runs if r.metrics is not None]
    return blind.for_audit(texts, exp.query_idx, exp.is_member, aucs, fpr_levels(exp.cfg), exp.cfg.seed)


def dp_audit(exp: Experiment, runs: list[AttackRun]) -> dict | None:
    """results.json's ``dp_audit``: the chosen attack's epsilon lower bound (``miaudit.dp.audit``)."""
    spec = getattr(exp.cfg, "dp_audit", None)  # a scores-only config has none
    if spec is None or exp.is_member is None:
        return None
    from .dp import audit

    i = audit.chosen_attack([r.attack.label for r in runs], [r.attack.name for r in runs], spec.attack)
    accounted = (exp.target.privacy or {}).get("accounted_epsilon")
    return audit.two_run(runs[i].result.scores, exp.is_member, spec, exp.cfg, runs[i].attack.label, accounted)
