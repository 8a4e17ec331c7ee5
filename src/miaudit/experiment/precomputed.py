"""Scores-only audits: attacks on models trained elsewhere, from their precomputed outputs.

``prepare`` reads the outputs (``layouts``), sets the records' roles (queries, population,
validation) and builds the same ``Experiment`` a training run builds, minus the torch modules and the
records' inputs. Every attack that needs only outputs then runs through the pipeline unchanged, and
``membership.decide.write`` writes the same files. Attacks that need the models themselves (BMIA, MR-BMIA, GLS)
or the records' inputs (QMIA) are refused before anything is read, in one line naming the attack.

Roles: index files (config keys, else the layout's) name the queried members and non-members, or the
queries of unknown membership, and optionally validation records (calibration only); every other
record is population. With no index file at all, every record is a query and the target's ``keep``
mask is its membership (the LiRA code's own setting); then there is no population.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..attack_plan import build
from ..attacks import RecordSet, registry
from ..config.scores import PRECOMPUTED, ScoreConfig, from_dict, load
from ..data import Dataset, Split, hold_out_validation
from ..data.files import load_indices
from ..errors import AttackRequirementError, ConfigError, DataError
from ..storage import default_cache_dir
from ..training.signal_store import SignalCache
from . import layouts, validate
from .base import AuditRecords, Experiment, TrainedModel
from .build import shuffled_queries
from .layouts import Outputs

UNAVAILABLE = {
    "models": "the trained models",
    "x": "the records' inputs",
    "labels": "the models' labels on new inputs",
}


class ScoredExperiment(Experiment):
    """An Experiment from outputs alone: no ``ModelAccess``, no inputs x (logits are read on demand)."""

    def _record_set(self, idx: np.ndarray) -> RecordSet:
        return replace(super()._record_set(idx), x=None)


def refuse_model_attacks(cfg: ScoreConfig) -> None:
    """One-line ``AttackRequirementError`` for the first attack row that needs what outputs cannot give."""
    for i, row in enumerate(cfg.attacks):
        name = str(row["name"]).lower()
        if name not in registry.names():
            continue  # the plan names unknown attacks
        missing = sorted(registry.get(name).needs & set(UNAVAILABLE))
        if missing:
            raise AttackRequirementError(
                f"attacks.{i}: {name} needs {UNAVAILABLE[missing[0]]}, which a scores-only audit does not have; "
                "run it with `miaudit run` on the models"
            )


def _index_sets(cfg: ScoreConfig, outputs: Outputs) -> dict[str, np.ndarray]:
    """Positions per role, from the config's index files, else from the layout's."""
    n = len(outputs.labels)
    from_files = {k: getattr(cfg, k) for k in layouts.INDEX_SETS if getattr(cfg, k) is not None}
    if from_files.keys() & {"members", "queries"}:
        layout = {k: v for k, v in outputs.sets.items() if k == "validation"}
    else:
        layout = dict(outputs.sets)
    sets = {k: load_indices(path, k, n) for k, path in from_files.items()}
    for k, idx in layout.items():
        if k not in sets:
            sets[k] = _positions(idx, k, n)
    if ("members" in sets) != ("nonmembers" in sets):
        raise DataError("members: the layout names members or nonmembers but not both")
    return sets


def _positions(idx: np.ndarray, name: str, n: int) -> np.ndarray:
    idx = np.asarray(idx)
    if idx.ndim != 1 or idx.dtype.kind not in "iu" or (idx.size and (idx.min() < 0 or idx.max() >= n)):
        raise DataError(f"{name}: the layout's {name} must be positions in [0, {n}), got shape {idx.shape}")
    return idx.astype(np.int64)


def _roles(cfg: ScoreConfig, outputs: Outputs) -> tuple[Split, np.ndarray, np.ndarray | None]:
    """The split, the queries in attack order, and their membership (None: unknown)."""
    n, none = len(outputs.labels), np.zeros(0, dtype=np.int64)
    sets = _index_sets(cfg, outputs)
    validation = np.sort(sets.get("validation", none))
    if "queries" in sets:
        members, nonmembers, audited = none, none, validate.nonempty(sets["queries"], "queries")
    elif "members" in sets:
        members = np.sort(validate.nonempty(sets["members"], "members"))
        nonmembers = np.sort(validate.nonempty(sets["nonmembers"], "nonmembers"))
        validate.check_disjoint_indices(members, nonmembers)
        audited = np.concatenate([members, nonmembers])
    elif outputs.target_keep is not None:
        audited = np.setdiff1d(np.arange(n), validation)
        member = np.asarray(outputs.target_keep, dtype=bool)[audited]
        members = validate.nonempty(audited[member], "members (the target's keep mask)")
        nonmembers = validate.nonempty(audited[~member], "nonmembers (the target's keep mask)")
    else:
        raise ConfigError("members: give members and nonmembers (or queries) index files; the layout has neither")
    if np.intersect1d(audited, validation).size:
        raise DataError("validation: some validation records are also queries")
    if outputs.target_keep is not None and "members" in sets:
        keep = np.asarray(outputs.target_keep, dtype=bool)
        if not keep[members].all() or keep[nonmembers].any():
            raise DataError("members: the index files disagree with the target's keep mask")
    population = np.setdiff1d(np.arange(n), np.concatenate([audited, validation]))
    split = Split(members=members, nonmembers=nonmembers, population=population, validation=validation)
    if cfg.calibration is not None and cfg.calibration.fraction and not len(validation):
        split = hold_out_validation(split, cfg.calibration.fraction, cfg.seed)
    if "queries" in sets:
        return split, audited, None
    return (split, *shuffled_queries(split, cfg.seed))


def _model(role: str, logits: np.ndarray, keep: np.ndarray, signals: SignalCache, source: str) -> TrainedModel:
    train_idx = np.flatnonzero(keep)
    return TrainedModel(
        role=role,
        logits=logits,
        train_idx=train_idx,
        train_accuracy=signals.accuracy(logits, train_idx),  # from the stored signals: logits read once, ever
        module=None,  # outputs only
        seconds=0.0,
        cached=True,
        architecture=PRECOMPUTED,
        source=source,
    )


def prepare(cfg: ScoreConfig) -> ScoredExperiment:
    """Refuse model attacks, read the outputs, set the roles, plan: the experiment the attacks run on."""
    refuse_model_attacks(cfg)
    outputs = layouts.read(cfg.outputs)
    k = len(outputs.reference_logits)
    if cfg.references is not None and cfg.references > k:
        raise ConfigError(f"references: {cfg.references} asked for, the outputs hold {k} reference model(s)")
    cfg = cfg.revised(references=k if cfg.references is None else cfg.references)
    split, query_idx, is_member = _roles(cfg, outputs)
    plan = build(cfg, {r for r in ("population", "validation") if len(getattr(split, r))})
    if is_member is not None:
        validate.check_min_fpr(cfg.min_fpr, int((~is_member).sum()))
    n, used = len(outputs.labels), plan.references
    labels = outputs.labels.astype(np.int64)
    ds = Dataset(cfg.data_label, np.zeros((n, 0), dtype=np.float32), labels, outputs.n_classes)
    where = f"{cfg.outputs.resolved_layout} layout: {cfg.outputs.path}"
    signals = SignalCache(default_cache_dir(), labels)
    signals.entries([outputs.target_logits, *outputs.reference_logits[:used]])  # every model's pass, in parallel
    for name, logits in [(f"the target ({outputs.target_name})", outputs.target_logits)] + [
        (outputs.reference_name(k), m) for k, m in enumerate(outputs.reference_logits[:used])
    ]:
        layouts.refuse_nonfinite(name, logits, signals.nonfinite_record(logits))
    target_keep = np.isin(np.arange(n), split.members) if outputs.target_keep is None else outputs.target_keep
    target = _model("target", outputs.target_logits, target_keep, signals, f"{where} ({outputs.target_name})")
    refs = [
        _model(f"reference {j + 1}", outputs.reference_logits[j], outputs.reference_keep[j], signals, where)
        for j in range(used)
    ]
    info = {} if outputs.records is None else {"original_record": np.asarray(outputs.records)[query_idx]}
    masks = np.asarray(outputs.reference_keep[:used], dtype=bool)
    return ScoredExperiment(
        cfg=cfg,
        plan=plan,
        records=AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member, query_info=info),
        pool_idx=np.arange(n),
        ref_masks=masks,
        target=target,
        references=refs,
        signal_cache=signals,
    )


def as_config(config: ScoreConfig | dict | str | Path) -> ScoreConfig:
    if isinstance(config, ScoreConfig):
        return config
    if isinstance(config, (str, Path)):
        return load(config)
    return from_dict(config)
