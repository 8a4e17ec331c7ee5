"""An unlearning audit from start to verdict: the config, the forget set, the models, the statistics.

Two ways in: miaudit trains the original model (the target of an audit config) and makes the unlearned one
(``unlearning.method``, or the user's ``unlearn_fn``), or the unlearned model is given as for an own model
(``target: {architecture, checkpoint}``, ``members:`` the records the original trained on). Either way the null
is a set of models retrained on the retained records (``references:`` of them, each cached in the model store,
trained in stacks), and the records no model trained on calibrate every test (``verify.py``).

Every input check runs before the first model trains; nothing is written here (``output.py`` writes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..data import Dataset
from ..errors import ConfigError, DataError
from ..experiment import datasets
from ..experiment.recipes import ModelJob, model_seed, open_store, target_job, trained_target
from ..progress import ModelProgress, log
from ..results.unlearning import (
    Accuracies,
    Estimate,
    Exposure,
    Method,
    UnlearningSection,
    Utility,
)
from ..stats.metrics import accuracy
from ..stats.signals import confidence, rescaled_logit
from . import verify
from .answer import answered
from .config import UnlearnConfig, UnlearningConfig
from .methods import UnlearnFn
from .records import Records, records

if TYPE_CHECKING:
    import torch

UNLEARNED_TAG, RETRAINED_TAG = 0xF00, 0xF01  # seeds of the models (the forget set's draw: records.py)


@dataclass
class Models:
    """Each model's logits on every record, and what obtaining them cost."""

    unlearned: torch.nn.Module
    unlearned_logits: np.ndarray
    original_logits: np.ndarray | None
    retrained_logits: np.ndarray  # (K, n, C)
    method: Method
    trained: int


def model_jobs(u: UnlearnConfig, rec: Records, unlearn_fn: UnlearnFn | None = None) -> list[ModelJob]:
    """Every model the audit trains or loads, known before anything trains (``miaudit plan`` times them): the
    original first (not when the unlearned model is given), the exact retrain (method ``retrain``), then the
    ``references`` models retrained on the retained records."""
    cfg, ds, unl = u.cfg, rec.dataset, u.unlearning
    original = target_job(cfg, ds, rec.members)
    k = cfg.references
    jobs = [
        ModelJob(
            role=f"retrained {j + 1}/{k}",
            recipe=original.recipe,
            ds=ds,
            seed=model_seed(cfg.seed, RETRAINED_TAG + j),
            train_idx=rec.retain,
        )
        for j in range(k)
    ]
    if cfg.target is None and unlearn_fn is None and unl.method is not None and unl.method.name == "retrain":
        seed = model_seed(cfg.seed, UNLEARNED_TAG)
        jobs.insert(
            0, ModelJob(role="unlearned (retrain)", recipe=original.recipe, ds=ds, seed=seed, train_idx=rec.retain)
        )
    return jobs if cfg.target is not None else [original, *jobs]


def obtain_models(u: UnlearnConfig, rec: Records, unlearn_fn: UnlearnFn | None = None) -> Models:
    """The original model (trained or loaded), the unlearned one (made, or read from the checkpoint) and the
    models retrained on the retained records (trained in stacks, cached)."""
    from ..experiment import together
    from ..training.loop import predict_logits
    from . import methods

    cfg, ds, unl = u.cfg, rec.dataset, u.unlearning
    store = open_store(cfg)
    recipe = target_job(cfg, ds, rec.members).recipe  # the recipe of the original: the retrained models' too
    given = cfg.target is not None
    jobs = model_jobs(u, rec, unlearn_fn)[0 if given else 1 :]  # the original is obtained as the target
    retrains = bool(jobs) and jobs[0].role.startswith("unlearned")
    original = None
    with ModelProgress(len(jobs) + (0 if given else 1)) as tracker:
        if not given:
            target = target_job(cfg, ds, rec.members)
            tracker.expect_cached(sum(j.in_store(store) for j in [target, *jobs]))
            original = trained_target(cfg, ds, rec.members, store, tracker)
        else:
            tracker.expect_cached(sum(j.in_store(store) for j in jobs))
        got = together.obtain_all(store, recipe, ds, jobs, tracker, cfg.device)
    trained = sum(not m.cached for m in got) + (0 if original is None or original.cached else 1)
    forget, retain = (ds.x[rec.forget], ds.y[rec.forget]), (ds.x[rec.retain], ds.y[rec.retain])
    start = time.perf_counter()
    if given:
        module = _given_module(u, ds)
        method = Method(name="given", label=f"given: {Path(str(cfg.target.checkpoint)).name}")  # type: ignore[union-attr]
    elif retrains:
        assert got[0].module is not None  # trained or loaded here: never outputs only
        module = got[0].module
        method = Method(name="retrain", label="retrain", seconds=got[0].seconds)
        got = got[1:]
    else:
        assert original is not None and original.module is not None
        seed = model_seed(cfg.seed, UNLEARNED_TAG)
        if unlearn_fn is not None:
            module = methods.by_user(original.module, unlearn_fn, forget, retain, seed)
            name = getattr(unlearn_fn, "__name__", "unlearn_fn")
            method = Method(name="unlearn_fn", label=f"unlearn_fn {name}")
        else:
            assert unl.method is not None
            module = methods.unlearned(
                original.module, unl.method, forget, retain, ds.n_classes, seed, cfg.train.batch_size, cfg.device
            )
            m = unl.method
            method = Method(name=m.name, label=m.label(), epochs=m.resolved_epochs, lr=m.resolved_lr)
        # safe unvalidated: a results record, not a config, and seconds a measured float its Number type holds
        method = method.model_copy(update={"seconds": round(time.perf_counter() - start, 3)})
        log.info("unlearned: %s in %.1f s", method.label, time.perf_counter() - start)
    logits = predict_logits(module, ds.x, device=cfg.device)
    if not np.all(np.isfinite(logits)):
        logits = np.nan_to_num(logits, nan=0.0, posinf=1e30, neginf=-1e30)
    retrained = np.stack([np.asarray(m.logits, dtype=np.float64) for m in got])
    original_logits = None if original is None else np.asarray(original.logits, dtype=np.float64)
    return Models(module, logits, original_logits, retrained, method, trained)


