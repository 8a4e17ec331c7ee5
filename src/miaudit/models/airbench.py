"""``model: airbench``: the network of airbench94 (Jordan 2024, "94% on CIFAR-10 in 3.29 seconds on a single
GPU", arXiv 2404.00498; the ``airbench`` package, MIT), rebuilt on ``FeatureHeadModel`` so that its last layer
is a linear head (BMIA's last-layer posteriors, the leverage score) and so that it trains in miaudit's loop,
its store and its stacks (``train.models_at_once``).

The shape is airbench94's: a 2x2 "whitening" convolution (2 x channels x 4 filters, with bias) and GELU, three
conv groups (3x3 conv, 2x2 max-pool, batch norm, GELU, 3x3 conv, batch norm, GELU; widths 64, 256, 256; the
convolutions start at the identity on their first channels, ``dirac_``), a 3x3 max-pool to one pixel, the
features scaled by 1/9, then the head. Where it differs from the package, and why:

- the whitening layer starts at PyTorch's default initialization and trains like every other layer (airbench
  sets its weights from the eigenvectors of the training patches' covariance and freezes them): a model here
  is built before it sees data, and a stack's members are built alike;
- batch norm keeps a learned scale (airbench freezes it at 1) and PyTorch's default epsilon; its momentum is
  airbench's (0.6 in its convention, 0.4 in PyTorch's);
- the head has a bias (airbench's has none): the attacks reading the last layer expect one.

The training recipe around it (label smoothing 0.2, the triangular learning-rate schedule, flips and crops,
batches of 1,024) is configuration: ``train: {label_smoothing, schedule: triangle, augment: flip-crop}``
(docs/scale-and-models.md: airbench). What it leaves out: test-time augmentation (``queries.augment`` is the
audit's own choice), the lookahead averaging of the weights, Nesterov momentum, the 64x learning rate of the
batch-norm biases, fp16 channels-last kernels (``train.precision: bf16`` on a GPU is the nearest).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .base import ImageModel, register_model
from .cnn import as_image

WIDTHS = (64, 256, 256)
BN_MOMENTUM = 0.4  # PyTorch's convention: airbench's batchnorm_momentum 0.6 is 1 - 0.4
SCALE = 1 / 9  # airbench's scaling_factor, on the features (so the head stays a plain linear layer)
MIN_SIDE = 16  # the smallest image the three halvings and the final 3x3 pool leave a pixel of


class _Conv(nn.Conv2d):
    """A 3x3 'same' convolution without bias, starting at the identity on its first input channels."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__(c_in, c_out, 3, padding="same", bias=False)

    def reset_parameters(self) -> None:
        super().reset_parameters()
        w = self.weight.data
        nn.init.dirac_(w[: w.size(1)])


class _ConvGroup(nn.Sequential):
    def __init__(self, c_in: int, c_out: int):
        super().__init__(
            _Conv(c_in, c_out),
            nn.MaxPool2d(2),
            nn.BatchNorm2d(c_out, momentum=BN_MOMENTUM),
            nn.GELU(),
            _Conv(c_out, c_out),
            nn.BatchNorm2d(c_out, momentum=BN_MOMENTUM),
            nn.GELU(),
        )


class _Scale(nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


@register_model("airbench")
class AirbenchNet(ImageModel):
    """airbench94's network (Jordan 2024): a 2x2 whitening conv, three conv groups of widths 64-256-256 with
    batch norm and GELU, max-pooled to 256 features, then the linear head; about 2 million weights. For
    CIFAR-sized images (at least 16x16); see the module's docstring for how it differs from the package."""

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, widths: tuple[int, int, int] = WIDTHS):
        super().__init__()
        self.image_shape = as_image(input_shape)
        c, h, w = self.image_shape
        if min(h, w) < MIN_SIDE:
            raise ValueError(f"model: airbench needs images of at least {MIN_SIDE}x{MIN_SIDE}, got {h}x{w}")
        whiten = 2 * c * 2 * 2
        groups: list[nn.Module] = []
        c_in = whiten
        for width in widths:
            groups.append(_ConvGroup(c_in, width))
            c_in = width
        self.body = nn.Sequential(
            nn.Conv2d(c, whiten, 2, padding=0, bias=True),
            nn.GELU(),
            *groups,
            nn.AdaptiveMaxPool2d(1),  # 3x3 -> 1 on 32x32 images, as airbench's MaxPool2d(3)
            nn.Flatten(),
            _Scale(SCALE),
        )
        self.head = nn.Linear(c_in, n_classes)
