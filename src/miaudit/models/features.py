"""The penultimate representation of a model: what last-layer methods (BMIA's posteriors, GLS) work on."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from ..errors import ModelError


def penultimate(model: nn.Module, x: np.ndarray, device: str = "cpu", batch_size: int = 1024) -> torch.Tensor:
    """``model.features`` on every record (eval mode, no grad), as float64 (n, d)."""
    model.eval()
    features = model.features
    if not callable(features):
        raise ModelError(f"model: {type(model).__name__}.features is not a method giving penultimate features")
    with torch.no_grad():
        parts = [
            features(torch.as_tensor(x[i : i + batch_size], dtype=torch.float32, device=device))
            for i in range(0, len(x), batch_size)
        ]
    return torch.cat(parts).to(torch.float64)
