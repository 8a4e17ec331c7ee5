"""The small ResNet (`resnet`): three stages of one basic block on `as_image` records, pooling, a linear head."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .base import ImageModel, register_model
from .cnn import as_image


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.skip = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.skip(x))


@register_model("resnet")
class SmallResNet(ImageModel):
    """A ResNet-8-style network (three stages of one basic block, 16-32-64
    channels), global average pooling, linear head: the CIFAR ResNet shape of He
    et al. 2016, narrowed for CPU."""

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, channels: tuple[int, ...] = (16, 32, 64)):
        super().__init__()
        self.image_shape = as_image(input_shape)
        c_in = self.image_shape[0]
        stem = [nn.Conv2d(c_in, channels[0], 3, 1, 1, bias=False), nn.BatchNorm2d(channels[0]), nn.ReLU(inplace=True)]
        stages, c = [], channels[0]
        for i, c_out in enumerate(channels):
            stages.append(_Block(c, c_out, 1 if i == 0 else 2))
            c = c_out
        self.body = nn.Sequential(*stem, *stages, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(c, n_classes)