def _given_module(u: UnlearnConfig, ds: Dataset) -> torch.nn.Module:
    from ..experiment import validate
    from ..models import build_model, io

    assert u.cfg.target is not None and u.cfg.target.checkpoint is not None
    state = io.read_state_dict(u.cfg.target.checkpoint)
    arch = u.cfg.target_architecture
    module = io.load_weights(build_model(arch, ds.input_shape, ds.n_classes), state, arch)
    n_classes = validate.model_classes(module, ds.x, "target")
    if n_classes != ds.n_classes:
        raise DataError(f"target: outputs {n_classes} classes, the data has {ds.n_classes}")
    return module.eval()


def _accuracies(
    idx: np.ndarray, y: np.ndarray, unlearned: np.ndarray, original: np.ndarray | None, retrained: np.ndarray
) -> Accuracies:
    per = [accuracy(r[idx], y[idx]) for r in retrained]
    return Accuracies(
        unlearned=round(accuracy(unlearned[idx], y[idx]), 4),
        original=None if original is None else round(accuracy(original[idx], y[idx]), 4),
        retrained_mean=round(float(np.mean(per)), 4),
        retrained_sd=round(float(np.std(per, ddof=1)) if len(per) > 1 else 0.0, 4),
    )


def _estimate(e: verify.Estimate | None, null: str) -> Estimate:
    if e is None:
        return Estimate(value=None, null=null)
    return Estimate(value=round(e.value, 4), interval=[round(e.low, 4), round(e.high, 4)], null=null)


@dataclass
class Verification:
    """An unlearning audit's outcome: the section of results.json and the arrays behind it."""

    section: UnlearningSection
    records: Records
    module: torch.nn.Module  # the unlearned model
    z_forget: np.ndarray  # each forgotten record's standardized score
    p_remembered: np.ndarray  # its per-record p-values, upper and lower
    p_over_forgotten: np.ndarray


