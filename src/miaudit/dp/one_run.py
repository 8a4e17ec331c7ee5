"""The one-run audit (``miaudit dp-audit``; Steinke, Nasr & Jagielski 2023): canaries in one training run.

Black-box (``canaries.kind``: random-label, natural, crafted; ``canaries``): input-space canaries, each in the
target's training set with probability 1/2; the reference models train on the population only, so they never
contain a canary (online mode, whose references train on the queries, is refused). Every planned attack scores
the canaries. White-box (kind gradient or dirac, or ``canaries.gradient: N`` next to black-box canaries in the
same run; ``whitebox``): gradient canaries in the DP-SGD steps, scored from the noisy updates. Each observer's
guesses give two bounds (binomial and f-DP, ``canaries.canary_bounds``), each with its power; results.json's
``dp_audit.bounds`` lists them all, each at the stated confidence alone (the f-DP one assuming a Gaussian tradeoff).

The verdict (``verdict.decide``) tests the claim with every observer's binomial count (white-box and each attack),
Holm over their p-values: a fault any observer sees is caught, and a correct run is flagged with probability at
most 1 - confidence. Canaries' p-values are reported raw: the
validation records a calibration would rank them among have true labels and natural inputs, and random-label or
crafted canaries are not exchangeable with them (a calibrated FPR of 0.96 at p < 0.05 was measured on them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .. import data
from ..attack_plan import build
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment import datasets
from ..experiment.base import AuditRecords, TrainedModel
from ..experiment.build import reference_jobs, with_calibration_records, with_references
from ..experiment.recipes import (
    ModelJob,
    ModelRecipe,
    builtin_recipe,
    model_seed,
    obtain,
    open_store,
    reference_recipe,
    target_job,
    trained_target,
)
from ..experiment.run import RunResult, run_attack
from ..progress import ModelProgress
from ..results import Bound, DPAudit
from ..training import dp_sgd
from ..training.loop import accuracy
from . import audit, canaries
from .whitebox import GradientCanaries

WHITE_BOX_OBSERVER = "noisy updates (log-likelihood ratio)"
RAW_PVALUES = (
    "raw: canaries (random labels, crafted inputs) are not exchangeable with the validation records a "
    "calibration would use"
)


def check(cfg: RunConfig) -> None:
    """What the one-run audit needs of a config (before any work)."""
    spec = cfg.canaries
    if spec is None:
        raise ConfigError("canaries: the one-run audit needs canaries: {count: ..., kind: random-label | natural}")
    if spec.count < 2:
        raise ConfigError(f"canaries.count: the one-run audit needs at least 2 canaries, got {spec.count}")
    if cfg.target is not None:
        raise ConfigError("target: the one-run audit trains its own target with the canaries; remove target")
    if cfg.mode == "online" and spec.implied_threat_model == "black-box":
        raise ConfigError("mode: online references train on the queries (the canaries); the one-run audit is offline")
    if (spec.implied_threat_model == "white-box" or spec.gradient) and cfg.train.dp is None and cfg.dp_training is None:
        raise ConfigError(
            f"canaries.{'kind' if spec.gradient is None else 'gradient'}: white-box canaries are observed in DP-SGD's "
            "noisy updates; add train.dp"
        )


def coins(cfg: RunConfig, count: int, salt: int) -> np.ndarray:
    """``count`` independent fair coins (seeded): which white-box canaries are included."""
    return np.random.default_rng(np.random.SeedSequence([cfg.seed, canaries.CANARY_SEED, salt])).random(count) < 0.5


def whitebox_recipe(cfg: RunConfig, ds: data.Dataset, observed: GradientCanaries) -> ModelRecipe:
    """The DP target's recipe with gradient canaries in its steps: never cached (the scores live in memory)."""
    dp = cfg.train.dp
    assert dp is not None
    base = builtin_recipe(cfg, ds, cfg.model, dp=dp)
    fit = lambda m, x, y, seed, progress: dp_sgd.train_dp(
        m, x, y, cfg.train, dp, seed, cfg.device, progress, whitebox=observed
    )
    return replace(base, fit=fit, cache_spec=None)


