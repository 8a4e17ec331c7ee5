"""Auditing a model the user trained: no target is trained, its weights come in.

Both front doors end in ``audit_given``: the config (``target: {architecture,
checkpoint}`` with member/non-member or query index files, ``from_checkpoint``)
and the Python API (a module and arrays, ``miaudit.api``). Records the auditor
does not ask about are taken as data the target never saw: the population the
reference models train on and a validation split, in the proportion of the
config's ``split.population : split.validation``.

Order matters: the checkpoint is read first (a pickle is refused before
anything else happens), every input check runs before the first reference
model trains, and nothing is written here at all.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch.nn as nn

from ..attack_plan import Plan
from ..config.run import RunConfig, TargetConfig
from ..data import Dataset, Split
from ..data.files import load_indices
from ..errors import ConfigError, DataError, ModelError
from ..models import build_model, io
from ..progress import log
from ..training.loop import ProgressFn, TrainReport, accuracy, predict_logits, train
from . import announce, datasets, validate
from .base import AuditRecords, Experiment, TrainedModel
from .build import shuffled_queries, with_calibration_records, with_references
from .recipes import ModelRecipe, open_store, reference_recipe

MIN_POOL = 4  # each reference model trains on a random half of the pool: at least 2 records


def remainder_split(rest: np.ndarray, cfg: RunConfig) -> tuple[np.ndarray, np.ndarray]:
    """(population, validation) out of the records nobody asked about, seeded."""
    p, v = cfg.split.population, cfg.split.validation
    n_val = int(np.floor(len(rest) * v / (p + v))) if p + v > 0 else 0
    perm = np.random.default_rng(np.random.SeedSequence([cfg.seed, 0x7E57])).permutation(rest)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def membership_from_files(
    cfg: RunConfig, ds: Dataset, unusable: np.ndarray | None = None
) -> tuple[Split, np.ndarray, np.ndarray | None]:
    """The split, the queries and their membership (None: unknown) from the config's index files; records
    ``unusable`` (texts with nothing to predict) join neither the population nor validation."""
    n, empty = len(ds), np.zeros(0, dtype=np.int64)
    if cfg.queries.indices is not None:
        members, nonmembers = empty, empty
        audited = validate.nonempty(load_indices(cfg.queries.indices, "queries", n), "queries")
    elif cfg.members is not None and cfg.nonmembers is not None:  # the config gives both or neither
        members = validate.nonempty(load_indices(cfg.members, "members", n), "members")
        nonmembers = validate.nonempty(load_indices(cfg.nonmembers, "nonmembers", n), "nonmembers")
        validate.check_disjoint_indices(members, nonmembers)
        validate.check_disjoint_rows(
            (ds.x[members], ds.y[members], members), (ds.x[nonmembers], ds.y[nonmembers], nonmembers)
        )
        audited = np.concatenate([members, nonmembers])
    else:
        raise ConfigError(
            "members: to audit target.checkpoint, give members and nonmembers index files (records it "
            "trained on and records it did not), or queries (records of unknown membership)"
        )
    left_out = audited if unusable is None else np.concatenate([audited, unusable])
    population, validation = remainder_split(np.setdiff1d(np.arange(n), left_out), cfg)
    given = Split(
        members=np.sort(members), nonmembers=np.sort(nonmembers), population=population, validation=validation
    )
    split = with_calibration_records(given, cfg)
    if cfg.queries.indices is not None:
        return split, audited, None
    return (split, *shuffled_queries(split, cfg.seed))


def _with_checkpoint_classes(ds: Dataset, state: io.StateDict) -> Dataset:
    """A built-in head (``head.weight``) says how many classes the target has; labels must fit them."""
    head = state.get("head.weight")
    if head is None or head.ndim != 2 or head.shape[0] == ds.n_classes:
        return ds
    n_classes = int(head.shape[0])
    if ds.n_classes > n_classes:
        raise DataError(
            f"dataset: labels go up to {ds.n_classes - 1} but the target has {n_classes} outputs; "
            f"labels must be in [0, {n_classes})"
        )
    return Dataset(ds.name, ds.x, ds.y, n_classes)


def from_checkpoint(cfg: RunConfig, plan: Plan, target: TargetConfig) -> Experiment:
    """The experiment for ``target: {architecture, checkpoint}`` (``cfg.target``): load, check, train the
    references."""
    assert target.checkpoint is not None  # the config requires one but for an hf: causal LM (experiment.own_lm)
    state = io.read_state_dict(target.checkpoint)
    ds = _with_checkpoint_classes(datasets.load(cfg), state)
    split, query_idx, is_member = membership_from_files(cfg, ds)
    records = AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)
    arch = cfg.target_architecture
    module = io.load_weights(build_model(arch, ds.input_shape, ds.n_classes), state, arch)
    recipe, by = with_train_fn(reference_recipe(cfg, ds, plan.head_dropout), target.train_fn)
    source = f"checkpoint {Path(target.checkpoint).name}"
    return audit_given(cfg, plan, records, module, recipe, source=source, architecture=arch, references_by=by)


def with_train_fn(recipe: ModelRecipe, train_fn: str | None) -> tuple[ModelRecipe, str]:
    """The references' recipe with ``target.train_fn`` (user code: never cached, miaudit cannot hash it) when
    the config names one, and who trains them ("": miaudit's loop)."""
    if train_fn is None:
        return recipe, ""
    return replace(recipe, fit=user_fit(io.import_factory(train_fn)), cache_spec=None), f"train_fn {train_fn}"


UserTrainFn = Callable[["nn.Module", np.ndarray, np.ndarray], object]  # a user's train_fn(model, x, y)


def user_fit(train_fn: UserTrainFn) -> Callable[..., TrainReport]:
    """A user's ``train_fn(model, x, y)`` as a recipe's fit: timed, its training accuracy measured."""

    def fit(model: nn.Module, x: np.ndarray, y: np.ndarray, seed: int, progress: ProgressFn) -> TrainReport:
        start = time.perf_counter()
        train_fn(model, x, y)  # torch's RNG was seeded with ``seed`` just before the model was built
        seconds = time.perf_counter() - start
        return TrainReport(seconds, accuracy(predict_logits(model, x), y))

    return fit


def _check_models(plan: Plan, ds: Dataset, module: nn.Module, recipe: ModelRecipe, reference_field: str) -> None:
    """The target and a fresh reference model fit the data and the attacks, checked on a dry forward pass."""
    n_classes = validate.model_classes(module, ds.x, "target")
    if n_classes != ds.n_classes:
        raise ModelError(f"target: outputs {n_classes} classes, the data has {ds.n_classes}")
    probe = recipe.build() if plan.references else None
    if probe is not None and (probe_classes := validate.model_classes(probe, ds.x, reference_field)) != n_classes:
        raise ModelError(f"{reference_field}: builds models with {probe_classes} outputs, the target has {n_classes}")
    attack = plan.needs_last_layer
    if attack is not None:
        validate.check_last_layer(module, ds.x, "target", attack)
        if probe is not None:
            validate.check_last_layer(probe, ds.x, reference_field, attack)


def check_pool(plan: Plan, split: Split, query_idx: np.ndarray) -> None:
    pool = len(split.population) + (len(query_idx) if plan.mode == "online" else 0)
    if plan.references and pool < MIN_POOL:
        raise DataError(
            f"population: {pool} record(s) cannot train {plan.references} reference model(s) on random "
            f"halves; give at least {MIN_POOL}"
        )


def check_roles(plan: Plan, split: Split) -> None:
    """The record sets the plan counted on are there (records left over for them may run out)."""
    for role in sorted(plan.roles):
        if not len(getattr(split, role)):
            raise DataError(f"{role}: no records are left for it once members and non-members are set aside")


def audit_given(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    module: nn.Module,
    recipe: ModelRecipe,
    *,
    source: str,
    architecture: str,
    reference_field: str = "reference_model",
    record_name: Callable[[int], str] = lambda i: f"record {i}",
    references_by: str = "",
) -> Experiment:
    """Check everything, then wrap the user's model as the target and train the references (by
    ``references_by``, the user's training code; empty: miaudit's loop, which is warned about)."""
    ds, split, query_idx, is_member = records.dataset, records.split, records.query_idx, records.is_member
    if is_member is not None:
        validate.check_min_fpr(cfg.min_fpr, int((~is_member).sum()))
    elif cfg.min_fpr is not None:
        raise ConfigError("min_fpr: needs members and nonmembers; queries of unknown membership give no ROC")
    check_roles(plan, split)
    check_pool(plan, split, query_idx)
    _check_models(plan, ds, module, recipe, reference_field)
    logits = predict_logits(module, ds.x, device=cfg.device)
    validate.check_logits(logits, "target", record_name)
    train_acc = accuracy(logits[split.members], ds.y[split.members])
    target = TrainedModel(
        role="target",
        module=module.eval(),
        logits=logits,
        train_idx=split.members,
        seconds=0.0,
        train_accuracy=train_acc,
        cached=False,
        architecture=architecture,
        source=source,
    )
    store = open_store(cfg)
    announce.start(
        cfg, plan, records, target_trains=False, references_by=references_by, reference_model=recipe.architecture
    )
    if plan.references and not references_by:
        log.warning(
            "references: %s; not the recipe that trained your target, which skews the attacks if it differs "
            "(name yours: target.train_fn: module:function, or train_fn= in the Python API)",
            announce.loop_recipe(cfg),
        )
    exp = with_references(cfg, plan, records, target, recipe, store)
    for ref in exp.references:
        ref.source = references_by or "trained"
    return exp


def reinitialised_copy(model: nn.Module) -> nn.Module:
    """The target's architecture with fresh weights: a copy whose every layer runs ``reset_parameters``."""
    try:
        clone = copy.deepcopy(model)
    except Exception as e:  # a module holding something uncopyable (a file, a lock ...)
        raise ModelError(
            f"model_factory: cannot copy the target ({type(e).__name__}: {e}); pass model_factory"
        ) from None
    for layer_name, layer in clone.named_modules():
        own = list(layer.parameters(recurse=False))
        if own and not hasattr(layer, "reset_parameters"):
            raise ModelError(
                f"model_factory: cannot re-initialise {type(layer).__name__} {layer_name!r} of the target "
                "(no reset_parameters); pass model_factory to build fresh models"
            )
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    return clone


def user_recipe(
    cfg: RunConfig, target: nn.Module, model_factory: Callable[[], nn.Module] | None, train_fn: UserTrainFn | None
) -> ModelRecipe:
    """The references of ``miaudit.audit``'s own model: ``model_factory``'s, else fresh copies of the target
    (``reinitialised_copy``); trained by ``train_fn``, else miaudit's loop. User code builds or trains these
    models, so they are never cached."""
    build = model_factory or (lambda: reinitialised_copy(target))
    fit = (
        user_fit(train_fn)
        if train_fn is not None
        else (lambda m, x, y, seed, progress: train(m, x, y, cfg.train, seed, cfg.device, progress))
    )
    epochs = None if train_fn else cfg.train.epochs
    return ModelRecipe(architecture=type(target).__name__, build=build, fit=fit, epochs=epochs)
