"""Built-in architectures. Every model exposes ``features(x)`` (the penultimate
representation) and ``head`` (the last ``nn.Linear``), with
``forward(x) == head(features(x))``: the Laplace-based attacks and the leverage
score work on that last layer.
"""
from __future__ import annotations

from typing import Callable

import torch.nn as nn

from .cnn import SmallCNN
from .mlp import MLP
from .resnet import SmallResNet

ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLP,
    "cnn": SmallCNN,
    "resnet": SmallResNet,
}


def build_model(name: str, input_shape: tuple[int, ...], n_classes: int, **kwargs) -> nn.Module:
    """A fresh model of a built-in architecture for inputs of ``input_shape`` (no batch axis)."""
    try:
        factory = ARCHITECTURES[name]
    except KeyError:
        raise ValueError(f"model: unknown architecture {name!r}; expected one of {sorted(ARCHITECTURES)}") from None
    return factory(tuple(input_shape), n_classes, **kwargs)


__all__ = ["ARCHITECTURES", "build_model", "MLP", "SmallCNN", "SmallResNet"]
