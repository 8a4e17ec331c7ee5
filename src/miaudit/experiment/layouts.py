"""Precomputed model outputs on disk, in two layouts, read into ``Outputs`` and written from a run.

**npz** (ours): one ``.npz`` file, or a folder holding the same arrays as ``.npy`` files (memory-mapped
when read). N records, C classes, K reference models; positions are 0-based rows of these arrays.

    labels            (N,) int           true class of each record
    target_logits     (N, C) float       the audited model's logits on every record
    reference_logits  (K, N, C) float    each reference model's logits on every record
    reference_keep    (K, N) bool        record in reference k's training set
    target_keep       (N,) bool          optional: the target's membership, where known
    members, nonmembers, queries, validation   optional (n,) int: positions (config files win)
    records           optional (N,) int: the records' ids in the original data (reports show them)

Instead of logits, ``target_signal`` (N,) and ``reference_signals`` (K, N) may hold each model's
rescaled logit log(p_y / (1 - p_y)) per record: they become two-class logits (s, 0) with label 0,
so every signal attacks derive (rescaled logit, loss, confidence) is exact, and labels are optional.

**lira** (the published LiRA code's experiment directory): a root holding ``y_train.npy`` (N,) and one
folder per model holding ``keep.npy`` (N,) bool and ``logits/*.npy`` of shape (N, [1,] A, C) (the last
file in name order, A augmentations). Folders are taken in natural order (experiment-2 before
experiment-10); the target is the last one unless named. Index files (``members.npy`` ...) and
``records.npy`` in the root are read as in the npz layout.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config.scores import OutputsConfig
from ..errors import DataError

INDEX_SETS = ("members", "nonmembers", "queries", "validation")


@dataclass
class Outputs:
    """Every model's outputs on every record, and what is known about who trained on what."""

    labels: np.ndarray  # (N,) int64
    target_logits: np.ndarray  # (N, C)
    reference_logits: list[np.ndarray]  # K arrays (N, C), possibly memory-mapped: rows are read on demand
    reference_keep: np.ndarray  # (K, N) bool
    target_keep: np.ndarray | None = None  # (N,) bool
    sets: dict[str, np.ndarray] = field(default_factory=dict)  # INDEX_SETS found in the layout
    records: np.ndarray | None = None  # (N,) ids in the original data
    target_name: str = "target"
    reference_names: list[str] = field(default_factory=list)  # where each reference's outputs came from

    def reference_name(self, k: int) -> str:
        return f"reference {k} ({self.reference_names[k]})" if k < len(self.reference_names) else f"reference {k}"

    @property
    def n_classes(self) -> int:
        return int(self.target_logits.shape[1])


