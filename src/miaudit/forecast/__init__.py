"""``miaudit plan CONFIG``: the audit's power and cost before it runs (``stats.power``), from the split sizes,
and the training time of every model the run obtains (``miaudit run``'s, or ``miaudit dp-audit``'s one-run
audit for a config with canaries): none for a model already in the cache, else one timed epoch of its own
recipe (the DP-SGD target's apart from the references') scaled to its records and epochs; nothing is cached
or written."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import data
from ..attack_plan import Plan
from ..config.run import RunConfig
from ..experiment import budget, datasets
from ..experiment.base import AuditRecords
from ..experiment.recipes import ModelJob, ModelRecipe, builtin_recipe, entry_for, open_store, reference_recipe
from ..results import AuditPlan, LevelPower, MeasuredTime, MembersForHalfwidth, ModelTime, PlannedTraining, QueryCost
from ..stats import power
from ..training.store import Store

LEVELS = (0.001, 0.01)


def _epoch_seconds(recipe: ModelRecipe, job: ModelJob, seed: int) -> float:
    """One timed epoch of ``recipe`` (a one-epoch copy of the job's) on the job's training records."""
    x, y = job.ds.x, job.ds.y
    warm = job.train_idx[:64]  # the first steps pay for imports and allocation: not timed
    recipe.fit(recipe.build(), x[warm], y[warm], seed, lambda *_: None)
    model = recipe.build()
    start = time.perf_counter()
    recipe.fit(model, x[job.train_idx], y[job.train_idx], seed, lambda *_: None)
    return time.perf_counter() - start


def measured_seconds(store: Store, job: ModelJob) -> list[float]:
    """The training seconds the store's models of ``job``'s recipe took on this machine (meta.json's
    ``seconds``): the same data, architecture and training settings, any seed and records. Empty for a recipe
    the store does not cache (user code)."""
    if job.recipe.cache_spec is None:
        return []
    entry, spec = entry_for(store, job.recipe, job.ds, job.seed, job.train_idx)
    want = {k: v for k, v in json.loads(json.dumps(spec)).items() if k not in ("train_idx", "seed")}
    found = []
    for meta in sorted(entry.dir.parent.glob("*/meta.json")):
        try:
            read = json.loads(meta.read_text())
        except (OSError, ValueError):
            continue
        have, seconds = read.get("spec") or {}, read.get("seconds")
        if isinstance(seconds, int | float) and seconds > 0 and all(have.get(k) == v for k, v in want.items()):
            found.append(float(seconds))
    return found


def _jobs(cfg: RunConfig, plan: Plan) -> tuple[list[ModelJob], str]:
    """The models the audit obtains, the target first, and what runs it: ``miaudit dp-audit`` for a config with
    canaries (its one-run audit), else ``miaudit run``."""
    if cfg.canaries is not None:
        from ..dp import one_run

        return one_run.model_jobs(cfg), "dp-audit (one run)"
    from ..pipeline import lay_out

    return lay_out(cfg, plan).jobs, "run"


@dataclass(frozen=True)
class TrainingTime:
    """What training the audit needs (``AuditPlan``'s training keys)."""

    command: str
    models: list[ModelTime]
    seconds_per_epoch: dict[str, float]
    estimated_training_seconds: float
    measured: dict[str, MeasuredTime] = field(default_factory=dict)
    workers: int | None = None
    references_by: str | None = None


def training_time(cfg: RunConfig, plan: Plan) -> TrainingTime:
    """Per model: cached, or its predicted training time from one timed epoch of its own recipe (the DP-SGD
    target's apart from the references', which train without DP unless ``train.dp.references``), scaled to its
    training records and epochs. Models that ``models_at_once: auto`` trains in worker processes on a CPU
    (``together.worker_processes``) are timed on one torch thread, as a worker trains them, and their wall time
    is shared among the workers."""
    jobs, command = _jobs(cfg, plan)
    if cfg.dp_training is not None:
        return _user_function_time(cfg, jobs)
    return jobs_time(cfg, jobs, command)


def jobs_time(cfg: RunConfig, jobs: list[ModelJob], command: str, all_target: bool = False) -> TrainingTime:
    """``training_time`` of given jobs: the first is the target, the others references (``all_target``: every job
    trains with the target's recipe, as an unlearning audit's retrained models do)."""
    import torch

    from ..experiment import together

    store = open_store(cfg)
    one = cfg.revised(train=cfg.train.revised(epochs=1))
    pending = {i for i, job in enumerate(jobs) if not job.in_store(store)}
    in_workers, workers = together.worker_jobs(store, jobs, cfg.device)
    per_epoch: dict[str, float] = {}  # "target" / "reference": one timed epoch on the first such model's records
    per_record: dict[str, float] = {}
    measured: dict[str, tuple[float, int]] = {}  # kind -> (median seconds this machine measured, models)
    models: list[ModelTime] = []
    for i, job in enumerate(jobs):
        cached = i not in pending
        kind = "reference" if i and not all_target else "target"
        worker = workers > 1 and i in in_workers
        if not cached and kind not in measured and kind not in per_epoch:
            found = measured_seconds(store, job)
            if found:
                measured[kind] = (float(np.median(found)), len(found))
        if not cached and kind not in measured and kind not in per_epoch:
            cut = job.recipe.together if i and cfg.reference_budget is not None else None  # a budget's batch size
            ref_one = one if cut is None else one.revised(train=cut.revised(epochs=1))
            recipe = (
                builtin_recipe(one, job.ds, cfg.model, dp=cfg.train.dp) if i == 0 else reference_recipe(ref_one, job.ds)
            )
            threads = torch.get_num_threads()
            torch.set_num_threads(1 if worker else threads)
            try:
                per_epoch[kind] = _epoch_seconds(recipe, job, cfg.seed)
            finally:
                torch.set_num_threads(threads)
            per_record[kind] = per_epoch[kind] / max(len(job.train_idx), 1)
        if cached:
            seconds = 0.0
        elif kind in measured:
            seconds = measured[kind][0]
        else:
            seconds = per_record[kind] * len(job.train_idx) * (job.recipe.epochs or cfg.train.epochs)
        models.append(ModelTime(role=job.role, cached=cached, seconds=seconds, in_worker=worker))
    return TrainingTime(
        command=command,
        models=models,
        seconds_per_epoch=per_epoch,
        measured={kind: MeasuredTime(seconds=m[0], models=m[1]) for kind, m in measured.items()},
        workers=workers,
        estimated_training_seconds=sum((m.seconds or 0.0) / (workers if m.in_worker else 1) for m in models),
    )


def _user_function_time(cfg: RunConfig, jobs: list[ModelJob]) -> TrainingTime:
    """``dp_training``: the user's function trains the target and (by default) the references, never cached; one
    call is timed on the target's records (a whole training: miaudit cannot time an epoch of user code) and
    scaled to each model's records."""
    from ..dp import user_code

    assert cfg.dp_training is not None
    training = user_code.resolve(cfg)
    recipe, refs = user_code.recipes(cfg, jobs[0].ds, training)
    start = time.perf_counter()
    recipe.fit(
        recipe.build(), jobs[0].ds.x[jobs[0].train_idx], jobs[0].ds.y[jobs[0].train_idx], cfg.seed, lambda *_: None
    )
    per_record = (time.perf_counter() - start) / max(len(jobs[0].train_idx), 1)
    by_function = cfg.dp_training.references == "function"
    models = [
        ModelTime(role=job.role, cached=False, seconds=per_record * len(job.train_idx), in_worker=False)
        for job in (jobs if by_function else jobs[:1])
    ]
    return TrainingTime(
        command=f"dp-audit (your function {cfg.dp_training.function}, timed by one call)",
        models=models,
        seconds_per_epoch={},
        workers=1,
        estimated_training_seconds=sum(m.seconds or 0.0 for m in models),
    )


def models_time(cfg: RunConfig, plan: Plan, records: AuditRecords) -> TrainingTime:
    """The training time of the models ``miaudit run`` obtains on ``cfg``: the target and the references, or
    with the user's target (``target:``) the references only."""
    return training_time(cfg, plan) if cfg.target is None else _own_model_time(cfg, plan, records)


def _own_model_time(cfg: RunConfig, plan: Plan, records: AuditRecords) -> TrainingTime:
    """A target the user trained or deployed (``target:``): only the references train, on the pool of the
    config's files (``experiment.build.reference_jobs``), each cached, measured or timed as ``training_time``
    does; with ``target.train_fn`` (user code, never cached) one reference is not timed: its time is the user's."""
    from ..experiment.build import reference_jobs
    from ..experiment.own_model import with_train_fn

    assert cfg.target is not None
    ds = records.dataset
    recipe, by = with_train_fn(reference_recipe(cfg, ds, plan.head_dropout), cfg.target.train_fn)
    jobs = reference_jobs(cfg, plan, records, recipe)[0]
    store = open_store(cfg)
    models: list[ModelTime] = []
    per_epoch: dict[str, float] = {}
    measured: dict[str, MeasuredTime] = {}
    for job in jobs:
        cached = job.in_store(store)
        if cached:
            models.append(ModelTime(role=job.role, cached=True, seconds=0.0))
            continue
        if by:  # the user's train_fn: not ours to time
            models.append(ModelTime(role=job.role, cached=False, seconds=None))
            continue
        if "reference" not in measured and "reference" not in per_epoch:
            found = measured_seconds(store, job)
            if found:
                measured["reference"] = MeasuredTime(seconds=float(np.median(found)), models=len(found))
            else:
                one = cfg.revised(train=cfg.train.revised(epochs=1))
                per_epoch["reference"] = _epoch_seconds(reference_recipe(one, ds, plan.head_dropout), job, 0)
        seconds = (
            measured["reference"].seconds
            if "reference" in measured
            else per_epoch["reference"] * cfg.train.epochs * len(job.train_idx) / max(len(jobs[0].train_idx), 1)
        )
        models.append(ModelTime(role=job.role, cached=False, seconds=seconds))
    return TrainingTime(
        command="run, your target",
        models=models,
        seconds_per_epoch=per_epoch,
        measured=measured,
        references_by=by,
        estimated_training_seconds=sum(m.seconds or 0.0 for m in models),
    )


def queries(cfg: RunConfig, records: AuditRecords) -> QueryCost | None:
    """An endpoint's query cost: the records whose answers the audit reads, and how many the answer store
    lacks (each costs one query; nothing is asked here)."""
    if cfg.target is None or cfg.target.endpoint is None:
        return None
    from ..endpoint.client import EndpointClient
    from ..endpoint.target import asked_rows

    ds = records.dataset
    asked = asked_rows(records.split, records.query_idx)
    client = EndpointClient(cfg.target, open_store(cfg).root, ds.n_classes)
    try:
        to_ask = client.missing(ds.x[asked])
    finally:
        client.close()
    label = cfg.target.output == "label"
    return QueryCost(records=int(len(asked)), to_ask=int(to_ask), batch_size=cfg.target.batch_size,
                     requests=-(-to_ask // cfg.target.batch_size), label_only_extra=label)  # fmt: skip


def audit_records(cfg: RunConfig) -> AuditRecords:
    """The audit's records: a config's split, or for a target the user gives (``target:``) the sets its index
    files name (``experiment.own_model.membership_from_files``), as the run will have them."""
    ds = datasets.load(cfg)
    if cfg.target is not None and (cfg.members is not None or cfg.queries.indices is not None):
        from ..experiment.own_model import membership_from_files

        split, query_idx, is_member = membership_from_files(cfg, ds)
        return AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    query_idx = np.concatenate([split.members, split.nonmembers])
    is_member = np.r_[np.ones(len(split.members), bool), np.zeros(len(split.nonmembers), bool)]
    return AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)


def forecast(cfg: RunConfig, plan: Plan, halfwidth: float = 0.01, at_tpr: float = 0.05) -> AuditPlan:
    """Split sizes, the intervals and detectable TPR at 0.1% and 1% FPR, records needed, and the run time."""
    records = audit_records(cfg)
    ds, split = records.dataset, records.split
    n1, n0 = len(split.members), len(split.nonmembers)
    tests = sum(not a.info.is_ranking for a in plan.attacks) * 3  # the verdict's tests; 3 FPR levels: 0.1%, 1%, 5%
    per_level = {
        str(a): LevelPower(
            tpr_halfwidth_at_tpr={f"{t:g}": power.tpr_halfwidth(t, n1) for t in (a, at_tpr, 0.2)},
            smallest_detectable_tpr=power.smallest_detectable_tpr(n1, n0, a, tests),
            false_positives_allowed=int(a * n0 + 1e-9),
            nonmembers_for_reliable_level=power.nonmembers_for_level(a),
        )
        for a in LEVELS
    }
    t = models_time(cfg, plan, records)
    return AuditPlan(
        dataset=ds.name,
        n_members=n1,
        n_nonmembers=n0,
        n_population=len(split.population),
        attacks=[a.label for a in plan.attacks],
        verdict_tests=tests,
        levels=per_level,
        members_for_halfwidth=MembersForHalfwidth(
            halfwidth=halfwidth, at_tpr=at_tpr, members=power.members_for_halfwidth(at_tpr, halfwidth)
        ),
        command=t.command,
        models=t.models,
        seconds_per_epoch=t.seconds_per_epoch,
        measured=t.measured,
        **({} if t.workers is None else {"workers": t.workers}),
        **({} if t.references_by is None else {"references_by": t.references_by}),
        estimated_training_seconds=t.estimated_training_seconds,
        **({"queries": q} if (q := queries(cfg, records)) is not None else {}),
        **({"dp_power": p} if (p := _dp_power(cfg)) is not None else {}),
        **({"reference_budget": budget.price(cfg, ds, split).sentence()} if cfg.reference_budget else {}),
    )


def _dp_power(cfg: RunConfig) -> str | None:
    """A config with canaries (``miaudit dp-audit``'s one-run audit): the power line it says before training."""
    if cfg.canaries is None:
        return None
    from ..dp.output import one_run_power

    return one_run_power(cfg)


def lines(f: AuditPlan) -> list[str]:
    """What ``miaudit plan`` prints."""
    out = [
        f"{f.dataset}: {f.n_members} members, {f.n_nonmembers} non-members, {f.n_population} population; "
        f"attacks {', '.join(f.attacks)} ({f.verdict_tests} verdict tests)",
    ]
    for level, p in f.levels.items():
        widths = ", ".join(f"+-{100 * w:.1f} at TPR {100 * float(t):g}%" for t, w in p.tpr_halfwidth_at_tpr.items())
        need = p.smallest_detectable_tpr
        out.append(
            f"TPR@{100 * float(level):g}%: interval {widths}; smallest TPR called a leak "
            + ("none (too few records)" if need is None else f"{100 * need:.1f}%")
            + f"; {p.false_positives_allowed} false positives allowed"
            + (
                f" (unreliable: 10 need {p.nonmembers_for_reliable_level} non-members)"
                if p.false_positives_allowed < 10
                else ""
            )
        )
    m = f.members_for_halfwidth
    out.append(f"members for TPR {100 * m.at_tpr:g}% +-{100 * m.halfwidth:g}: {m.members}")
    out.append(time_line(f))
    out += [f.reference_budget] if f.reference_budget else []
    if f.dp_power is not None:
        out.append(f"dp-audit (one run): {f.dp_power}")
    if f.queries is not None:
        q = f.queries
        extra = "; output: label adds the label-only attacks' perturbed queries" if q.label_only_extra else ""
        out.append(
            f"endpoint: the audit reads the answers for {q.records} records; {q.to_ask} are not in the "
            f"answer store: {q.to_ask} queries in {q.requests} requests of up to {q.batch_size}{extra}"
        )
    return out


def time_line(f: PlannedTraining | TrainingTime) -> str:
    """The training line of a plan: the models to train, their time, how it was found."""
    models = f.models
    if not models:
        return "training: no model to train"
    cached = sum(m.cached for m in models)
    if cached == len(models):
        return f"training: all {len(models)} models in the cache, nothing to train: about 0 s of training"
    left = len(models) - cached
    where = f"; {cached} of {len(models)} in the cache" if cached else ""
    workers = f.workers or 1
    how = f" in {workers} worker processes" if workers > 1 else ""
    timed = " on one thread" if workers > 1 else ""
    epochs = [f"{kind} {s:.2f} s per epoch (timed{timed})" for kind, s in f.seconds_per_epoch.items()]
    epochs += [
        f"{kind} {m.seconds:.1f} s per model (measured on this machine: {m.models} such model(s) in the cache)"
        for kind, m in (f.measured or {}).items()
    ]
    if f.references_by:
        epochs.append(f"the references trained by {f.references_by} are not timed (user code, not cached)")
    return (
        f"training ({f.command}): about {f.estimated_training_seconds:.0f} s for {left} model(s) to train"
        f"{how}{where}; {'; '.join(epochs)}"
    )


def unlearning_lines(path: str | Path, overrides: list[str]) -> list[str]:
    """``miaudit plan`` of an unlearning config (``miaudit unlearn``): the models it obtains and their training time
    (``jobs_time``: every model with the original's recipe; cached models free)."""
    from ..config.files import load_config
    from ..unlearning import audit, config

    u = load_config(path, overrides, RunConfig, config.from_mapping)
    cfg = u.cfg
    ds = datasets.load(cfg)
    rec = audit.records(u, ds)
    jobs = audit.model_jobs(u, rec)
    head = (
        f"unlearn: forget {len(rec.forget)} of {len(rec.members)} training records, {len(rec.unseen)} unseen records "
        f"calibrate; {len(jobs)} models ({', '.join(j.role for j in jobs)})"
    )
    # timed as `miaudit run`'s plan times its models (a measured time in the cache first, else one epoch on the
    # threads the models will train on): the two plans of the same models agree
    return [head, time_line(jobs_time(cfg, jobs, "unlearn", all_target=True))]
