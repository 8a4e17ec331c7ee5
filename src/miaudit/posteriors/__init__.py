"""Posteriors over a model's last layer, behind one interface (``base.Posterior``).

Every module of this package registers its posteriors on import (``registries.discover``, as for the attacks),
so adding a posterior is adding a module. BMIA and MR-BMIA pick one by name (their ``posterior:`` parameter).
The modules (and torch with them) load on the first use of a name below, not with the package: the attacks'
parameters name the posteriors' options (``kinds``) when ``miaudit.attacks`` is imported, which a scores-only
audit does without torch.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

from ..registries import discover

if TYPE_CHECKING:
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
]


@functools.cache
def load_all() -> None:
    """Import every module of the package: each registers its posteriors on import."""
    discover(__name__, __path__)


def __getattr__(name: str) -> object:
    """A name of ``base``, or a module of the package, every posterior registered first (PEP 562)."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load_all()
    if name in globals():  # a module of the package: its import set it here
        return globals()[name]
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.base"), name)
