"""The tabular MLP (`mlp`) of the membership-inference benchmarks."""

from __future__ import annotations

import math

import torch.nn as nn

from .base import FeatureHeadModel, register_model


@register_model("mlp")
class MLP(FeatureHeadModel):
    """The 4-layer tanh MLP used for tabular membership benchmarks (Nasr et al. 2018;
    BMIA paper section 4.1): hidden widths 1024-512-256-128, then the linear head.
    Any input shape is flattened."""

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, hidden: tuple[int, ...] = (1024, 512, 256, 128)):
        super().__init__()
        layers: list[nn.Module] = [nn.Flatten()]
        width = math.prod(input_shape)
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, n_classes)
