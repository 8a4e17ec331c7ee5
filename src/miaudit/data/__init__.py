"""Data: built-in loaders, user files, and the membership split."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError, did_you_mean
from ..registries import discover
from ..storage import default_cache_dir
from .base import LOADERS, Dataset, LoadContext, Tokenize, cache_untouched, default_data_dir, validate_arrays
from .files import load_file
from .split import Split, hold_out_validation, reference_subsets, split_indices

discover(__name__, __path__, skip=("base", "files", "split"))


def load(
    name: str | None = None,
    path: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    label_column: str = "y",
    num_classes: int | None = None,
    subset: int | None = None,
    seed: int = 0,
    tokenize: Tokenize | None = None,
) -> Dataset:
    """A built-in data set by name, or a user file by path; optionally a seeded random subset. ``tokenize``
    (a model's tokenizer) makes text data sets token ids instead of their default features."""
    ctx = LoadContext(
        data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(),
        cache_dir=Path(cache_dir).expanduser() if cache_dir else default_cache_dir(),
        tokenize=tokenize,
    )
    if path is not None:
        ds = load_file(Path(path), label_column, num_classes)
    elif name is not None and name in LOADERS:
        ds = LOADERS[name](ctx)
    else:
        hint = did_you_mean(str(name), sorted(LOADERS)) or f"; expected one of {sorted(LOADERS)} or {{path: file.npz}}"
        raise DataError(f"dataset: unknown data set {name!r}{hint}")
    if subset is not None and subset > len(ds):
        raise DataError(f"dataset.subset: {subset} records asked for, {ds.name} has {len(ds)}; lower it or drop subset")
    if subset is not None and subset < len(ds):
        keep = np.sort(np.random.default_rng(np.random.SeedSequence([seed, 0x5B5])).permutation(len(ds))[:subset])
        ds = Dataset(name=ds.name, x=ds.x[keep], y=ds.y[keep], n_classes=ds.n_classes)
    return ds


__all__ = [
    "load",
    "cache_untouched",
    "Dataset",
    "DataError",
    "LOADERS",
    "LoadContext",
    "Split",
    "split_indices",
    "hold_out_validation",
    "reference_subsets",
    "validate_arrays",
    "default_data_dir",
    "default_cache_dir",
]