def natural_key(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _array_source(path: Path) -> Callable[[str], np.ndarray | None]:
    """name -> array (None when absent) from a .npz file or a folder of .npy files (memory-mapped)."""
    if path.is_dir():
        return lambda name: np.load(path / f"{name}.npy", mmap_mode="r") if (path / f"{name}.npy").is_file() else None
    if not path.is_file():
        raise DataError(f"outputs.path: {path} not found")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise DataError(f"outputs.path: {path.name} is not a .npz file ({str(e).splitlines()[0][:80]})") from None
    return lambda name: npz[name] if name in npz.files else None


def _signal_logits(signal: np.ndarray) -> np.ndarray:
    """A rescaled logit s as two-class logits (s, 0) with the true class 0: log(p / (1 - p)) = s exactly."""
    s = np.asarray(signal, dtype=np.float64)
    return np.stack([s, np.zeros_like(s)], axis=-1)


def read_npz(path: Path) -> Outputs:
    get = _array_source(Path(path))
    target, refs = get("target_logits"), get("reference_logits")
    labels = get("labels")
    signal = get("target_signal")
    if target is None and signal is not None:
        target, refs = _signal_logits(signal), _signal_logits(_need(get, "reference_signals", path))
        labels = np.zeros(len(target), dtype=np.int64)
    if target is None or refs is None or labels is None:
        missing = [
            n for n, a in (("target_logits", target), ("reference_logits", refs), ("labels", labels)) if a is None
        ]
        raise DataError(f"outputs.path: {Path(path).name} has no {missing[0]} (nor target_signal/reference_signals)")
    keep = _need(get, "reference_keep", path)
    target_keep = get("target_keep")
    return Outputs(
        labels=np.asarray(labels),
        target_logits=target,
        reference_logits=list(refs),
        reference_keep=np.asarray(keep),
        target_keep=None if target_keep is None else np.asarray(target_keep),
        sets={n: np.asarray(a) for n in INDEX_SETS if (a := get(n)) is not None},
        records=get("records"),
    )


def _need(get: Callable[[str], np.ndarray | None], name: str, path: Path) -> np.ndarray:
    array = get(name)
    if array is None:
        raise DataError(f"outputs.path: {Path(path).name} has no {name}")
    return array


def _model_logits(folder: Path, augmentation: int | str) -> np.ndarray:
    files = sorted((folder / "logits").glob("*.npy"))
    if not files:
        raise DataError(f"outputs.path: {folder.name}/logits holds no .npy file")
    raw = np.load(files[-1], mmap_mode="r")
    if raw.ndim == 4 and raw.shape[1] == 1:
        raw = raw[:, 0]
    if raw.ndim != 3:
        raise DataError(
            f"outputs.path: {folder.name}/logits/{files[-1].name} has shape {raw.shape}, not (N, [1,] A, C)"
        )
    if augmentation == "mean":
        return np.asarray(raw, dtype=np.float64).mean(axis=1)
    if not 0 <= int(augmentation) < raw.shape[1]:
        raise DataError(f"outputs.augmentation: {augmentation} is not among the {raw.shape[1]} augmentation(s)")
    return raw[:, int(augmentation)]


def _model_folder(d: Path) -> bool:
    """A LiRA model folder (keep.npy or logits/); one lacking either is refused, not skipped."""
    has = {"keep.npy": (d / "keep.npy").is_file(), "logits/": (d / "logits").is_dir()}
    if any(has.values()) and not all(has.values()):
        lacking = next(name for name, present in has.items() if not present)
        raise DataError(f"outputs.path: model folder {d} has no {lacking}; restore it, or move the folder out")
    return all(has.values())


def read_lira(cfg: OutputsConfig) -> Outputs:
    root = Path(cfg.path)
    if not (root / "y_train.npy").is_file():
        raise DataError(f"outputs.path: {root} holds no y_train.npy (not a LiRA experiment directory)")
    folders = sorted((d for d in root.iterdir() if _model_folder(d)), key=lambda d: natural_key(d.name))
    if len(folders) < 1:
        raise DataError(f"outputs.path: {root} holds no model folder with keep.npy")
    names = [d.name for d in folders]
    target = cfg.target or names[-1]
    if target not in names:
        raise DataError(f"outputs.target: no model folder {target!r} in {root} (there are {', '.join(names[:4])} ...)")
    refs = [d for d in folders if d.name != target]
    root_array = lambda name: np.load(root / f"{name}.npy") if (root / f"{name}.npy").is_file() else None
    return Outputs(
        labels=np.load(root / "y_train.npy"),
        target_logits=_model_logits(root / target, cfg.augmentation),
        reference_logits=[_model_logits(d, cfg.augmentation) for d in refs],
        reference_keep=np.array([np.load(d / "keep.npy") for d in refs]).reshape(len(refs), -1),
        target_keep=np.load(root / target / "keep.npy"),
        sets={n: a for n in INDEX_SETS if (a := root_array(n)) is not None},
        records=root_array("records"),
        target_name=target,
        reference_names=[d.name for d in refs],
    )


def read(cfg: OutputsConfig) -> Outputs:
    """The outputs ``cfg`` points at, checked: shapes agree, labels fit the classes, masks are boolean."""
    outputs = read_lira(cfg) if cfg.resolved_layout == "lira" else read_npz(Path(cfg.path))
    check(outputs)
    return outputs


def check(o: Outputs) -> None:
    n = len(o.labels)
    if o.labels.ndim != 1 or o.labels.dtype.kind not in "iu":
        raise DataError(f"outputs: labels must be (N,) integers, got shape {o.labels.shape}, dtype {o.labels.dtype}")
    if o.target_logits.ndim != 2 or o.target_logits.shape[0] != n:
        raise DataError(f"outputs: the target's logits have shape {o.target_logits.shape}, expected ({n}, C)")
    for k, logits in enumerate(o.reference_logits):
        if logits.shape != o.target_logits.shape:
            raise DataError(
                f"outputs: reference {k}'s logits have shape {logits.shape}, the target's {o.target_logits.shape}"
            )
    masks: list[tuple[str, np.ndarray, tuple[int, ...]]] = [
        ("reference_keep", o.reference_keep, (len(o.reference_logits), n))
    ]
    masks += [] if o.target_keep is None else [("target_keep", o.target_keep, (n,))]
    for name, mask, shape in masks:
        if mask.shape != shape or mask.dtype.kind not in "biu" or not np.isin(mask, (0, 1)).all():
            raise DataError(f"outputs: {name} must be boolean of shape {shape}, got {mask.shape}, dtype {mask.dtype}")
    if n and (o.labels.min() < 0 or o.labels.max() >= o.n_classes):
        raise DataError(f"outputs: labels must lie in [0, {o.n_classes}) for logits of {o.n_classes} classes")


def refuse_nonfinite(model: str, logits: np.ndarray, record: int | None) -> None:
    """NaN or inf in a model's logits (``record`` the first such, found by the signal pass, which reads every
    logit anyway): refused naming the model and the record (never scored)."""
    if record is None:
        return
    bad = int((~np.isfinite(logits).all(axis=1)).sum())  # only on the way to an error: a second pass is fine
    value = np.asarray(logits[record])[~np.isfinite(logits[record])][0]
    raise DataError(
        f"outputs: {model} has a non-finite logit ({value}) at record {record} "
        f"({bad} record(s) in all); recompute or drop them"
    )
