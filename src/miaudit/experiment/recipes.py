"""Obtaining one model: how it is built and trained (``ModelRecipe``), and the cache that trains it once.

``obtain`` loads a model from the content-addressed store (``training.store``) when it was finished
before, else trains it now and stores it; the store's lock per entry makes concurrent runs train each
model once. ``builtin_recipe`` describes a built-in architecture trained by miaudit's loop, fully, so
its cache key says everything that fixes the weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import data, lm
from ..config.run import RunConfig, TrainConfig
from ..data import Dataset
from ..progress import ModelProgress, log
from ..training.options import DPConfig
from ..training.store import ModelEntry, Store, indices_digest
from .base import TrainedModel

if TYPE_CHECKING:  # torch, the models and the training loop load with the first model trained or read
    import torch

    from ..training.loop import ProgressFn, TrainReport


@dataclass(frozen=True, kw_only=True)
class ModelRecipe:
    """How to obtain one trained model: a fresh module and the loop that trains it in place.

    ``cache_spec`` holds what fixes the weights besides data, training indices and seed;
    None when user code builds or trains the model, which miaudit cannot hash: never cached."""

    architecture: str
    build: Callable[[], torch.nn.Module]
    fit: Callable[[torch.nn.Module, np.ndarray, np.ndarray, int, ProgressFn], TrainReport]
    epochs: int | None = None  # progress-bar length (None: unknown)
    cache_spec: dict | None = None
    together: TrainConfig | None = None  # the training config when models of it can train stacked (``together``)


def model_seed(seed: int, role: int) -> int:
    return int(np.random.SeedSequence([seed, role]).generate_state(1)[0])


def builtin_recipe(
    cfg: RunConfig, ds: Dataset, arch: str, head_dropout: float = 0.0, dp: DPConfig | None = None
) -> ModelRecipe:
    """An architecture by name trained by miaudit's loop with ``cfg.train`` (DP-SGD with ``dp``): fully
    described, so cached. ``head_dropout`` > 0 trains with dropout before the head (the plan asks it of the
    references when an attack samples them by MC Dropout). Options at their defaults (fp32, augment none,
    no dropout, no DP) are left out of the cache key, so models trained before the options existed keep
    their keys; so is ``loader_workers``, which never changes the weights."""
    if lm.is_causal_lm(arch):  # trained by the same loop: the sequence logits' cross-entropy is the LM loss
        build, fit, epochs, cache_spec = lm.recipe(cfg.train, cfg.device, ds, arch)
        return ModelRecipe(architecture=arch, build=build, fit=fit, epochs=epochs, cache_spec=cache_spec)
    from ..models import adapters, build_model, io
    from ..training.loop import train

    # models_at_once and stack_memory_mb change the weights by float rounding only (training/stacked.py), as
    # another machine would: a model trained in a stack serves a run training one at a time, and back
    defaults = {"dp", "loader_workers", "base", "models_at_once", "stack_memory_mb"}
    defaults |= {"precision"} if cfg.train.precision == "fp32" else set()
    defaults |= {"optimizer"} if cfg.train.optimizer == "sgd" else set()
    defaults |= {"augment"} if cfg.train.augment == "none" else set()
    defaults |= {"label_smoothing"} if cfg.train.label_smoothing == 0 else set()
    spec: dict[str, Any] = {
        "arch": arch,
        "input_shape": ds.input_shape,
        "n_classes": ds.n_classes,
        "train": cfg.train.model_dump(exclude=defaults),
    }
    if head_dropout > 0:
        spec["head_dropout"] = head_dropout
    if adapters.is_adapter_name(arch):
        spec["arch_source"] = adapters.source_digest(arch)
    elif io.is_import_path(arch):
        spec["arch_source"] = io.source_digest(arch)
    if dp is not None:
        from ..training import dp_sgd

        return ModelRecipe(
            architecture=arch,
            build=lambda: dp_sgd.compatible(build_model(arch, ds.input_shape, ds.n_classes)),
            fit=lambda m, x, y, seed, progress: dp_sgd.train_dp(m, x, y, cfg.train, dp, seed, cfg.device, progress),
            epochs=cfg.train.epochs,
            cache_spec={
                **spec,
                "dp": {  # a planted fault as given (its unset kinds left out: the keys of older faults stay)
                    **dp.model_dump(exclude={"references", "planted_fault"}),
                    **({"planted_fault": dp.planted_fault.kinds()} if dp.planted_fault else {}),
                },
            },
        )
    return ModelRecipe(
        architecture=arch,
        build=lambda: build_model(arch, ds.input_shape, ds.n_classes, head_dropout=head_dropout),
        fit=lambda m, x, y, seed, progress: train(m, x, y, cfg.train, seed, cfg.device, progress),
        epochs=cfg.train.epochs,
        cache_spec=spec,
        together=cfg.train,
    )


def reference_recipe(cfg: RunConfig, ds: Dataset, head_dropout: float = 0.0) -> ModelRecipe:
    """The reference models' recipe: not DP unless ``train.dp.references``."""
    dp = cfg.train.dp if cfg.train.dp is not None and cfg.train.dp.references else None
    return builtin_recipe(cfg, ds, cfg.reference_architecture, head_dropout, dp)


