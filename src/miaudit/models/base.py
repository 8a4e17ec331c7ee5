"""The shape every built-in model shares: a body producing penultimate features and a linear head."""

from __future__ import annotations

import torch
import torch.nn as nn


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
