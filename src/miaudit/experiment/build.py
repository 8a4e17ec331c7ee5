"""The Experiment of an audit whose references miaudit trains: the records' roles (calibration records,
queries in a seeded order), then the reference models on random halves of their pool.

The target comes from ``recipes.trained_target`` (``pipeline.prepare``), the user (``own_model``) or
canaries (``dp.one_run``); every path ends in ``with_references``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import data
from ..attack_plan import Plan
from ..config.run import RunConfig
from ..data import Dataset, Split
from ..progress import ModelProgress, log
from ..training import executor
from ..training.store import Store
from . import budget
from .base import AuditRecords, Experiment, TrainedModel
from .recipes import ModelJob, ModelRecipe, model_seed
from .together import chunks, obtain_all, stack_size, train_stack_into_store


def with_calibration_records(split: Split, cfg: RunConfig) -> Split:
    """The split with calibration records: its validation part, or, when that is empty and calibration is
    on, ``calibration.fraction`` of the population held out from every model (docs/conventions.md)."""
    if cfg.calibration is None or len(split.validation):
        return split
    return data.hold_out_validation(split, cfg.calibration.fraction, cfg.seed)


def shuffled_queries(split: Split, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Members and non-members in one random order, and which is which (kept from the attacks)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x9E]))
    query_idx = rng.permutation(np.concatenate([split.members, split.nonmembers]))
    return query_idx, np.isin(query_idx, split.members)


def reference_jobs(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    recipe: ModelRecipe,
    other_pool: tuple[Dataset, np.ndarray] | None = None,
) -> tuple[list[ModelJob], np.ndarray, np.ndarray]:
    """The reference models the plan uses, each on a random half of its pool (``with_references``), and the
    pool and the masks: offline, the pool is the population; online it also holds the queries (each IN for half
    the models); ``other_pool`` (a data set holding the target's records then others, and the indices of those
    others) replaces it."""
    ds, split, query_idx = records.dataset, records.split, records.query_idx
    online = cfg.mode == "online"
    pool_idx = np.sort(np.concatenate([split.population, query_idx])) if online else split.population
    ref_ds = ds
    if other_pool is not None:
        ref_ds, pool_idx = other_pool
    ref_masks = data.reference_subsets(len(pool_idx), plan.references, cfg.seed, balanced=online)
    if cfg.reference_budget is not None:  # the design's records: a seeded subset of each half
        ref_masks = budget.thinned(ref_masks, budget.price(cfg, ds, split).bought.records, cfg.seed)
    jobs = [
        ModelJob(
            role=f"reference {k + 1}/{plan.references}",
            recipe=recipe,
            ds=ref_ds,
            seed=model_seed(cfg.seed, k + 1),
            train_idx=pool_idx[ref_masks[k]],
        )
        for k in range(plan.references)
    ]
    return jobs, pool_idx, ref_masks


def with_references(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    target: TrainedModel,
    recipe: ModelRecipe,
    store: Store,
    progress: ModelProgress | None = None,
    other_pool: tuple[Dataset, np.ndarray] | None = None,
    ready: Mapping[str, TrainedModel] | None = None,
) -> Experiment:
    """Train (or load) the reference models the plan uses (``reference_jobs``), in stacks where the recipe
    allows (``together.obtain_all``), and assemble the experiment. ``progress`` counts the models (default:
    these references only). ``other_pool`` (a data set holding the target's records then others, and the
    indices of those others) replaces the pool: the references train on another population (``shift``).
    ``ready``: references already obtained (``together.ahead``), by role."""
    ds = records.dataset
    jobs, pool_idx, ref_masks = reference_jobs(cfg, plan, records, recipe, other_pool)
    ref_ds = None if other_pool is None else other_pool[0]
    if cfg.executor.kind != "local" and recipe.cache_spec is not None:
        # the executor's tasks train into the store, a stack each; the call below loads them
        import torch

        size = stack_size(recipe, ref_ds or ds, jobs, cfg.device)
        tasks = [([jobs[i] for i in chunk],) for chunk in chunks(list(range(len(jobs))), size)]
        shared = (str(store.root), recipe, ref_ds or ds, cfg.device, torch.get_num_threads())
        executor.run_tasks(cfg.executor, train_stack_into_store, shared, tasks, log=log.info)
    with progress or ModelProgress(plan.references) as tracker:
        if progress is None:
            tracker.expect_cached(sum(job.in_store(store) for job in jobs))
        refs = obtain_all(store, recipe, ref_ds or ds, jobs, tracker, cfg.device, ready)
    if ref_ds is not None:  # the references' logits on the target's records: the first len(ds) of theirs
        for r in refs:
            r.logits = r.logits[: len(ds)]
    return Experiment(
        cfg=cfg,
        plan=plan,
        records=records,
        device=cfg.device,
        target=target,
        references=refs,
        executor=cfg.executor,
        pool_idx=pool_idx,
        ref_masks=ref_masks,
        ref_dataset=ref_ds,
        query_augment=cfg.queries.augment,
    )
