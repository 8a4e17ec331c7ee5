"""Wires the stages: data -> split -> models (cached) -> attack inputs -> attacks -> metrics.

No math of its own. The target's membership (``is_member``) stays here and is
only used to evaluate attack outputs; attacks receive the queries without it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import data, metrics
from .attacks import AttackInputs, AttackResult, ModelAccess, RecordSet, registry
from .config import AttackSpec, RunConfig
from .data import Dataset, Split
from .models import build_model
from .store import Store, indices_digest
from .training import TrainReport, accuracy, predict_logits, seeded_model, train

console = Console(stderr=True)


@dataclass
class TrainedModel:
    role: str
    module: torch.nn.Module
    logits: np.ndarray  # (n_records, C) float64, every record of the data set
    train_idx: np.ndarray
    seconds: float  # wall-clock training time (from the cache when reused)
    train_accuracy: float
    cached: bool


@dataclass
class Experiment:
    """Everything an audit computes before any attack runs."""

    cfg: RunConfig
    dataset: Dataset
    split: Split
    query_idx: np.ndarray  # record indices of the queries (members and non-members, shuffled)
    is_member: np.ndarray  # (N,) bool: evaluation only, never given to attacks
    pool_idx: np.ndarray  # record indices the reference models sample from
    ref_masks: np.ndarray  # (K, len(pool_idx)) bool
    target: TrainedModel
    references: list[TrainedModel]
    memo: dict = field(default_factory=dict)

    def target_accuracy(self) -> dict[str, float]:
        y = self.dataset.y
        return {"train_accuracy": accuracy(self.target.logits[self.split.members], y[self.split.members]),
                "test_accuracy": accuracy(self.target.logits[self.split.nonmembers], y[self.split.nonmembers])}

    def _record_set(self, idx: np.ndarray) -> RecordSet:
        ds = self.dataset
        ref_logits = np.stack([r.logits[idx] for r in self.references]) if self.references else \
            np.zeros((0, len(idx), ds.n_classes))
        in_pool = np.full(len(ds), -1)
        in_pool[self.pool_idx] = np.arange(len(self.pool_idx))
        pos = in_pool[idx]
        ref_in = None
        if (pos >= 0).all() and len(idx):
            ref_in = self.ref_masks[:, pos]
        return RecordSet(labels=ds.y[idx], target_logits=self.target.logits[idx], ref_logits=ref_logits,
                         ref_in=ref_in, x=ds.x[idx])

    def attack_inputs(self) -> AttackInputs:
        s = self.split
        models = ModelAccess(
            target=self.target.module,
            references=[r.module for r in self.references],
            reference_train=[(self.dataset.x[r.train_idx], self.dataset.y[r.train_idx]) for r in self.references],
            query_x=self.dataset.x[self.query_idx],
            device=self.cfg.device,
            memo=self.memo,
        )
        return AttackInputs(
            queries=self._record_set(self.query_idx),
            population=self._record_set(s.population) if len(s.population) else None,
            validation=self._record_set(s.validation) if len(s.validation) else None,
            models=models, mode=self.cfg.mode, seed=self.cfg.seed)


@dataclass
class AttackRun:
    spec: AttackSpec
    references: int
    result: AttackResult
    metrics: metrics.AttackMetrics
    seconds: dict[str, float]


@dataclass
class RunResult:
    experiment: Experiment
    attacks: list[AttackRun]


def _model_seed(seed: int, role: int) -> int:
    return int(np.random.SeedSequence([seed, role]).generate_state(1)[0])


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=console, transient=True)


def _get_or_train(store: Store, cfg: RunConfig, ds: Dataset, arch: str, role: str, role_id: int,
                  train_idx: np.ndarray, progress: Progress) -> TrainedModel:
    seed = _model_seed(cfg.seed, role_id)
    spec = {"data": ds.fingerprint(), "arch": arch, "input_shape": ds.input_shape, "n_classes": ds.n_classes,
            "train": cfg.train.model_dump(), "train_idx": indices_digest(train_idx), "seed": seed}
    entry = store.entry(spec)
    module = build_model(arch, ds.input_shape, ds.n_classes)
    if entry.complete():
        meta = store.load_meta(entry)
        store.load_weights(entry, module)
        return TrainedModel(role, module, store.load_logits(entry).astype(np.float64), train_idx,
                            meta["seconds"], meta["train_accuracy"], cached=True)
    module = seeded_model(lambda: build_model(arch, ds.input_shape, ds.n_classes), seed)
    task = progress.add_task(f"training {role}", total=cfg.train.epochs)
    report: TrainReport = train(module, ds.x[train_idx], ds.y[train_idx], cfg.train, seed, cfg.device,
                                progress=lambda done, _: progress.update(task, completed=done))
    progress.remove_task(task)
    logits = predict_logits(module, ds.x, device=cfg.device)
    store.save(entry, module, {"role": role, "spec": spec, "seconds": report.seconds,
                               "train_accuracy": report.train_accuracy}, logits.astype(np.float32))
    return TrainedModel(role, module.eval(), logits, train_idx, report.seconds, report.train_accuracy, cached=False)


def prepare(cfg: RunConfig) -> Experiment:
    """Load and split the data, then train (or load from the cache) the target and K references."""
    ds = data.load(cfg.dataset.name, cfg.dataset.path, data_dir=cfg.dataset.data_dir, cache_dir=cfg.cache_dir,
                   label_column=cfg.dataset.label_column, subset=cfg.dataset.subset, seed=cfg.seed)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 0x9E]))
    query_idx = rng.permutation(np.concatenate([split.members, split.nonmembers]))
    is_member = np.isin(query_idx, split.members)
    online = cfg.mode == "online"
    pool_idx = np.sort(np.concatenate([split.population, query_idx])) if online else split.population
    ref_masks = data.reference_subsets(len(pool_idx), cfg.references, cfg.seed, balanced=online)
    store = Store(cfg.cache_dir or data.default_cache_dir())
    ref_arch = cfg.reference_model or cfg.model
    with _progress() as progress:
        target = _get_or_train(store, cfg, ds, cfg.model, "target", 0, split.members, progress)
        refs = [_get_or_train(store, cfg, ds, ref_arch, f"reference {k + 1}/{cfg.references}", k + 1,
                              pool_idx[ref_masks[k]], progress) for k in range(cfg.references)]
    return Experiment(cfg, ds, split, query_idx, is_member, pool_idx, ref_masks, target, refs)


def run_attack(exp: Experiment, spec: AttackSpec, inputs: AttackInputs | None = None) -> AttackRun:
    inputs = inputs or exp.attack_inputs()
    k = registry.references_used(spec.name, spec.params, inputs.n_references)
    start = time.perf_counter()
    result = registry.run(spec.name, inputs, spec.params)
    seconds = {"reference_training": float(sum(r.seconds for r in exp.references[:k])),
               "attack": time.perf_counter() - start}
    pvals = {} if result.log_pvalues is None else {"raw": result.log_pvalues}
    if "log_p_calibrated" in result.extra:
        pvals["calibrated"] = result.extra["log_p_calibrated"]
    return AttackRun(spec, k, result, metrics.evaluate(result.scores, exp.is_member, pvals), seconds)


def run(cfg: RunConfig) -> RunResult:
    """The whole audit in memory; ``report.write`` puts it on disk."""
    exp = prepare(cfg)
    inputs = exp.attack_inputs()
    runs = []
    for spec in cfg.attacks:
        console.print(f"[dim]attack {spec.label} ...[/dim]")
        runs.append(run_attack(exp, spec, inputs))
    return RunResult(exp, runs)
