"""The engine every audit shares: plan -> data -> split -> models (cached) -> an Experiment.

``prepare`` builds a training run's Experiment, which the four audits read (the membership audit runs its attacks
on it, ``membership.run``; dataset inference measures on it); ``lay_out`` is that run before it trains, which
``miaudit plan`` reads. No math of its own. The target's membership (``is_member``) stays in the Experiment and is
only used to evaluate attack outputs; attacks receive the queries without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np

from . import data
from .attack_plan import Plan, build, config_roles
from .config.run import RunConfig
from .experiment import announce, budget, datasets, together, validate
from .experiment.base import AuditRecords, Experiment
from .experiment.build import reference_jobs, shuffled_queries, with_calibration_records, with_references
from .experiment.recipes import ModelJob, ModelRecipe, open_store, reference_recipe, target_job, trained_target
from .progress import ModelProgress, log

if TYPE_CHECKING:  # torch and the LM's texts load only where a user's model is audited
    pass


def prepare(cfg: RunConfig, plan: Plan | None = None) -> Experiment:
    """Plan the audit (before anything is loaded), load and split the data, then train (or load from
    the cache) the target and the reference models. With ``cfg.target`` the user's model is audited
    instead (``own_model``)."""
    plan = plan or build(cfg, config_roles(cfg))
    if cfg.target is not None:
        from .experiment import own_lm, own_model  # torch and the user's model: not needed by `miaudit score`

        if own_lm.audits_lm(cfg):
            return own_lm.from_config(cfg, plan)
        if cfg.target.endpoint is not None:
            from .endpoint.target import from_config

            return from_config(cfg, plan)
        return own_model.from_checkpoint(cfg, plan, cfg.target)
    store = open_store(cfg)  # first: decoded data is cached there too
    layout = lay_out(cfg, plan)
    bought = "" if layout.priced is None else f"{announce.loop_recipe(cfg)}; {layout.priced.sentence()}"
    announce.start(cfg, plan, layout.records, target_trains=True, references_by=bought)
    with ModelProgress(1 + plan.references) as tracker:  # one estimate of the time left over every model
        tracker.expect_cached(sum(job.in_store(store) for job in layout.jobs))
        # worker processes (models_at_once: auto on a CPU) train the target beside the references; Ray's tasks
        # train the references in with_references
        ready = together.ahead(store, layout.jobs, tracker, cfg.device) if cfg.executor.kind == "local" else {}
        target = ready.get(layout.target.role) or trained_target(
            cfg, layout.target.ds, layout.target.train_idx, store, tracker
        )
        return with_references(
            cfg, plan, layout.records, target, layout.reference_recipe, store, tracker, layout.other_pool, ready
        )


@dataclass(frozen=True)
class Layout:
    """A training run before it trains: the records' roles and every model it obtains (``miaudit plan`` reads
    it too)."""

    records: AuditRecords
    target: ModelJob
    references: list[ModelJob]
    reference_recipe: ModelRecipe
    other_pool: tuple[data.Dataset, np.ndarray] | None
    priced: budget.Priced | None = None  # references: {budget: B}: the design on this split

    @property
    def jobs(self) -> list[ModelJob]:
        return [self.target, *self.references]


def lay_out(cfg: RunConfig, plan: Plan) -> Layout:
    """Load and split the data, set the records' roles, and list the models (``cfg.target`` unset)."""
    ds = datasets.load(cfg)
    log.debug("data %s: %d records, %d classes, input shape %s", ds.name, len(ds), ds.n_classes, ds.input_shape)
    split = with_calibration_records(data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()), cfg)
    target_idx = split.members
    if cfg.canary_exposure is not None:  # appended records outside the split (miaudit.lm.canaries)
        from .lm import canaries
        from .lm.data import TextDataset

        # the config holds canaries for a causal LM miaudit trains only: its records are texts
        ds, target_idx = canaries.planted(cfg.canary_exposure, cast("TextDataset", ds), split.members)
    if cfg.nonmember_data is not None:
        ds, split = datasets.with_ood_nonmembers(cfg, ds, split)
    validate.check_min_fpr(cfg.min_fpr, len(split.nonmembers))
    query_idx, is_member = shuffled_queries(split, cfg.seed)
    other_pool = datasets.reference_pool(cfg, ds, split)  # reference_data: checked before any model trains
    records = AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)
    priced = None if cfg.reference_budget is None else budget.price(cfg, ds, split)
    recipe = reference_recipe(cfg, ds) if priced is None else budget.reference_recipe(cfg, ds, priced)
    references = reference_jobs(cfg, plan, records, recipe, other_pool)[0]
    return Layout(records, target_job(cfg, ds, target_idx), references, recipe, other_pool, priced)
