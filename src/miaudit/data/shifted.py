"""Built-in distribution-shifted copies of data sets, for the robustness scenarios (BMIA paper, section
4.4): reference models trained on a differently distributed population (``reference_data:``), or
non-member queries from another source (``nonmember_data:``), reproducible offline, without downloads.

``<name>-noise`` is data set ``<name>`` with independent Gaussian noise of standard deviation
``NOISE_SD`` added to every feature, drawn from a fixed seed: the same
records, labels and feature layout, a shifted input distribution (the "Gaussian noise" corruption of
CIFAR-10-C, Hendrycks & Dietterich 2019, at a severity set by NOISE_SD rather than their five levels).
"""

from __future__ import annotations

import numpy as np

from .base import LOADERS, Dataset, LoadContext, loader, validate_arrays

NOISE_SD = 0.5  # cifar10 and location are standardised (sd 1 per feature); digits lies in [0, 1]
NOISE_SEED = 20240


def noisy(ds: Dataset, name: str, sd: float = NOISE_SD) -> Dataset:
    """``ds`` with Gaussian noise N(0, sd^2) added to every feature (seeded: the same copy every time)."""
    rng = np.random.default_rng(NOISE_SEED)
    x = ds.x + np.float32(sd) * rng.standard_normal(ds.x.shape, dtype=np.float32)
    return validate_arrays(name, x, ds.y, ds.n_classes)


def _register_noisy(base: str) -> None:
    @loader(f"{base}-noise")
    def _load(ctx: LoadContext) -> Dataset:
        return noisy(LOADERS[base](ctx), f"{base}-noise")


for _base in ("cifar10", "location", "digits"):
    _register_noisy(_base)
