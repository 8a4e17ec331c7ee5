"""Posteriors over a model's last layer, behind one interface (``base.Posterior``).

Every module of this package registers its posteriors on import; BMIA and MR-BMIA
pick one by name (their ``posterior:`` parameter). The modules (and torch with them) load on the
first use of a name below, not with the package: the attacks' parameters name the posteriors'
options (``kinds``) when ``miaudit.attacks`` is imported, which a scores-only audit does without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
_MODULES = ("ensemble", "laplace", "mc_dropout", "swag")


def load_all() -> None:
    """Import every posterior module: each registers its posteriors on import."""
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")


def __getattr__(name: str) -> Any:
    """A name of ``base`` or a posterior module, every posterior registered first (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load_all()
    base = importlib.import_module(f"{__name__}.base")
    return globals()[name] if name in _MODULES else getattr(base, name)
