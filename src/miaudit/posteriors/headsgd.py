"""Minibatch SGD on a linear head over cached penultimate features: what SWAG and the last-layer
ensemble run (the backbone is fixed, so one epoch is one pass of matrix products)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .base import FeatureSet


def sgd_head(
    theta: torch.Tensor,
    train: FeatureSet,
    *,
    lr: float,
    epochs: int,
    seed: int,
    batch_size: int = 64,
    momentum: float = 0.9,
    weight_decay: float = 5e-4,
    after_epoch: Callable[[torch.Tensor], None] | None = None,
) -> torch.Tensor:
    """SGD with momentum and weight decay on the cross-entropy of a head given as the float64 vector
    ``theta`` ((C, d+1) row-major, ``base.head_vector``'s layout), records shuffled by ``seed``.
    ``after_epoch`` sees a copy of the vector after every epoch; returns the final vector."""
    features, labels = train
    phi = features.double()
    phi1 = torch.cat([phi, phi.new_ones(len(phi), 1)], dim=1)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long, device=phi.device)
    n_classes = theta.numel() // phi1.shape[1]
    w = theta.detach().clone().reshape(n_classes, -1).requires_grad_(True)
    opt = torch.optim.SGD([w], lr=lr, momentum=momentum, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=gen).split(batch_size):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(phi1[idx] @ w.T, y[idx]).backward()
            opt.step()
        if after_epoch is not None:
            after_epoch(w.detach().reshape(-1).clone())
    return w.detach().reshape(-1).clone()
