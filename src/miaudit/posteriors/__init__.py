"""Posteriors over a model's last layer, behind one interface (``base.Posterior``).

Every module of this package registers its posteriors on import; BMIA and MR-BMIA
pick one by name (their ``posterior:`` parameter).
"""

from __future__ import annotations

from . import ensemble, laplace, mc_dropout, swag
from .base import (
    FeatureSet,
    Posterior,
    create,
    fit_and_score,
    names,
    options_for,
    register,
    score_moments,
    signed_signal,
)

__all__ = [
    "FeatureSet",
    "Posterior",
    "create",
    "fit_and_score",
    "names",
    "options_for",
    "register",
    "score_moments",
    "signed_signal",
    "ensemble",
    "laplace",
    "mc_dropout",
    "swag",
]
