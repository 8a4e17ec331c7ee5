"""The small data sets that ship inside scikit-learn: always available, no files."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from .base import Dataset, LoadContext, loader, validate_arrays


def _sklearn_datasets() -> ModuleType:
    """scikit-learn's data sets, imported when one is loaded (importing scikit-learn takes a second)."""
    from sklearn import datasets

    return datasets


@loader("digits")
def digits(ctx: LoadContext) -> Dataset:
    """1,797 8x8 grey images, 10 classes, scaled to [0, 1]; shape (n, 1, 8, 8) so CNNs work too."""
    d = _sklearn_datasets().load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None, :, :]
    return validate_arrays("digits", x, d.target, 10)


def _standardised(name: str, bunch) -> Dataset:
    x = bunch.data.astype(np.float64)
    x = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
    return validate_arrays(name, x, bunch.target)


@loader("breast_cancer")
def breast_cancer(ctx: LoadContext) -> Dataset:
    return _standardised("breast_cancer", _sklearn_datasets().load_breast_cancer())


@loader("wine")
def wine(ctx: LoadContext) -> Dataset:
    return _standardised("wine", _sklearn_datasets().load_wine())


@loader("iris")
def iris(ctx: LoadContext) -> Dataset:
    return _standardised("iris", _sklearn_datasets().load_iris())
