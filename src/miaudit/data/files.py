"""User data files: ``.npz`` with arrays x and y, ``.csv`` with a header and a label
column, or a folder of images with one subfolder per class; and index files
(``.npy`` or text) naming records of those data.

None of these formats can execute code: npz and npy are read with
``allow_pickle=False``, images are decoded by Pillow.
"""

from __future__ import annotations

import logging
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import DataError
from .base import Dataset, validate_arrays

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)


def load_file(path: Path, label_column: str = "y", n_classes: int | None = None) -> Dataset:
    path = Path(path).expanduser()
    if path.is_dir():
        x, y = _image_folder(path)
        return validate_arrays(path.name, x, y, n_classes)
    if not path.is_file():
        raise DataError(f"dataset.path: file {path} not found")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        x, y = _read_npz(path)
    elif suffix == ".csv":
        x, y = _read_csv(path, label_column)
    else:
        raise DataError(
            f"dataset.path: unsupported file type {suffix!r}; expected .npz (arrays x, y), .csv "
            "or a folder of images with one subfolder per class"
        )
    return validate_arrays(path.stem, x, y, n_classes)


def _read_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Arrays x and y of an .npz archive, read without pickle; every way a file can fail is one line."""
    with open(path, "rb") as f:
        head = f.read(4)
    if not head:
        raise DataError(f"dataset.path: {path.name} is empty (0 bytes); expected arrays x and y (numpy.savez)")
    if head[:2] != b"PK":  # every .npz is a zip archive
        raise DataError(f"dataset.path: {path.name} is not an .npz archive; save arrays x and y with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as z:
            missing = sorted({"x", "y"} - set(z.files))
            arrays = {} if missing else {"x": z["x"], "y": z["y"]}
    except ValueError as e:
        if "pickle" not in str(e):
            raise DataError(f"dataset.path: {path.name} is damaged ({str(e).splitlines()[0][:80]})") from None
        raise DataError(
            f"dataset.path: {path.name} holds Python objects (dtype object), not numbers; save numeric arrays x and y"
        ) from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as e:
        raise DataError(f"dataset.path: {path.name} is truncated or damaged ({type(e).__name__})") from None
    if missing:
        raise DataError(f"dataset.path: {path.name} lacks array(s) {missing}; expected arrays x and y")
    return arrays["x"], arrays["y"]


def _read_csv(path: Path, label_column: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of a .csv with a header row and one record per line."""
    import pandas as pd  # here: half a second that audits without a CSV (e.g. `miaudit score`) need not pay

    try:
        frame = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"dataset.path: {path.name} is empty; expected a header row and one record per line") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise DataError(f"dataset.path: cannot read {path.name} as CSV ({str(e).splitlines()[0][:100]})") from None
    if label_column not in frame.columns:
        columns = [str(c) for c in frame.columns]
        likely = next((c for c in columns if c.lower() in LABEL_NAMES), columns[-1])
        raise DataError(
            f"dataset.label_column: column {label_column!r} not in {path.name} (its {len(columns)} columns: "
            f"{', '.join(columns)}); set dataset.label_column to the column of class labels, e.g. {likely}"
        )
    if frame.empty:
        raise DataError(f"dataset.path: {path.name} has a header but no records")
    y = _class_numbers(frame.pop(label_column), f"{path.name} column {label_column!r}")
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise DataError(f"dataset.path: non-numeric feature column(s) {non_numeric[:5]} in {path.name}")
    return frame.to_numpy(dtype=np.float64), y


LABEL_NAMES = ("y", "label", "labels", "class", "target", "category")


def _class_numbers(labels: pd.Series, where: str) -> np.ndarray:
    """Numeric labels as they are; text labels numbered 0..K-1 in sorted order, with a warning giving the map."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(labels):
        return labels.to_numpy()
    if labels.isna().any():
        raise DataError(f"dataset.path: {where} has {int(labels.isna().sum())} empty label(s)")
    names = sorted(labels.astype(str).unique())
    shown = ", ".join(f"{name}={i}" for i, name in enumerate(names[:10])) + (", ..." if len(names) > 10 else "")
    log.warning("dataset: %s holds text labels; classes numbered in sorted order: %s", where, shown)
    return labels.astype(str).map({name: i for i, name in enumerate(names)}).to_numpy(dtype=np.int64)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
GREY_MODES = ("1", "L")


def _open_image(path: Path) -> Image.Image:
    try:
        with Image.open(path) as im:
            im.load()
            return im
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError) as e:
        raise DataError(f"dataset.path: cannot read image {path} ({e})") from None


def _pixels(im: Image.Image, colour: bool) -> np.ndarray:
    """(channels, height, width) float32 in [0, 1]."""
    pixels = np.asarray(im.convert("RGB" if colour else "L"), dtype=np.float32) / 255.0
    return pixels.transpose(2, 0, 1) if colour else pixels[None]


def _image_folder(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """Images under ``root/<class>/``; labels number the class folders in sorted order (as torchvision's
    ImageFolder does). Grey-scale unless some image has colour; every image must have one size."""
    classes = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    files = [
        (f, label) for label, d in enumerate(classes) for f in sorted(d.iterdir()) if f.suffix.lower() in IMAGE_SUFFIXES
    ]
    if len(classes) < 2 or not files:
        raise DataError(
            f"dataset.path: folder {root} needs one subfolder of images per class (found "
            f"{len(classes)} class folder(s), {len(files)} image(s))"
        )
    opened = [_open_image(f) for f, _ in files]
    for (f, _), im in zip(files, opened):
        if im.size != opened[0].size:
            raise DataError(
                f"dataset.path: image {f} is {im.size[0]}x{im.size[1]}, {files[0][0]} is "
                f"{opened[0].size[0]}x{opened[0].size[1]}; resize all images to one size"
            )
    colour = any(im.mode not in GREY_MODES for im in opened)
    return np.stack([_pixels(im, colour) for im in opened]), np.array([label for _, label in files], dtype=np.int64)


def load_indices(path: str | Path | Sequence[int], field: str, n_records: int) -> np.ndarray:
    """Record indices (rows of the data set) from a ``.npy`` or text file (one integer per line), or given as a list."""
    if not isinstance(path, str | Path):
        raw, name = np.asarray(path), "the list"
    else:
        raw, name = _index_file(Path(path).expanduser(), field), Path(path).name
    if raw.ndim != 1 or raw.dtype.kind not in "iuf" or not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
        raise DataError(
            f"{field}: {name} must hold one integer record index per line, got shape {raw.shape}, dtype {raw.dtype}"
        )
    idx = raw.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n_records):
        bad = idx[(idx < 0) | (idx >= n_records)][0]
        raise DataError(f"{field}: index {bad} is outside the data set's {n_records} records (0-based)")
    unique, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise DataError(f"{field}: index {unique[counts > 1][0]} is listed {counts.max()} times")
    return idx


def _index_file(path: Path, field: str) -> np.ndarray:
    """A file of record indices read without pickle (``load_indices`` checks what it holds)."""
    if not path.is_file():
        raise DataError(f"{field}: file {path} not found")
    try:
        with warnings.catch_warnings():  # an empty text file: numpy warns, then the caller refuses it in one line
            warnings.simplefilter("ignore", UserWarning)
            return np.load(path, allow_pickle=False) if path.suffix.lower() == ".npy" else np.loadtxt(path, ndmin=1)
    except (ValueError, OSError, EOFError) as e:
        raise DataError(
            f"{field}: {path.name} is not a list of record indices ({str(e).splitlines()[0][:100]})"
        ) from None
