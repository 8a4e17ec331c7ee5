"""The small CNN (`cnn`): three convolution blocks, a hidden layer and the linear head, for image data sets;
`as_image` reads a record shape as (channels, height, width)."""

from __future__ import annotations

import torch.nn as nn

from .base import ImageModel, register_model


def as_image(input_shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(input_shape) == 3:
        return input_shape  # (channels, height, width)
    if len(input_shape) == 2:
        return (1, *input_shape)
    raise ValueError(f"model: a convolutional model needs image inputs (C, H, W) or (H, W), got shape {input_shape}")


@register_model("cnn")
class SmallCNN(ImageModel):
    """Three conv blocks (16-32-64 channels, BatchNorm, ReLU, max-pool), global
    average pooling, a 128-wide hidden layer, then the linear head. Sized for CPU
    (about 100 s for 1,000 CIFAR-10 images x 35 epochs on 2 cores); any image
    size works thanks to the adaptive pooling."""

    def __init__(
        self, input_shape: tuple[int, ...], n_classes: int, channels: tuple[int, ...] = (16, 32, 64), width: int = 128
    ):
        super().__init__()
        c_in = as_image(input_shape)[0]
        self.image_shape = as_image(input_shape)
        blocks: list[nn.Module] = []
        for c in channels:
            blocks += [
                nn.Conv2d(c_in, c, 3, padding=1, bias=False),
                nn.BatchNorm2d(c),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2, ceil_mode=True),
            ]
            c_in = c
        self.body = nn.Sequential(
            *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, width), nn.ReLU(inplace=True)
        )
        self.head = nn.Linear(width, n_classes)