@dataclass(frozen=True, kw_only=True)
class ModelJob:
    """One model a run obtains, known before anything trains: what ``miaudit plan`` times and looks up in the
    cache, and what the progress display counts as to train or cached."""

    role: str
    recipe: ModelRecipe
    ds: Dataset
    seed: int
    train_idx: np.ndarray

    def in_store(self, store: Store) -> bool:
        """Whether ``obtain`` would load it from ``store`` (a finished entry) rather than train it."""
        if self.recipe.cache_spec is None:
            return False
        return entry_for(store, self.recipe, self.ds, self.seed, self.train_idx)[0].meta_path.is_file()


def target_job(cfg: RunConfig, ds: Dataset, train_idx: np.ndarray, role: str = "target") -> ModelJob:
    """The target (DP-SGD with ``train.dp``) on ``train_idx``."""
    recipe = builtin_recipe(cfg, ds, cfg.model, dp=cfg.train.dp)
    return ModelJob(role=role, recipe=recipe, ds=ds, seed=model_seed(cfg.seed, 0), train_idx=train_idx)


def trained_target(
    cfg: RunConfig,
    ds: Dataset,
    train_idx: np.ndarray,
    store: Store,
    progress: ModelProgress | None = None,
    role: str = "target",
) -> TrainedModel:
    """The target (DP-SGD with ``train.dp``) trained on ``train_idx``, or loaded from the cache."""
    job = target_job(cfg, ds, train_idx, role)
    with progress or ModelProgress(1) as tracker:
        if progress is None:
            tracker.expect_cached(job.in_store(store))
        return obtain(store, job.recipe, ds, role, job.seed, train_idx, tracker, cfg.device)


def obtain(
    store: Store,
    recipe: ModelRecipe,
    ds: Dataset,
    role: str,
    seed: int,
    train_idx: np.ndarray,
    progress: ModelProgress,
    device: str = "cpu",
) -> TrainedModel:
    """A model trained on ``train_idx``: loaded from the cache when finished before, else trained now;
    either way counted by ``progress``."""
    from ..training.loop import predict_logits, seeded_model

    def trained_now() -> TrainedModel:
        module = seeded_model(recipe.build, seed)
        epochs = progress.training(role, recipe.epochs)
        report: TrainReport = recipe.fit(module, ds.x[train_idx], ds.y[train_idx], seed, epochs)
        logits = predict_logits(module, ds.x, device=device)
        progress.finished(role, report.seconds, cached=False)
        return kept(recipe, role, train_idx, module.eval(), logits, report, cached=False)

    if recipe.cache_spec is None:
        return trained_now()
    entry, spec = entry_for(store, recipe, ds, seed, train_idx)
    # Locked while loading or training: a concurrent run needing the same model waits, then loads it.
    with store.lock(entry, waiting=lambda: log.info("%s: waiting for another run training it", role)):
        hit = loaded(store, entry, recipe, role, train_idx, progress)
        if hit is not None:
            return hit
        model = trained_now()
        save(store, entry, spec, model)
    return model


def entry_for(
    store: Store, recipe: ModelRecipe, ds: Dataset, seed: int, train_idx: np.ndarray
) -> tuple[ModelEntry, dict[str, Any]]:
    """The store entry of a cached recipe's model, and its spec (what fixes its weights)."""
    assert recipe.cache_spec is not None
    spec = {"data": ds.fingerprint, **recipe.cache_spec, "train_idx": indices_digest(train_idx), "seed": seed}
    return store.entry(spec), spec


def kept(
    recipe: ModelRecipe,
    role: str,
    train_idx: np.ndarray,
    module: torch.nn.Module,
    logits: np.ndarray,
    report: TrainReport,
    cached: bool,
) -> TrainedModel:
    return TrainedModel(
        role=role,
        module=module,
        logits=logits,
        train_idx=train_idx,
        seconds=report.seconds,
        train_accuracy=report.train_accuracy,
        privacy=report.privacy,
        cached=cached,
        architecture=recipe.architecture,
    )


def loaded(
    store: Store,
    entry: ModelEntry,
    recipe: ModelRecipe,
    role: str,
    train_idx: np.ndarray,
    progress: ModelProgress,
    workers: int = 0,
) -> TrainedModel | None:
    """The finished model in ``entry`` (counted by ``progress``), or None to train it; call holding its lock.
    ``workers`` > 0: a worker process (of that many) trained it for this run just now: counted as trained."""
    from ..training.loop import TrainReport

    hit = store.load(entry, recipe.build, role)
    if hit is None:
        return None
    # the logits stay memory-mapped (float32): rows are read when an attack's inputs are built
    stored = TrainReport(hit.meta["seconds"], hit.meta["train_accuracy"], hit.meta.get("privacy"))
    cached = workers == 0
    progress.finished(role, stored.seconds, cached=cached, workers=max(workers, 1))
    return kept(recipe, role, train_idx, hit.module, hit.logits, stored, cached=cached)


def save(store: Store, entry: ModelEntry, spec: dict[str, Any], model: TrainedModel) -> None:
    """A model just trained into its entry (call holding its lock)."""
    assert model.module is not None  # trained here: never outputs only
    meta = {"role": model.role, "spec": spec, "seconds": model.seconds, "train_accuracy": model.train_accuracy}
    meta.update({"privacy": model.privacy} if model.privacy else {})
    store.save(entry, model.module, meta, model.logits.astype(np.float32))


def open_store(cfg: RunConfig) -> Store:
    return Store(cfg.cache_dir or data.default_cache_dir()).check_access()  # refused, or read-only, now