def verify_models(u: UnlearnConfig, rec: Records, models: Models, start: float) -> Verification:
    """The statistics of ``verify.py`` on the models' signals (the logit-scaled confidence)."""
    y, unl, seed = rec.dataset.y, u.unlearning, u.cfg.seed
    k = models.retrained_logits.shape[0]
    phi_u = rescaled_logit(models.unlearned_logits, y)
    phi_r = rescaled_logit(models.retrained_logits, y)  # (K, n)
    pooled = np.concatenate([rec.forget, rec.unseen])
    f = len(rec.forget)
    strata = verify.Strata.of(y[rec.forget], y[rec.unseen])
    z = verify.standardized(phi_u[pooled], phi_r[:, pooled])
    z_f, z_n = z[:f], z[f:]
    test = verify.stratified_test(verify.within_ranks(z, strata), strata, seed, verify.RECORDS_TAG)
    # the model test reads the confidence (bounded: one record's extreme logit cannot carry it), the unlearned
    # model's minus the retrained models' mean on the same record: forget against unseen, within labels
    conf_u = confidence(models.unlearned_logits[pooled], y[pooled])
    conf_r = confidence(models.retrained_logits[:, pooled], y[pooled])
    gap = verify.stratified_test(conf_u - conf_r.mean(axis=0), strata, seed, verify.MODELS_TAG)
    selection = verify.stratified_test(phi_r[:, pooled].mean(axis=0), strata, seed, verify.SELECTION_TAG)
    decision = verify.decide(test, gap, selection, unl.level)
    verdict = decision.verdict
    p_up, p_low = verify.per_record(z_f, z_n, strata, k)
    remembered = rec.forget[verify.named(p_up, unl.fdr)] if verdict != "no_claim" else rec.forget[:0]
    over = rec.forget[verify.named(p_low, unl.fdr)] if verdict != "no_claim" else rec.forget[:0]
    loo = verify.leave_one_out(phi_u[pooled], phi_r[:, pooled])
    per_example = mean_tpr = None
    if loo is not None:
        pos, neg = loo
        per_example = verify.auc_by_records(pos[:, :f], neg[:, :f], seed)
        retrained_tpr = [verify.tpr_at(neg[j, :f], neg[j, f:]) for j in range(k)]
        mean_tpr = verify.Estimate(
            float(np.mean([e.value for e in retrained_tpr])),
            float(np.mean([e.low for e in retrained_tpr])),
            float(np.mean([e.high for e in retrained_tpr])),
        )
    population = verify.auc_by_records(phi_u[rec.forget][None], phi_r[:, rec.forget], seed)
    after = verify.tpr_at(z_f, z_n)
    before = exposure = baseline = None
    if models.original_logits is not None:
        phi_t = rescaled_logit(models.original_logits, y)
        z_t = verify.standardized(phi_t[pooled], phi_r[:, pooled])
        before = verify.tpr_at(z_t[:f], z_t[f:])
        r, n = rec.retain, rec.unseen
        exposure = rec.retain[verify.newly_exposed(phi_t[r], phi_u[r], phi_t[n], phi_u[n])]
        baseline = float(np.mean([len(verify.newly_exposed(phi_t[r], p[r], phi_t[n], p[n])) for p in phi_r]))
    logits = (models.unlearned_logits, models.original_logits, models.retrained_logits)
    utility = Utility(retained=_accuracies(rec.retain, y, *logits), test=_accuracies(rec.test, y, *logits))
    note = _utility_note(utility)
    chance = float(np.bincount(y[rec.test]).max() / len(rec.test))  # a model answering the commonest label
    damaged = _damaged(utility.test, chance)
    if damaged and verdict != "not_forgotten":
        verdict = "over_forgotten"
        sentence = (
            f"Over-forgotten: the unlearning damaged the model, which forgot far more than the {f} records: test "
            f"accuracy {utility.test.unlearned:.2f} against {utility.test.retrained_mean:.2f} for models retrained "
            f"without them (a model answering the commonest label: {chance:.2f}). It scores every record lower, the "
            f"forgotten ones with the rest, so this does not single them out (the tests within labels: "
            f"p = {_p(decision.p_value)})."
        )
    else:
        sentence = _sentence(verdict, decision, selection.p_value, len(remembered), len(over), f, unl)
    if strata.compared < f:
        sentence += (
            f" {f - strata.compared} forgotten records were left out: no record outside the training records has "
            "their label."
        )
    sentence += f" {note}" if note and not damaged else ""  # the damage sentence says it already
    refs = f"{k} models retrained on the {len(rec.retain)} retained records"
    unseen = f"the {len(rec.unseen)} records no model trained on"
    section = UnlearningSection(
        verdict=verdict,
        sentence=sentence,
        p_value=_p(decision.p_value),
        p_remembered=_p(decision.p_remembered),
        p_over_forgotten=_p(decision.p_over_forgotten),
        level=unl.level,
        test=(
            f"two permutation tests ({test.resamples} permutations, forgotten against unseen records within each "
            f"label), each at half the level: records, the within-label ranks of the scores standardized by {refs}; "
            "models, the unlearned model's confidence minus the retrained models' mean confidence on the same "
            "record (the unlearned model's forget-minus-unseen gap against theirs); exact when the forget set is a "
            f"random draw of the training records or a choice by label. No claim when the retrained models "
            f"themselves tell the forgotten records from the unseen ones of their labels (p <= {verify.GUARD_LEVEL})"
        ),
        p_records=_p(test.p_value),
        p_models=_p(gap.p_value),
        p_selection=_p(selection.p_value),
        compared=strata.compared,
        utility_note=note,
        damaged=damaged,
        method=models.method,
        forget=[int(i) for i in rec.forget],
        n_retained=len(rec.retain),
        n_unseen=len(rec.unseen),
        fdr=unl.fdr,
        remembered=[int(i) for i in remembered],
        over_forgotten=[int(i) for i in over],
        per_record_null=(
            f"each record's score standardized by {refs} on the same record, against a t with "
            f"{k - 1 + verify.PRIOR_DF:g} degrees of freedom placed and scaled by {unseen} (their label's median, one "
            "spread); Storey's adaptive BH"
        ),
        per_example_auc=_estimate(per_example, f"{refs} (leave-one-out)"),
        population_auc=_estimate(population, refs),
        tpr_at_1pct_before=_estimate(before, f"{unseen} (threshold), {refs} (standardization)"),
        tpr_at_1pct_after=_estimate(after, f"{unseen} (threshold), {refs} (standardization)"),
        tpr_at_1pct_retrained=_estimate(mean_tpr, f"each of the {refs} against the others"),
        utility=utility,
        exposure_rose=Exposure(
            count=None if exposure is None else len(exposure),
            retrained_mean=None if baseline is None else round(baseline, 2),
            records=[] if exposure is None else [int(i) for i in exposure[:100]],
        ),
        retrained_models=k,
        models_trained=models.trained,
        seconds=round(time.perf_counter() - start, 1),
    )
    return Verification(answered(section), rec, models.unlearned, z_f, p_up, p_low)


