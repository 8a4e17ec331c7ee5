"""Built-in architectures. Every model exposes ``features(x)`` (the penultimate
representation) and ``head`` (the last ``nn.Linear``), with
``forward(x) == head(features(x))``: the Laplace-based attacks and the leverage
score work on that last layer.
"""

from __future__ import annotations

from collections.abc import Callable

import torch.nn as nn

from ..registries import discover
from . import adapters, io
from .base import ARCHITECTURES, register_model, with_head_dropout

discover(__name__, __path__)  # each module registers its architectures (or model source) on import


def architecture(name: str) -> Callable[..., nn.Module]:
    """The factory of a built-in architecture, of another library's model (``torchvision:NAME``,
    ``timm:NAME``, ``hf:PATH``; ``models/adapters.py``), or of a user's ``package.module:factory``."""
    if adapters.is_adapter_name(name):
        return adapters.factory(name)
    if io.is_import_path(name):
        return io.import_factory(name)
    try:
        return ARCHITECTURES[name]
    except KeyError:
        raise io.ModelError(
            f"model: unknown architecture {name!r}; expected one of {sorted(ARCHITECTURES)}, "
            "torchvision:NAME, timm:NAME, hf:PATH or package.module:factory"
        ) from None


def build_model(
    name: str, input_shape: tuple[int, ...], n_classes: int, head_dropout: float = 0.0, **kwargs
) -> nn.Module:
    """A fresh model of architecture ``name`` for inputs of ``input_shape`` (no batch axis); an
    architecture that does not fit them (a CNN on tabular rows) is a one-line ModelError.
    ``head_dropout`` > 0 trains it with dropout before the head (``with_head_dropout``)."""
    try:
        return with_head_dropout(architecture(name)(tuple(input_shape), n_classes, **kwargs), head_dropout)
    except io.ModelError:
        raise
    except ValueError as e:
        raise io.ModelError(str(e).splitlines()[0]) from None


__all__ = [
    "register_model",
    "with_head_dropout",
    "ARCHITECTURES",
    "architecture",
    "build_model",
    "io",
    "adapters",
]
