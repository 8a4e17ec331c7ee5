"""The values an audit computes before any attack runs: trained models, the records' roles, the Experiment.

No attack math here: ``Experiment.attack_inputs`` hands the attacks plain arrays. The target's
membership (``is_member``) stays in the Experiment and is only used to evaluate attack outputs. The
three ways to an Experiment: ``build.with_references`` (models miaudit trains), ``own_model`` (the
user's) and ``precomputed`` (outputs only). Every dataclass here is built with keyword arguments only:
several fields share a type (index arrays), so a positional mix-up would pass silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..attack_plan import Plan
from ..attacks import AttackInputs, ModelAccess, RecordSet
from ..attacks.base import LabelAccess, TargetOracle
from ..config.settings import AuditSettings
from ..data import Dataset, Split
from ..stats.logitstack import LogitStack, SignalSource
from ..stats.metrics import accuracy
from ..training.options import ExecutorConfig

if TYPE_CHECKING:  # torch loads with the first model trained or read: an Experiment of outputs alone
    # (``miaudit score``) never imports it
    import torch


@dataclass(kw_only=True)
class TrainedModel:
    role: str
    module: torch.nn.Module | None  # None: outputs only (a scores-only audit)
    logits: np.ndarray  # (n_records, C), every record of the data set: float64, or float32 memory-mapped from the store
    train_idx: np.ndarray
    seconds: float  # wall-clock training time (from the cache when reused)
    train_accuracy: float
    cached: bool
    architecture: str
    source: str = "trained"  # trained by miaudit, or where a user's model came from
    privacy: dict | None = None  # DP-SGD: declared and accounted epsilon, noise (miaudit.training.dp_sgd)


@dataclass(frozen=True, kw_only=True)
class AuditRecords:
    """The records of one audit and their roles: the split, the queries in the order attacks see them,
    their membership (None: unknown; evaluation only) and extra per-query columns for reports."""

    dataset: Dataset
    split: Split
    query_idx: np.ndarray
    is_member: np.ndarray | None
    query_info: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(kw_only=True)
class Experiment:
    """Everything an audit computes before any attack runs. ``device``, ``executor`` and ``query_augment``
    are how the models run: a training run's config gives them, an audit of outputs has no models."""

    cfg: AuditSettings
    plan: Plan
    records: AuditRecords  # the data, the split, the queries and their membership
    pool_idx: np.ndarray  # record indices the reference models sample from
    ref_masks: np.ndarray  # (K, len(pool_idx)) bool
    target: TrainedModel
    references: list[TrainedModel]
    memo: dict = field(default_factory=dict)
    ref_dataset: Dataset | None = None  # the references' data when they train on another population (``shift``)
    signal_cache: SignalSource | None = None  # the references' signals kept in the store (None: computed per run)
    device: str = "cpu"
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # where BMIA's posterior fits run
    query_augment: str = "none"  # ``queries.augment``: views of the queries given to the attacks
    oracle: TargetOracle | None = None  # a target known by its answers only (an endpoint): no module

    def __getstate__(self) -> dict:
        """Pickled without the memo: fitted posteriors and cached features are rebuilt on demand, and
        third-party objects in it (laplace-torch's) need not pickle."""
        return {**self.__dict__, "memo": {}}

    @property
    def dataset(self) -> Dataset:
        return self.records.dataset

    @property
    def split(self) -> Split:
        return self.records.split

    @property
    def query_idx(self) -> np.ndarray:
        """Record indices of the queries (members and non-members, shuffled)."""
        return self.records.query_idx

    @property
    def is_member(self) -> np.ndarray | None:
        """(N,) bool: evaluation only, never given to attacks; None: unknown."""
        return self.records.is_member

    @property
    def query_info(self) -> dict[str, np.ndarray]:
        """Extra per-query columns for reports."""
        return self.records.query_info

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

    def record_set(self, idx: np.ndarray) -> RecordSet:
        """What the target and the references output on the records ``idx`` (any records of the data set)."""
        return self._record_set(idx)

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

    def _modules(self) -> tuple[torch.nn.Module, list[torch.nn.Module]] | None:
        """The target's and the references' torch modules; None when any is missing (outputs only)."""
        target, refs = self.target.module, [r.module for r in self.references]
        present = [m for m in refs if m is not None]
        return None if target is None or len(present) < len(refs) else (target, present)

    def _views(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``queries.augment``: (A, N, C) target and (A, K, N, C) reference logits on the A views of every
        record, once per run (not cached on disk: A - 1 extra inference passes per model)."""
        how, modules = self.query_augment, self._modules()
        if how == "none" or modules is None:
            return None
        if ("views",) not in self.memo:
            from ..training.loop import predict_views

            ds, device, (target_module, ref_modules) = self.dataset, self.device, modules
            target = predict_views(target_module, ds.x, self.target.logits, how, device)
            refs = [predict_views(m, ds.x, r.logits, how, device) for m, r in zip(ref_modules, self.references)]
            stacked = np.stack(refs, axis=1) if refs else np.zeros((len(target), 0, *target.shape[1:]))
            self.memo[("views",)] = (target, stacked)
        return self.memo[("views",)]

    def _model_access(self) -> ModelAccess | None:
        modules = self._modules()
        if modules is None:
            return None
        pool_ds = self.ref_dataset or self.dataset
        return ModelAccess(
            target=modules[0],
            references=modules[1],
            reference_train=[(pool_ds.x[r.train_idx], pool_ds.y[r.train_idx]) for r in self.references],
            query_x=self.dataset.x[self.query_idx],
            device=self.device,
            memo=self.memo,
            executor=self.executor,
            query_views=_query_views(self.query_augment) if self.query_augment != "none" else (),
        )

    def _label_access(self) -> LabelAccess | None:
        """Predicted labels on new inputs, for label-only attacks: the endpoint's (``oracle``) or the target
        module's, and the references'; None when a model is missing (outputs only)."""
        refs = [r.module for r in self.references]
        target = self.target.module
        if any(m is None for m in refs) or (self.oracle is None and target is None):
            return None
        device = self.device

        def argmax(module: torch.nn.Module) -> Callable[[np.ndarray], np.ndarray]:
            def labels(x: np.ndarray) -> np.ndarray:
                from ..training.loop import predict_logits

                return np.argmax(predict_logits(module, x, device=device), axis=1).astype(np.int64)

            return labels

        references = [argmax(m) for m in refs if m is not None]
        if self.oracle is not None:
            return LabelAccess(target=self.oracle.labels, references=references)
        assert target is not None
        local = argmax(target)

        def asked(x: np.ndarray, asked_by: str) -> np.ndarray:
            return local(x)

        return LabelAccess(target=asked, references=references)

    def attack_inputs(self) -> AttackInputs:
        s = self.split
        return AttackInputs(
            queries=self._record_set(self.query_idx),
            population=self._record_set(s.population) if len(s.population) else None,
            validation=self._record_set(s.validation) if len(s.validation) else None,
            models=self._model_access(),
            mode=self.cfg.mode,
            seed=self.cfg.seed,
            labels=self._label_access(),
        )


def _query_views(how: str) -> tuple:
    from ..training import augment

    return augment.query_views(how)
