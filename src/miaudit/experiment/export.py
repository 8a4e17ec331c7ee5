"""A miaudit run's outputs written in the scores-only layouts (``scores_layouts``): for auditing them
again without the models (``miaudit score``), or with other tools (the published LiRA code).

The records written are the run's queries, population and validation records, in the data set's order
(``records`` gives their ids there); index files name the queried members and non-members (or the
queries) and the validation records by position. Logits are written as float32 where that loses
nothing (the cache keeps float32), else float64.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import OutputDirError
from .base import Experiment
from .layouts import Outputs


def _compact(logits: np.ndarray) -> np.ndarray:
    as32 = np.asarray(logits, dtype=np.float32)
    return as32 if np.array_equal(as32, logits) else np.asarray(logits, dtype=np.float64)


def from_experiment(exp: Experiment) -> Outputs:
    """The experiment's outputs on its queries, population and validation records."""
    s = exp.split
    records = np.unique(np.concatenate([exp.query_idx, s.population, s.validation]).astype(np.int64))
    position = np.full(len(exp.dataset), -1, dtype=np.int64)
    position[records] = np.arange(len(records))
    if exp.membership_known:
        sets = {"members": position[np.sort(s.members)], "nonmembers": position[np.sort(s.nonmembers)]}
    else:
        sets = {"queries": position[exp.query_idx]}
    return Outputs(
        labels=exp.dataset.y[records].astype(np.int64),
        target_logits=_compact(exp.target.logits[records]),
        reference_logits=[_compact(r.logits[records]) for r in exp.references],
        reference_keep=np.array([np.isin(records, r.train_idx) for r in exp.references]).reshape(-1, len(records)),
        target_keep=np.isin(records, s.members),
        sets={**sets, "validation": position[np.sort(s.validation)]},
        records=records,
    )


def _fresh(path: Path) -> Path:
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OutputDirError(f"export: {path} exists and is not an empty directory; give another --out, or --force")
    return path


def _absent(path: Path) -> Path:
    if path.exists():
        raise OutputDirError(f"export: {path} exists; give another --out, or --force to replace it")
    return path


def write_npz(outputs: Outputs, path: Path) -> Path:
    """Our layout as one .npz file (``path``, the suffix added when missing)."""
    path = _absent(Path(path).with_suffix(".npz") if Path(path).suffix != ".npz" else Path(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {
        "labels": outputs.labels,
        "target_logits": outputs.target_logits,
        "reference_logits": np.stack(outputs.reference_logits)
        if outputs.reference_logits
        else np.zeros((0,) + outputs.target_logits.shape),
        "reference_keep": outputs.reference_keep.astype(bool),
        **({} if outputs.target_keep is None else {"target_keep": outputs.target_keep.astype(bool)}),
        **outputs.sets,
        **({} if outputs.records is None else {"records": outputs.records}),
    }
    np.savez(path, allow_pickle=False, **arrays)
    return path


def write_lira(outputs: Outputs, path: Path) -> Path:
    """The LiRA code's experiment directory: experiment-k_M per reference in order, the target last
    (experiment-K_M, the model LiRA's plot.py attacks), logits as (N, 1, 1, C)."""
    root = _fresh(path)
    root.mkdir(parents=True, exist_ok=True)
    np.save(root / "y_train.npy", outputs.labels)
    models = [*zip(outputs.reference_logits, outputs.reference_keep), (outputs.target_logits, outputs.target_keep)]
    for i, (logits, keep) in enumerate(models):
        folder = root / f"experiment-{i}_{len(models)}"
        (folder / "logits").mkdir(parents=True)
        np.save(folder / "keep.npy", np.asarray(keep, dtype=bool))
        np.save(folder / "logits" / "0000000000.npy", np.asarray(logits)[:, None, None, :])
    for name, idx in {**outputs.sets, **({} if outputs.records is None else {"records": outputs.records})}.items():
        np.save(root / f"{name}.npy", idx)
    return root


def destination(path: Path, layout: str, force: bool = False) -> Path:
    """Where ``export`` writes (a .npz file for npz, the suffix added; a folder for lira), checked before any
    work: an existing one is refused unless ``force``."""
    path = Path(path)
    final = path.with_suffix(".npz") if layout == "npz" and path.suffix != ".npz" else path
    if not force:
        (_fresh if layout == "lira" else _absent)(final)
    return final


def export(exp: Experiment, path: Path, layout: str, force: bool = False) -> Path:
    """Write ``exp``'s outputs at ``path`` in ``layout`` (npz or lira); return where.

    Written beside ``path`` under a hidden name and moved into place at the end, so an interrupted export
    leaves nothing half-written; an existing ``path`` is refused unless ``force``, then replaced."""
    final = destination(path, layout, force)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        outputs = from_experiment(exp)
        written = write_lira(outputs, staging / "out") if layout == "lira" else write_npz(outputs, staging / "out.npz")
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        written.replace(final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return final
