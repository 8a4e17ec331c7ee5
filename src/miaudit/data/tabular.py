"""Purchase-100 and Texas-100 (Shokri et al. 2017) in the text formats of the public
``privacytrustlab/datasets`` repository, and the parser for those binary-feature tables.

No checksums are pinned for these two: the files are not available offline here,
so their hashes are unknown (``sha256=None``). Decoded arrays are cached under a
key made from a fresh hash of the files, so an edited file is never read stale.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from ..errors import DataError
from .base import Dataset, LoadContext, cached_arrays, file_key, loader, require_file, validate_arrays

PURCHASE_FILE = "purchase/dataset_purchase"  # `dataset_purchase.tgz`, unpacked into purchase/
PURCHASE_FEATURES = 600
TEXAS_FEATURES_FILE = "texas/100/feats"  # `dataset_texas.tgz`, unpacked as is
TEXAS_LABELS_FILE = "texas/100/labels"
TEXAS_FEATURES = 6169
N_CLASSES = 100

if TYPE_CHECKING:
    import pandas as pd


def _read_int_csv(
    source: Path | IO[bytes], dataset: str, where: str, n_columns: int, label_first: bool
) -> pd.DataFrame:
    """Comma-separated integers, no header; uint8 features (a 67k x 6k table fits) and an int64 label."""
    import pandas as pd  # here: every loader module is imported to register it; pandas costs half a second

    dtypes = defaultdict(lambda: np.uint8, {0: np.int64} if label_first else {})
    try:
        frame = pd.read_csv(source, header=None, dtype=dtypes)
    except ValueError as e:  # includes pandas' ParserError and EmptyDataError
        raise DataError(f"dataset {dataset}: cannot read {where} as comma-separated integers ({e})") from None
    if frame.shape[1] != n_columns:
        raise DataError(f"dataset {dataset}: {where} has {frame.shape[1]} columns, expected {n_columns}")
    return frame


def binary_features(values: np.ndarray, dataset: str, where: str) -> np.ndarray:
    if values.size and values.max() > 1:
        raise DataError(f"dataset {dataset}: {where} holds feature values up to {int(values.max())}, expected 0/1")
    return np.ascontiguousarray(values, dtype=np.uint8)


def labels_from_one(raw: np.ndarray, n_classes: int, dataset: str, where: str) -> np.ndarray:
    """Labels written 1..n_classes in the file -> int64 0..n_classes-1."""
    raw = np.asarray(raw, dtype=np.int64)
    if raw.size and (raw.min() < 1 or raw.max() > n_classes):
        raise DataError(f"dataset {dataset}: {where} has labels {raw.min()}..{raw.max()}, expected 1..{n_classes}")
    return raw - 1


def read_label_first_csv(
    source: Path | IO[bytes], dataset: str, where: str, n_features: int, n_classes: int
) -> dict[str, np.ndarray]:
    """Rows ``label,f1,...,fd`` (label 1..n_classes, quoted or not; 0/1 features) -> x uint8, y int64 0-based."""
    frame = _read_int_csv(source, dataset, where, n_features + 1, label_first=True)
    return {
        "x": binary_features(frame.iloc[:, 1:].to_numpy(), dataset, where),
        "y": labels_from_one(frame[0].to_numpy(), n_classes, dataset, where),
    }


def _read_texas(features: Path, labels: Path) -> dict[str, np.ndarray]:
    x = binary_features(
        _read_int_csv(features, "texas100", str(features), TEXAS_FEATURES, False).to_numpy(), "texas100", str(features)
    )
    y = labels_from_one(
        _read_int_csv(labels, "texas100", str(labels), 1, True)[0].to_numpy(), N_CLASSES, "texas100", str(labels)
    )
    if len(x) != len(y):
        raise DataError(f"dataset texas100: {features} has {len(x)} rows but {labels} has {len(y)} labels")
    return {"x": x, "y": y}


@loader("purchase100")
def purchase100(ctx: LoadContext) -> Dataset:
    """Purchase-100: 197,324 shoppers, 600 binary features, 100 classes (labels 1..100 in the file)."""
    path = require_file(ctx, PURCHASE_FILE, None, "purchase100")
    arrays = cached_arrays(
        ctx,
        f"purchase100-{file_key(path, None)}",
        lambda: read_label_first_csv(path, "purchase100", str(path), PURCHASE_FEATURES, N_CLASSES),
    )
    return validate_arrays("purchase100", arrays["x"], arrays["y"], N_CLASSES)


@loader("texas100")
def texas100(ctx: LoadContext) -> Dataset:
    """Texas-100: 67,330 hospital discharges, 6,169 binary features, 100 classes (``labels`` file, 1..100)."""
    features = require_file(ctx, TEXAS_FEATURES_FILE, None, "texas100")
    labels = require_file(ctx, TEXAS_LABELS_FILE, None, "texas100")
    key = f"texas100-{file_key(features, None)}-{file_key(labels, None)}"
    arrays = cached_arrays(ctx, key, lambda: _read_texas(features, labels))
    return validate_arrays("texas100", arrays["x"], arrays["y"], N_CLASSES)
