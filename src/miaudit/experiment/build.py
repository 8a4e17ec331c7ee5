"""The models stage: the target and the reference models, trained by miaudit or loaded from the
cache (``store``), and the ``Experiment`` that holds them with the data, the split and the plan.

No attack math here: ``Experiment.attack_inputs`` hands the attacks plain arrays. The
target's membership (``is_member``) stays in the Experiment and is only used to
evaluate attack outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .. import data, lm
from ..attacks import AttackInputs, ModelAccess, RecordSet
from ..config.options import ExecutorConfig
from ..config.run import DPConfig, RunConfig
from ..data import Dataset, Split
from ..plan import Plan
from ..progress import ModelProgress, log
from ..stats.logitstack import LogitStack, SignalSource
from ..stats.metrics import accuracy
from ..training import executor
from ..training.store import Store, indices_digest

if TYPE_CHECKING:  # torch, the models and the training loop load with the first model trained or read: an
    # Experiment of outputs alone (``miaudit score``) never imports them
    import torch

    from ..training.loop import ProgressFn, TrainReport


@dataclass
class TrainedModel:
    role: str
    module: torch.nn.Module
    logits: np.ndarray  # (n_records, C), every record of the data set: float64, or float32 memory-mapped from the store
    train_idx: np.ndarray
    seconds: float  # wall-clock training time (from the cache when reused)
    train_accuracy: float
    cached: bool
    architecture: str = ""
    source: str = "trained"  # trained by miaudit, or where a user's model came from
    privacy: dict | None = None  # DP-SGD: declared and accounted epsilon, noise (miaudit.dp.training)


@dataclass(frozen=True)
class ModelRecipe:
    """How to obtain one trained model: a fresh module and the loop that trains it in place.

    ``cache_spec`` holds what fixes the weights besides data, training indices and seed;
    None when user code builds or trains the model, which miaudit cannot hash: never cached."""

    architecture: str
    build: Callable[[], torch.nn.Module]
    fit: Callable[[torch.nn.Module, np.ndarray, np.ndarray, int, ProgressFn], TrainReport]
    epochs: int | None = None  # progress-bar length (None: unknown)
    cache_spec: dict | None = None


@dataclass
class Experiment:
    """Everything an audit computes before any attack runs."""

    cfg: RunConfig
    plan: Plan
    dataset: Dataset
    split: Split
    query_idx: np.ndarray  # record indices of the queries (members and non-members, shuffled)
    is_member: np.ndarray | None  # (N,) bool: evaluation only, never given to attacks; None: unknown
    pool_idx: np.ndarray  # record indices the reference models sample from
    ref_masks: np.ndarray  # (K, len(pool_idx)) bool
    target: TrainedModel
    references: list[TrainedModel]
    memo: dict = field(default_factory=dict)
    query_info: dict[str, np.ndarray] = field(default_factory=dict)  # extra per-query columns for reports
    ref_dataset: Dataset | None = None  # the references' data when they train on another population (``shift``)
    signal_cache: SignalSource | None = None  # the references' signals kept in the store (None: computed per run)

    def __getstate__(self) -> dict:
        """Pickled without the memo: fitted posteriors and cached features are rebuilt on demand, and
        third-party objects in it (laplace-torch's) need not pickle."""
        return {**self.__dict__, "memo": {}}

    @property
    def calibration_part(self) -> Literal["validation", "population"]:
        """The records p-values are calibrated on: validation offline, the pool's population online
        (``calibration.with_calibration_queries``)."""
        return "population" if self.plan.mode == "online" else "validation"

    @property
    def calibrates(self) -> bool:
        """Whether p-values are calibrated: calibration is on and there are records to calibrate on."""
        return self.cfg.calibration is not None and len(getattr(self.split, self.calibration_part)) > 0

    @property
    def membership_known(self) -> bool:
        return self.is_member is not None

    def target_accuracy(self) -> dict[str, float]:
        y, logits = self.dataset.y, self.target.logits
        if not self.membership_known:  # population records are known non-members: the closest to a test accuracy
            return {
                "query_accuracy": accuracy(logits[self.query_idx], y[self.query_idx]),
                "population_accuracy": accuracy(logits[self.split.population], y[self.split.population]),
            }
        return {
            "train_accuracy": accuracy(logits[self.split.members], y[self.split.members]),
            "test_accuracy": accuracy(logits[self.split.nonmembers], y[self.split.nonmembers]),
        }

    def _record_set(self, idx: np.ndarray) -> RecordSet:
        ds = self.dataset
        # the references' logits stay in the store's memory maps; attacks read signals from them in chunks
        ref_logits = LogitStack([r.logits for r in self.references], idx, ds.n_classes, self.signal_cache)
        in_pool = np.full(max(len(ds), int(self.pool_idx.max(initial=-1)) + 1), -1)
        in_pool[self.pool_idx] = np.arange(len(self.pool_idx))
        pos = in_pool[idx]
        # A record outside the pool trained no reference model: False (OUT) for every reference.
        ref_in = np.where(pos >= 0, self.ref_masks[:, np.maximum(pos, 0)], False) if len(self.pool_idx) else None
        views = self._views()
        return RecordSet(
            labels=ds.y[idx],
            target_logits=np.asarray(self.target.logits[idx], dtype=np.float64),
            ref_logits=ref_logits,
            ref_in=ref_in,
            x=ds.x[idx],
            target_views=None if views is None else views[0][:, idx],
            ref_views=None if views is None else views[1][:, :, idx],
        )

    def _views(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``queries.augment``: (A, N, C) target and (A, K, N, C) reference logits on the A views of every
        record, once per run (not cached on disk: A - 1 extra inference passes per model)."""
        how = self._augment()
        if how == "none":
            return None
        if ("views",) not in self.memo:
            from ..training.loop import predict_views

            ds, device = self.dataset, self.cfg.device
            target = predict_views(self.target.module, ds.x, self.target.logits, how, device)
            refs = [predict_views(r.module, ds.x, r.logits, how, device) for r in self.references]
            stacked = np.stack(refs, axis=1) if refs else np.zeros((len(target), 0, *target.shape[1:]))
            self.memo[("views",)] = (target, stacked)
        return self.memo[("views",)]

    def _augment(self) -> str:
        return getattr(self.cfg.queries, "augment", "none")  # a scores-only config has no views

    def attack_inputs(self) -> AttackInputs:
        s = self.split
        pool_ds = self.ref_dataset or self.dataset
        models = ModelAccess(
            target=self.target.module,
            references=[r.module for r in self.references],
            reference_train=[(pool_ds.x[r.train_idx], pool_ds.y[r.train_idx]) for r in self.references],
            query_x=self.dataset.x[self.query_idx],
            device=self.cfg.device,
            memo=self.memo,
            executor=getattr(self.cfg, "executor", ExecutorConfig()),  # a scores-only config trains nothing
            query_views=_query_views(how) if (how := self._augment()) != "none" else (),
        )
        return AttackInputs(
            queries=self._record_set(self.query_idx),
            population=self._record_set(s.population) if len(s.population) else None,
            validation=self._record_set(s.validation) if len(s.validation) else None,
            models=models,
            mode=self.cfg.mode,
            seed=self.cfg.seed,
        )


def _query_views(how: str) -> tuple:
    from ..training import augment

    return augment.query_views(how)


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
        return ModelRecipe(arch, *lm.recipe(cfg, ds, arch))
    from ..models import adapters, build_model, io
    from ..training.loop import train

    defaults = {"dp", "loader_workers"} | ({"precision"} if cfg.train.precision == "fp32" else set())
    defaults |= {"optimizer"} if cfg.train.optimizer == "sgd" else set()
    defaults |= {"augment"} if cfg.train.augment == "none" else set()
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
        from ..dp import training as dp_training

        return ModelRecipe(
            arch,
            lambda: dp_training.compatible(build_model(arch, ds.input_shape, ds.n_classes)),
            lambda m, x, y, seed, progress: dp_training.train_dp(m, x, y, cfg.train, dp, seed, cfg.device, progress),
            cfg.train.epochs,
            {
                **spec,
                "dp": dp.model_dump(exclude={"references"} | ({"planted_fault"} if not dp.planted_fault else set())),
            },
        )
    return ModelRecipe(
        arch,
        lambda: build_model(arch, ds.input_shape, ds.n_classes, head_dropout=head_dropout),
        lambda m, x, y, seed, progress: train(m, x, y, cfg.train, seed, cfg.device, progress),
        cfg.train.epochs,
        spec,
    )


def reference_recipe(cfg: RunConfig, ds: Dataset, head_dropout: float = 0.0) -> ModelRecipe:
    """The reference models' recipe: not DP unless ``train.dp.references``."""
    dp = cfg.train.dp if cfg.train.dp is not None and cfg.train.dp.references else None
    return builtin_recipe(cfg, ds, cfg.reference_architecture, head_dropout, dp)


def trained_target(
    cfg: RunConfig,
    ds: Dataset,
    train_idx: np.ndarray,
    store: Store,
    progress: ModelProgress | None = None,
    role: str = "target",
) -> TrainedModel:
    """The target (DP-SGD with ``train.dp``) trained on ``train_idx``, or loaded from the cache."""
    recipe = builtin_recipe(cfg, ds, cfg.model, dp=cfg.train.dp)
    with progress or ModelProgress(1) as tracker:
        return obtain(store, recipe, ds, role, model_seed(cfg.seed, 0), train_idx, tracker, cfg.device)


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

    arch = recipe.architecture

    def trained_now() -> TrainedModel:
        module = seeded_model(recipe.build, seed)
        epochs = progress.training(role, recipe.epochs)
        report: TrainReport = recipe.fit(module, ds.x[train_idx], ds.y[train_idx], seed, epochs)
        logits = predict_logits(module, ds.x, device=device)
        seconds, acc = report.seconds, report.train_accuracy
        progress.finished(role, seconds, cached=False)
        model = TrainedModel(role, module.eval(), logits, train_idx, seconds, acc, cached=False, architecture=arch)
        model.privacy = report.privacy
        return model

    if recipe.cache_spec is None:
        return trained_now()
    spec = {"data": ds.fingerprint, **recipe.cache_spec, "train_idx": indices_digest(train_idx), "seed": seed}
    entry = store.entry(spec)
    # Locked while loading or training: a concurrent run needing the same model waits, then loads it.
    with store.lock(entry, waiting=lambda: log.info("%s: waiting for another run training it", role)):
        hit = store.load(entry, recipe.build, role)
        if hit is not None:
            # the logits stay memory-mapped (float32): rows are read when an attack's inputs are built
            logits, seconds, acc = hit.logits, hit.meta["seconds"], hit.meta["train_accuracy"]
            progress.finished(role, seconds, cached=True)
            cached = TrainedModel(role, hit.module, logits, train_idx, seconds, acc, cached=True, architecture=arch)
            cached.privacy = hit.meta.get("privacy")
            return cached
        model = trained_now()
        meta = {"role": role, "spec": spec, "seconds": model.seconds, "train_accuracy": model.train_accuracy}
        meta.update({"privacy": model.privacy} if model.privacy else {})
        store.save(entry, model.module, meta, model.logits.astype(np.float32))
    return model


def train_into_store(
    root: str, recipe: ModelRecipe, ds: Dataset, device: str, threads: int, role: str, seed: int, train_idx: np.ndarray
) -> bool:
    """One model into the store at ``root`` (an executor task; the driver loads it after): whether it was
    already there. Torch uses the driver's thread count, so the weights are the ones a local run gets."""
    import torch

    torch.set_num_threads(threads)
    with ModelProgress(1) as progress:
        return obtain(Store(Path(root)), recipe, ds, role, seed, train_idx, progress, device).cached


def load_dataset(cfg: RunConfig) -> Dataset:
    if lm.is_causal_lm(cfg.target_architecture):  # texts, tokenised by the LM's tokenizer
        return lm.load_texts(cfg)
    from ..models import adapters

    return data.load(
        cfg.dataset.name,
        cfg.dataset.path,
        data_dir=cfg.dataset.data_dir,
        cache_dir=cfg.cache_dir,
        label_column=cfg.dataset.label_column,
        num_classes=cfg.dataset.num_classes,
        subset=cfg.dataset.subset,
        seed=cfg.seed,
        tokenize=adapters.tokenizer_for(cfg.target_architecture),  # text for hf: models: their tokenizer's ids
    )


def open_store(cfg: RunConfig) -> Store:
    return Store(cfg.cache_dir or data.default_cache_dir()).check_access()  # refused, or read-only, now


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


@dataclass(frozen=True)
class AuditRecords:
    """The records of one audit and their roles: the split, the queries in the order attacks see them,
    their membership (None: unknown; evaluation only) and extra per-query columns for reports."""

    dataset: Dataset
    split: Split
    query_idx: np.ndarray
    is_member: np.ndarray | None
    query_info: dict[str, np.ndarray] = field(default_factory=dict)


def with_references(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    target: TrainedModel,
    recipe: ModelRecipe,
    store: Store,
    progress: ModelProgress | None = None,
    other_pool: tuple[Dataset, np.ndarray] | None = None,
) -> Experiment:
    """Train (or load) the reference models the plan uses on random halves of the pool and assemble the
    experiment. Offline, the pool is the population; online it also holds the queries (each IN for half
    the models). ``progress`` counts the models (default: these references only). ``other_pool`` (a data
    set holding the target's records then others, and the indices of those others) replaces the pool: the
    references train on another population (``shift``)."""
    ds, split, query_idx = records.dataset, records.split, records.query_idx
    online = cfg.mode == "online"
    pool_idx = np.sort(np.concatenate([split.population, query_idx])) if online else split.population
    ref_ds = None
    if other_pool is not None:
        ref_ds, pool_idx = other_pool
    ref_masks = data.reference_subsets(len(pool_idx), plan.references, cfg.seed, balanced=online)
    if cfg.executor.kind != "local" and recipe.cache_spec is not None:
        # the executor's tasks train into the store; the loop below loads them
        jobs = [
            (f"reference {k + 1}/{plan.references}", model_seed(cfg.seed, k + 1), pool_idx[ref_masks[k]])
            for k in range(plan.references)
        ]
        import torch

        shared = (str(store.root), recipe, ref_ds or ds, cfg.device, torch.get_num_threads())
        executor.run_tasks(cfg.executor, train_into_store, shared, jobs, log=log.info)
    with progress or ModelProgress(plan.references) as tracker:
        refs = [
            obtain(
                store,
                recipe,
                ref_ds or ds,
                f"reference {k + 1}/{plan.references}",
                model_seed(cfg.seed, k + 1),
                pool_idx[ref_masks[k]],
                tracker,
                cfg.device,
            )
            for k in range(plan.references)
        ]
    if ref_ds is not None:  # the references' logits on the target's records: the first len(ds) of theirs
        for r in refs:
            r.logits = r.logits[: len(ds)]
    return Experiment(
        cfg,
        plan,
        ds,
        split,
        query_idx,
        records.is_member,
        pool_idx,
        ref_masks,
        target,
        refs,
        query_info=records.query_info,
        ref_dataset=ref_ds,
    )