def train_target(
    cfg: RunConfig, ds: data.Dataset, train_idx: np.ndarray, observed: GradientCanaries | None
) -> TrainedModel:
    """The target, with the white-box canaries in its steps when there are any (then trained now)."""
    if observed is None:
        return trained_target(cfg, ds, train_idx, open_store(cfg), role="target (with canaries)")
    with ModelProgress(1) as tracker:
        recipe = whitebox_recipe(cfg, ds, observed)
        return obtain(open_store(cfg), recipe, ds, "target (gradient canaries)", model_seed(cfg.seed, 0), train_idx,
                      tracker, cfg.device)  # fmt: skip


def own_target(cfg: RunConfig, ds: data.Dataset, train_idx: np.ndarray, recipe: ModelRecipe) -> TrainedModel:
    """The target trained now by ``recipe`` (a user's function: never cached) on ``train_idx``."""
    with ModelProgress(1) as tracker:
        return obtain(open_store(cfg), recipe, ds, "target (your function, with canaries)", model_seed(cfg.seed, 0),
                      train_idx, tracker, cfg.device)  # fmt: skip


def whitebox_bounds(cfg: RunConfig, observed: GradientCanaries, k: int | None) -> list[Bound]:
    confidence, delta = audit.one_run_level(cfg)
    guesses = k or max(1, observed.count // 10)
    return canaries.canary_bounds(
        observed.scores, observed.included, guesses, confidence, delta, cfg.seed,
        threat_model="white-box", canary_kind=observed.kind, observer=WHITE_BOX_OBSERVER,
    )  # fmt: skip


@dataclass(frozen=True)
class WhiteBoxAudit:
    """A white-box-only audit's findings (``run_whitebox``): what ``output.whitebox`` writes."""

    dataset: data.Dataset
    target: TrainedModel
    privacy: dict | None  # the DP-SGD record, with every accountant's epsilon (``training.dp_sgd``)
    observed: GradientCanaries
    dp_audit: DPAudit


def run_whitebox(cfg: RunConfig) -> WhiteBoxAudit:
    """A white-box-only audit: gradient canaries in one DP-SGD run, no input-space canaries, no attacks."""
    check(cfg)
    spec = cfg.canaries
    assert spec is not None
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    observed = GradientCanaries(spec.kind, coins(cfg, spec.count, 3), cfg.seed)
    target = train_target(cfg, ds, split.members, observed)
    accuracies = {
        "target_train_accuracy": accuracy(target.logits[split.members], ds.y[split.members]),
        "target_test_accuracy": accuracy(target.logits[split.nonmembers], ds.y[split.nonmembers]),
    }
    entries = whitebox_bounds(cfg, observed, spec.guesses)
    privacy = dp_sgd.with_accountants(target.privacy)
    return WhiteBoxAudit(ds, target, privacy, observed, audit.one_run_summary(cfg, entries, privacy, accuracies))


def _canary_records(cfg: RunConfig) -> tuple[data.Dataset, data.Split, canaries.Drawn, AuditRecords]:
    """The data, its split, the canaries drawn into it and the audited records (the canaries): what ``run``
    trains on, known before it trains (``model_jobs``). ``cfg`` without calibration."""
    ds = datasets.load(cfg)
    split = with_calibration_records(data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()), cfg)
    ds_c, c = canaries.draw(cfg, ds, split.nonmembers)
    train_idx = np.sort(np.concatenate([split.members, c.members]))
    query_idx = np.random.default_rng(np.random.SeedSequence([cfg.seed, canaries.CANARY_SEED, 2])).permutation(c.idx)
    is_member = np.isin(query_idx, c.members)
    c_split = replace(split, members=train_idx, nonmembers=np.sort(c.left_out))
    return ds, split, c, AuditRecords(dataset=ds_c, split=c_split, query_idx=query_idx, is_member=is_member)


