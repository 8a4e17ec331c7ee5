"""Many models of one recipe (the references): the finished ones loaded from the store, the others
trained together, and stored one entry each, exactly as models trained one at a time. Together means
stacks (``training/stacked.py``, ``train.models_at_once``: N, or auto on an accelerator) or, with auto on a
CPU, worker processes forked from this one, one model each at a time with one torch thread
(``worker_processes``): on a CPU the idle hardware is the other cores, which one small model's matrix
products (two threads: 1.2x one) use poorly, and a stack saves only per-step overhead there
(``benchmarks/together/train_cpu_threads.md``).

Resumption: models already in the store are loaded first, so a run interrupted after some stacks (or
some models) trains only the rest. Each stack's members are saved the moment the stack finishes.
Concurrency: a stack takes each member's entry lock without waiting; a member another run holds is
left out of the stack and obtained one at a time afterwards (waiting for that run, then loading it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

import numpy as np

from ..data import Dataset
from ..progress import ModelProgress
from ..training.store import Store
from .base import TrainedModel
from .recipes import ModelJob, ModelRecipe, entry_for, kept, loaded, obtain, save


def stack_size(recipe: ModelRecipe, ds: Dataset, jobs: Sequence[ModelJob], device: str) -> int:
    """How many of ``jobs`` train in one stack: 1 when the recipe cannot stack (user code, DP-SGD, a
    causal LM, ``models_at_once: 1``), else ``models_at_once`` cut to the memory budget."""
    cfg = recipe.together
    if cfg is None or recipe.cache_spec is None or cfg.models_at_once == 1 or len(jobs) < 2:
        return 1
    from ..progress import log
    from ..training import stacked

    probe = recipe.build()
    why = stacked.why_not_stackable(probe, cfg)
    if why is None and cfg.models_at_once == "auto":
        why = stacked.why_not_by_default(probe, device)
    if why is not None:
        log.info("models trained one at a time: %s", why)
        return 1
    return stacked.members_that_fit(probe, ds.x[jobs[0].train_idx], cfg, device, len(jobs))


def worker_processes(recipe: ModelRecipe, models: int, device: str) -> int:
    """How many worker processes train ``models`` of ``recipe`` at once: with ``models_at_once: auto`` on a CPU,
    one per torch thread this process may use (capped by its cores and the models; ``OMP_NUM_THREADS=1`` or
    ``torch.set_num_threads(1)`` keeps a run on one core), each worker with one thread; else 1 (this process).
    Only for recipes the store caches: a worker hands its model back through the store."""
    import torch

    from ..training import executor

    cfg = recipe.together
    if cfg is None or cfg.models_at_once != "auto" or recipe.cache_spec is None or models < 2:
        return 1
    if torch.device(device).type != "cpu" or not executor.can_fork():
        return 1
    return max(1, min(models, torch.get_num_threads(), executor.usable_cores()))


def worker_jobs(store: Store, jobs: Sequence[ModelJob], device: str) -> tuple[list[int], int]:
    """Which of ``jobs`` worker processes would train (those ``worker_processes`` allows and the store does not
    hold yet), by index, and how many workers; no worker (1) when fewer than two such models are left."""
    todo = [i for i, j in enumerate(jobs) if worker_processes(j.recipe, 2, device) > 1 and not j.in_store(store)]
    workers = worker_processes(jobs[todo[0]].recipe, len(todo), device) if todo else 1
    return (todo, workers) if workers > 1 else ([], 1)


def ahead(store: Store, jobs: Sequence[ModelJob], progress: ModelProgress, device: str) -> dict[str, TrainedModel]:
    """The models of ``jobs`` (a run's target and references) that worker processes train (``worker_jobs``),
    trained now, all at once, and loaded: by role (``obtain_all``'s ``ready``). The target trains beside the
    references instead of before them."""
    if store.read_only:
        return {}
    todo, workers = worker_jobs(store, jobs, device)
    if not todo:
        return {}
    trained = _in_workers(store, [jobs[i] for i in todo], workers, progress, device)
    return {jobs[i].role: model for i, model in zip(todo, trained, strict=True) if model is not None}


def _in_workers(
    store: Store, jobs: Sequence[ModelJob], workers: int, progress: ModelProgress, device: str
) -> list[TrainedModel | None]:
    """``jobs``' models trained into the store by ``workers`` forked processes, one at a time in each, with one
    torch thread; each loaded here and counted by ``progress`` as its worker finishes it (None: the store could
    not give it back; then trained here). A worker trains through ``obtain``, so the store's entry locks and
    resumption hold as in this process; a worker finding a model another run trained reports it cached."""
    from ..training import executor

    models: list[TrainedModel | None] = [None] * len(jobs)

    def train(k: int) -> bool:  # in a worker: whether the model was in the store already
        job = jobs[k]
        with ModelProgress(1) as quiet:
            return obtain(store, job.recipe, job.ds, job.role, job.seed, job.train_idx, quiet, device).cached

    def collect(k: int, cached: bool) -> None:  # here, as each worker's model is in the store
        job = jobs[k]
        entry = entry_for(store, job.recipe, job.ds, job.seed, job.train_idx)[0]
        with store.lock(entry):
            models[k] = loaded(store, entry, job.recipe, job.role, job.train_idx, progress, 0 if cached else workers)

    progress.in_workers(workers)
    executor.forked(train, len(jobs), workers, collect)
    return models


def chunks(items: Sequence[int], size: int) -> list[list[int]]:
    """``items`` cut into consecutive chunks of at most ``size``, as even as possible (16 by 12: 8 and 8)."""
    if not items:
        return []
    n = -(-len(items) // size)
    bounds = np.linspace(0, len(items), n + 1).round().astype(int)
    return [list(items[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def obtain_all(
    store: Store,
    recipe: ModelRecipe,
    ds: Dataset,
    jobs: Sequence[ModelJob],
    progress: ModelProgress,
    device: str = "cpu",
    ready: Mapping[str, TrainedModel] | None = None,
) -> list[TrainedModel]:
    """Every job's model, in order: ``ready``'s by role (obtained by ``ahead``; None: ``ahead`` runs here), else
    loaded when finished before, else trained (in stacks where the recipe allows); each counted by ``progress``."""
    if ready is None:
        ready = ahead(store, jobs, progress, device)
    rest = [j for j in jobs if j.role not in ready]
    # only the models still to train decide (and say) how they train: a rerun that loads them all says nothing
    size = stack_size(recipe, ds, [j for j in rest if not j.in_store(store)], device)
    if size == 1 or store.read_only:
        here = [obtain(store, recipe, ds, j.role, j.seed, j.train_idx, progress, device) for j in rest]
    else:
        here = _in_stacks(store, recipe, ds, rest, size, progress, device)
    got = iter(here)
    return [ready[j.role] if j.role in ready else next(got) for j in jobs]


def _in_stacks(
    store: Store,
    recipe: ModelRecipe,
    ds: Dataset,
    jobs: Sequence[ModelJob],
    size: int,
    progress: ModelProgress,
    device: str,
) -> list[TrainedModel]:
    """``jobs``' models: loaded when finished before, the rest trained in stacks of at most ``size``."""
    models: list[TrainedModel | None] = [None] * len(jobs)
    pending: dict[int, list[int]] = {}  # training-set size -> jobs left to train (a stack needs equal sizes)
    for i, job in enumerate(jobs):  # the finished ones first: a resumed run trains only the rest
        if entry_for(store, recipe, ds, job.seed, job.train_idx)[0].meta_path.is_file():
            models[i] = obtain(store, recipe, ds, job.role, job.seed, job.train_idx, progress, device)
        else:
            pending.setdefault(len(job.train_idx), []).append(i)
    for group in pending.values():
        for chunk in chunks(group, size):
            for i, model in zip(chunk, _stack(store, recipe, ds, [jobs[i] for i in chunk], progress, device)):
                models[i] = model
    # left out of a stack (another run held the entry, or it was damaged): one at a time, waiting for that run
    return [
        m if m is not None else obtain(store, recipe, ds, j.role, j.seed, j.train_idx, progress, device)
        for m, j in zip(models, jobs, strict=True)
    ]


def _stack(
    store: Store, recipe: ModelRecipe, ds: Dataset, jobs: Sequence[ModelJob], progress: ModelProgress, device: str
) -> list[TrainedModel | None]:
    """The jobs' models from one stack (None for a job whose entry another run holds)."""
    from ..training.loop import predict_logits, seeded_model
    from ..training.stacked import Member, train_together

    assert recipe.together is not None
    out: list[TrainedModel | None] = [None] * len(jobs)
    with ExitStack() as held:
        todo = []
        for i, job in enumerate(jobs):
            entry, spec = entry_for(store, recipe, ds, job.seed, job.train_idx)
            if not held.enter_context(store.lock(entry, wait=False)):
                continue  # another run trains it: obtained after the stacks
            out[i] = loaded(store, entry, recipe, job.role, job.train_idx, progress)  # finished meanwhile
            if out[i] is None:
                todo.append((i, entry, spec))
        if not todo:
            return out
        members = [
            Member(
                seeded_model(recipe.build, jobs[i].seed), ds.x[jobs[i].train_idx], ds.y[jobs[i].train_idx], jobs[i].seed
            )
            for i, _, _ in todo
        ]
        roles = [jobs[i].role for i, _, _ in todo]
        epochs = progress.training(_together(roles), recipe.epochs)
        reports = train_together(members, recipe.together, device, epochs)
        for (i, entry, spec), member, report in zip(todo, members, reports, strict=True):
            logits = predict_logits(member.model, ds.x, device=device)
            model = kept(recipe, jobs[i].role, jobs[i].train_idx, member.model.eval(), logits, report, cached=False)
            save(store, entry, spec, model)
            out[i] = model
            progress.finished(jobs[i].role, report.seconds, cached=False, together=len(todo))
    return out


def _together(roles: Sequence[str]) -> str:
    """'references 1-16/16 together' for a stack's progress line."""
    if len(roles) == 1:
        return roles[0]
    first, last = roles[0], roles[-1]
    head, _, tail = first.rpartition(" ")
    if head and last.startswith(head + " "):
        return f"{head}s {tail.split('/')[0]}-{last.rpartition(' ')[2]} together"
    return f"{first} .. {last} together"


def train_stack_into_store(
    root: str, recipe: ModelRecipe, ds: Dataset, device: str, threads: int, jobs: Sequence[ModelJob]
) -> list[bool]:
    """An executor task: ``jobs`` trained together into the store at ``root`` (the driver loads them after);
    for each, whether it was already there. Torch uses the driver's thread count."""
    import torch

    torch.set_num_threads(threads)
    with ModelProgress(len(jobs)) as progress:
        return [m.cached for m in obtain_all(Store(Path(root)), recipe, ds, jobs, progress, device)]