def _p(p: float) -> float:
    return float(f"{p:.4g}")


DAMAGE = 0.5  # damaged: the unlearned model keeps less than this share of the retrained models' accuracy above chance


def _damaged(test: Accuracies, chance: float) -> bool:
    """Whether unlearning damaged the model: on the test records it kept less than ``DAMAGE`` of what the retrained
    models gained over a constant answer. A rule, not a test: exact retraining that lost half its gain over chance
    is a failed training run (the benchmark counts it on exact retraining)."""
    gain = test.retrained_mean - chance
    return gain > 0 and test.unlearned - chance < DAMAGE * gain


def _utility_note(utility: Utility) -> str | None:
    """A sentence when the unlearned model is clearly less accurate than the retrained models (below their mean by
    more than 3 sd and 0.02): a cost of the unlearning, which the verdict does not read as forgetting."""
    low = [
        f"{name} {a.unlearned:.2f} against {a.retrained_mean:.2f}"
        for name, a in (("retained records", utility.retained), ("test records", utility.test))
        if a.unlearned < a.retrained_mean - max(3 * a.retrained_sd, 0.02)
    ]
    if not low:
        return None
    return (
        f"Utility: the unlearned model is less accurate than the retrained models ({'; '.join(low)}), a cost of "
        "the unlearning that touches every record, not the forgotten ones in particular."
    )


def _sentence(
    verdict: str, d: verify.Decision, p_selection: float, n_rem: int, n_over: int, f: int, unl: UnlearningConfig
) -> str:
    if verdict == "no_claim":
        return (
            f"No claim: models retrained without the {f} forgotten records already tell them from the unseen "
            f"records of their labels (p = {_p(p_selection)}), so the forget set differs from those records by more "
            "than training did; the tests cannot tell what unlearning left (docs/unlearning.md)."
        )
    if verdict == "verified":
        return (
            f"Forgetting verified: the unlearned model scores the {f} forgotten records, against unseen records of "
            f"their labels, as models retrained without them do (p = {_p(d.p_value)}, two-sided, level {unl.level})."
        )
    if verdict == "not_forgotten":
        return (
            f"Not forgotten: the unlearned model scores the {f} forgotten records higher, against unseen records of "
            f"their labels, than models retrained without them do (p = {_p(d.p_value)}); {n_rem} records named as "
            f"still remembered at FDR {unl.fdr}."
        )
    return (
        f"Over-forgotten: the unlearned model scores the {f} forgotten records lower, against unseen records of "
        f"their labels, than models retrained without them do (p = {_p(d.p_value)}), which reveals who asked to be "
        f"forgotten; {n_over} records named at FDR {unl.fdr}."
    )


def run(u: UnlearnConfig, unlearn_fn: UnlearnFn | None = None) -> Verification:
    """The whole unlearning audit in memory: check every input, obtain the models, test."""
    start = time.perf_counter()
    if u.cfg.target is None and u.unlearning.method is None and unlearn_fn is None:
        raise ConfigError("unlearning.method: required (retrain, noop, finetune, ...) unless target: gives the model")
    ds = datasets.load(u.cfg)
    rec = records(u, ds)  # every record check, before anything trains
    log.info(
        "unlearning: forget %d of %d training records; %d retrained models; %d unseen records calibrate",
        len(rec.forget),
        len(rec.members),
        u.cfg.references,
        len(rec.unseen),
    )
    models = obtain_models(u, rec, unlearn_fn)
    return verify_models(u, rec, models, start)
