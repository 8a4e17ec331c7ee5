"""The shape every built-in model shares: a body producing penultimate features and a linear head."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch
import torch.nn as nn

M = TypeVar("M", bound=Callable[..., nn.Module])
ARCHITECTURES: dict[str, Callable[..., nn.Module]] = {}  # name -> factory(input_shape, n_classes)


def register_model(name: str) -> Callable[[M], M]:
    """Class (or factory) decorator adding a built-in architecture under ``name``; it is called as
    ``factory(input_shape, n_classes)`` and must give a model with ``features(x)`` and ``head``."""

    def wrap(factory: M) -> M:
        if name in ARCHITECTURES:
            raise RuntimeError(f"architecture {name!r} registered twice")
        ARCHITECTURES[name] = factory
        return factory

    return wrap


class FeatureHeadModel(nn.Module):
    """Subclasses set ``self.body`` and ``self.head`` (nn.Linear); forward = head(features(x))."""

    body: nn.Module
    head: nn.Linear

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


class ImageModel(FeatureHeadModel):
    """A convolutional model: records arrive flat or shaped and are viewed as ``self.image_shape``."""

    image_shape: tuple[int, int, int]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.reshape(x.shape[0], *self.image_shape))
