"""The shape every built-in model shares: a body producing penultimate features and a linear head."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..registries import Registry

# name -> factory(input_shape, n_classes), a model with ``features(x)`` and ``head``
ARCHITECTURES: Registry[Callable[..., nn.Module]] = Registry("architecture")
register_model = ARCHITECTURES.register  # @register_model("name") on a built-in architecture's class


class FeatureHeadModel(nn.Module):
    """Subclasses set ``self.body`` and ``self.head`` (nn.Linear); forward = head(features(x)).

    ``head_dropout`` (default 0: none) applies dropout to the penultimate features before the head while
    training, as MC Dropout requires of the model it samples (``with_head_dropout``); in eval mode, and
    in ``features``, there is none, so the trained weights are used as any other model's."""

    body: nn.Module
    head: nn.Linear
    head_dropout: float = 0.0

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        phi = self.features(x)
        if self.head_dropout > 0:
            phi = F.dropout(phi, self.head_dropout, self.training)
        return self.head(phi)


def with_head_dropout(model: nn.Module, rate: float) -> nn.Module:
    """``model`` set to train with dropout at ``rate`` before its head (a built-in architecture only:
    a user's module has its own forward, which miaudit does not rewrite)."""
    if rate <= 0:
        return model
    if not isinstance(model, FeatureHeadModel):
        raise ValueError(
            f"model: the mc-dropout posterior trains the reference with dropout before the head, which needs a "
            f"built-in architecture; {type(model).__name__} is not one"
        )
    model.head_dropout = rate
    return model


class ImageModel(FeatureHeadModel):
    """A convolutional model: records arrive flat or shaped and are viewed as ``self.image_shape``."""

    image_shape: tuple[int, int, int]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.reshape(x.shape[0], *self.image_shape))
