"""User data files: ``.npz`` with arrays x and y, or ``.csv`` with a header and a label column.

Neither format can execute code: npz is read with ``allow_pickle=False``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .base import DataError, Dataset, validate_arrays


def load_file(path: Path, label_column: str = "y", n_classes: int | None = None) -> Dataset:
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"dataset.path: file {path} not found")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                missing = {"x", "y"} - set(z.files)
                if missing:
                    raise DataError(f"dataset.path: {path.name} lacks array(s) {sorted(missing)}; expected arrays x and y")
                x, y = z["x"], z["y"]
        except ValueError as e:  # object arrays need pickle: refuse
            raise DataError(f"dataset.path: {path.name} needs pickle to load ({e}); save plain numeric arrays x and y") from None
    elif suffix == ".csv":
        frame = pd.read_csv(path)
        if label_column not in frame.columns:
            raise DataError(f"dataset.label_column: column {label_column!r} not in {path.name} (columns: {list(frame.columns)[:8]})")
        y = frame.pop(label_column).to_numpy()
        non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
        if non_numeric:
            raise DataError(f"dataset.path: non-numeric feature column(s) {non_numeric[:5]} in {path.name}")
        x = frame.to_numpy(dtype=np.float64)
    else:
        raise DataError(f"dataset.path: unsupported file type {suffix!r}; expected .npz (arrays x, y) or .csv")
    return validate_arrays(path.stem, x, y, n_classes)
