"""``miaudit plan CONFIG``: the audit's power and cost before it runs (``stats.power``), from the split sizes,
and the training time of every model the run obtains (``miaudit run``'s, or ``miaudit dp-audit``'s one-run
audit for a config with canaries): none for a model already in the cache, else one timed epoch of its own
recipe (the DP-SGD target's apart from the references') scaled to its records and epochs; nothing is cached
or written."""

from __future__ import annotations

import time
from typing import Any

from . import data
from .config.run import RunConfig
from .experiment import datasets
from .experiment.recipes import ModelJob, ModelRecipe, builtin_recipe, open_store, reference_recipe
from .plan import Plan
from .stats import power

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


def _jobs(cfg: RunConfig, plan: Plan) -> tuple[list[ModelJob], str]:
    """The models the audit obtains, the target first, and what runs it: ``miaudit dp-audit`` for a config with
    canaries (its one-run audit), else ``miaudit run``."""
    if cfg.canaries is not None:
        from .dp import one_run

        return one_run.model_jobs(cfg), "dp-audit (one run)"
    from .pipeline import lay_out

    return lay_out(cfg, plan).jobs, "run"


def training_time(cfg: RunConfig, plan: Plan) -> dict[str, Any]:
    """Per model: cached, or its predicted training time from one timed epoch of its own recipe (the DP-SGD
    target's apart from the references', which train without DP unless ``train.dp.references``), scaled to its
    training records and epochs. Models that ``models_at_once: auto`` trains in worker processes on a CPU
    (``together.worker_processes``) are timed on one torch thread, as a worker trains them, and their wall time
    is shared among the workers."""
    import torch

    from .experiment import together

    jobs, command = _jobs(cfg, plan)
    if cfg.dp_training is not None:
        return _user_function_time(cfg, jobs)
    store = open_store(cfg)
    one = cfg.model_copy(update={"train": cfg.train.model_copy(update={"epochs": 1})})
    pending = {i for i, job in enumerate(jobs) if not job.in_store(store)}
    in_workers, workers = together.worker_jobs(store, jobs, cfg.device)
    per_epoch: dict[str, float] = {}  # "target" / "reference": one timed epoch on the first such model's records
    per_record: dict[str, float] = {}
    models: list[dict[str, Any]] = []
    for i, job in enumerate(jobs):
        cached = i not in pending
        kind = "reference" if i else "target"
        worker = workers > 1 and i in in_workers
        if not cached and kind not in per_epoch:
            recipe = (
                builtin_recipe(one, job.ds, cfg.model, dp=cfg.train.dp) if i == 0 else reference_recipe(one, job.ds)
            )
            threads = torch.get_num_threads()
            torch.set_num_threads(1 if worker else threads)
            try:
                per_epoch[kind] = _epoch_seconds(recipe, job, cfg.seed)
            finally:
                torch.set_num_threads(threads)
            per_record[kind] = per_epoch[kind] / max(len(job.train_idx), 1)
        seconds = 0.0 if cached else per_record[kind] * len(job.train_idx) * cfg.train.epochs
        models.append({"role": job.role, "cached": cached, "seconds": seconds, "in_worker": worker})
    return {
        "command": command,
        "models": models,
        "seconds_per_epoch": per_epoch,
        "workers": workers,
        "estimated_training_seconds": sum(m["seconds"] / (workers if m["in_worker"] else 1) for m in models),
    }


def _user_function_time(cfg: RunConfig, jobs: list[ModelJob]) -> dict[str, Any]:
    """``dp_training``: the user's function trains the target and (by default) the references, never cached; one
    call is timed on the target's records (a whole training: miaudit cannot time an epoch of user code) and
    scaled to each model's records."""
    from .dp import user_code

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
        {"role": job.role, "cached": False, "seconds": per_record * len(job.train_idx), "in_worker": False}
        for job in (jobs if by_function else jobs[:1])
    ]
    return {
        "command": f"dp-audit (your function {cfg.dp_training.function}, timed by one call)",
        "models": models,
        "seconds_per_epoch": {},
        "workers": 1,
        "estimated_training_seconds": sum(m["seconds"] for m in models),
    }