def model_jobs(cfg: RunConfig) -> list[ModelJob]:
    """The models ``run`` (or ``run_whitebox``) obtains, for ``miaudit plan``: the target with its canaries,
    then the references; a target with gradient canaries in its steps is never cached."""
    check(cfg)
    spec = cfg.canaries
    assert spec is not None
    cfg = cfg.revised(calibration=None)
    if spec.implied_threat_model == "white-box":
        ds = datasets.load(cfg)
        job = target_job(cfg, ds, data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()).members)
        return [replace(job, recipe=replace(job.recipe, cache_spec=None))]
    _, _, _, records = _canary_records(cfg)
    target = target_job(cfg, records.dataset, records.split.members, "target (with canaries)")
    if spec.gradient:
        target = replace(target, recipe=replace(target.recipe, cache_spec=None))
    recipe = reference_recipe(cfg, records.dataset)
    return [target, *reference_jobs(cfg, build(cfg), records, recipe)[0]]


def run(
    cfg: RunConfig, recipes: Callable[[GradientCanaries | None], tuple[ModelRecipe, ModelRecipe]] | None = None
) -> RunResult:
    """Train the target once with its canaries, run every planned attack on the canaries, bound epsilon.
    ``recipes``: given the gradient canaries (or None), the target's and the references' recipes instead of the
    config's (a user's DP training function, ``user_code``); gradient canaries no step observed give no bound."""
    check(cfg)
    spec = cfg.canaries
    assert spec is not None
    cfg = cfg.revised(calibration=None)  # canaries' p-values stay raw (module docstring)
    plan = build(cfg)
    ds, split, c, records = _canary_records(cfg)
    ds_c, train_idx = records.dataset, records.split.members
    test_idx = np.setdiff1d(split.nonmembers, c.idx)
    observed = GradientCanaries("gradient", coins(cfg, spec.gradient, 3), cfg.seed) if spec.gradient else None
    if recipes is None:
        target = train_target(cfg, ds_c, train_idx, observed)
    else:
        own, others = recipes(observed)
        target = own_target(cfg, ds_c, train_idx, own)
    is_member = records.is_member
    assert is_member is not None  # the canaries' membership: known
    ref_recipe = reference_recipe(cfg, ds_c) if recipes is None else others
    exp = with_references(cfg, plan, records, target, ref_recipe, open_store(cfg))
    inputs = exp.attack_inputs()
    runs = [run_attack(exp, attack, inputs) for attack in plan.attacks]
    accuracies = {
        "target_train_accuracy": accuracy(target.logits[split.members], ds.y[split.members]),
        "target_test_accuracy": accuracy(target.logits[test_idx], ds.y[test_idx]),
        "canary_accuracy_in": accuracy(target.logits[c.members], c.labels[c.included]),
        "canary_accuracy_out": accuracy(target.logits[c.left_out], c.labels[~c.included]),
    }
    confidence, delta = audit.one_run_level(cfg)
    k = spec.guesses or max(1, spec.count // 10)
    entries = [
        entry
        for r in runs
        for entry in canaries.canary_bounds(
            r.result.scores,
            is_member,
            k,
            confidence,
            delta,
            cfg.seed,
            threat_model="black-box",
            canary_kind=spec.kind,
            observer=r.attack.label,
        )  # fmt: skip
    ]
    if observed is not None and observed.steps:
        entries += whitebox_bounds(cfg, observed, spec.gradient_guesses)
    target.privacy = dp_sgd.with_accountants(target.privacy)
    summary = audit.one_run_summary(cfg, entries, target.privacy, accuracies, RAW_PVALUES, ds.n_classes)
    return RunResult(exp, runs, summary)