def _own_model_time(cfg: RunConfig, plan: Plan) -> dict[str, Any]:
    """A target the user trained (``target:``): only the references train, timed as the config's model trains
    on the members (the cache is not looked up)."""
    ds = datasets.load(cfg)
    one = cfg.model_copy(update={"train": cfg.train.model_copy(update={"epochs": 1})})
    recipe = builtin_recipe(one, ds, cfg.model)
    members = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()).members
    epoch = _epoch_seconds(recipe, ModelJob(role="reference", recipe=recipe, ds=ds, seed=0, train_idx=members), 0)
    models = [
        {"role": f"reference {k + 1}/{plan.references}", "cached": False, "seconds": epoch * cfg.train.epochs}
        for k in range(plan.references)
    ]
    return {
        "command": "run, your target",
        "models": models,
        "seconds_per_epoch": {"reference": epoch},
        "estimated_training_seconds": sum(m["seconds"] for m in models),
    }


def forecast(cfg: RunConfig, plan: Plan, halfwidth: float = 0.01, at_tpr: float = 0.05) -> dict[str, Any]:
    """Split sizes, the intervals and detectable TPR at 0.1% and 1% FPR, records needed, and the run time."""
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    n1, n0 = len(split.members), len(split.nonmembers)
    tests = sum(not a.info.is_ranking for a in plan.attacks) * 3  # the verdict's tests; 3 FPR levels: 0.1%, 1%, 5%
    per_level = {
        str(a): {
            "tpr_halfwidth_at_tpr": {f"{t:g}": power.tpr_halfwidth(t, n1) for t in (a, at_tpr, 0.2)},
            "smallest_detectable_tpr": power.smallest_detectable_tpr(n1, n0, a, tests),
            "false_positives_allowed": int(a * n0 + 1e-9),
            "nonmembers_for_reliable_level": power.nonmembers_for_level(a),
        }
        for a in LEVELS
    }
    return {
        "dataset": ds.name,
        "n_members": n1,
        "n_nonmembers": n0,
        "n_population": len(split.population),
        "attacks": [a.label for a in plan.attacks],
        "verdict_tests": tests,
        "levels": per_level,
        "members_for_halfwidth": {
            "halfwidth": halfwidth,
            "at_tpr": at_tpr,
            "members": power.members_for_halfwidth(at_tpr, halfwidth),
        },  # fmt: skip
        **(training_time(cfg, plan) if cfg.target is None else _own_model_time(cfg, plan)),
    }


def lines(f: dict[str, Any]) -> list[str]:
    """What ``miaudit plan`` prints."""
    out = [
        f"{f['dataset']}: {f['n_members']} members, {f['n_nonmembers']} non-members, {f['n_population']} population; "
        f"attacks {', '.join(f['attacks'])} ({f['verdict_tests']} verdict tests)",
    ]
    for level, p in f["levels"].items():
        widths = ", ".join(f"+-{100 * w:.1f} at TPR {100 * float(t):g}%" for t, w in p["tpr_halfwidth_at_tpr"].items())
        need = p["smallest_detectable_tpr"]
        out.append(
            f"TPR@{100 * float(level):g}%: interval {widths}; smallest TPR called a leak "
            + ("none (too few records)" if need is None else f"{100 * need:.1f}%")
            + f"; {p['false_positives_allowed']} false positives allowed"
            + (
                f" (unreliable: 10 need {p['nonmembers_for_reliable_level']} non-members)"
                if p["false_positives_allowed"] < 10
                else ""
            )
        )
    m = f["members_for_halfwidth"]
    out.append(f"members for TPR {100 * m['at_tpr']:g}% +-{100 * m['halfwidth']:g}: {m['members']}")
    out.append(_time_line(f))
    return out


def _time_line(f: dict[str, Any]) -> str:
    models = f["models"]
    if not models:
        return "training: no model to train"
    cached = sum(m["cached"] for m in models)
    if cached == len(models):
        return f"training: all {len(models)} models in the cache, nothing to train: about 0 s of training"
    left = len(models) - cached
    where = f"; {cached} of {len(models)} in the cache" if cached else ""
    workers = f.get("workers", 1)
    how = f" in {workers} worker processes" if workers > 1 else ""
    timed = " on one thread" if workers > 1 else ""
    epochs = ", ".join(f"{kind} {s:.2f} s per epoch (timed{timed})" for kind, s in f["seconds_per_epoch"].items())
    return (
        f"training ({f['command']}): about {f['estimated_training_seconds']:.0f} s for {left} model(s) to train"
        f"{how}{where}; {epochs}"
    )
