"""Audit your own DP training (docs/dp-pipeline.md): an Opacus training function, its claim, and miaudit's verdict.

    python examples/dp_opacus.py            # about a minute on 2 CPU cores; writes dp-opacus-audit/

The function is what you would write anyway; the one line marked is the only one miaudit asks for, and only for the
white-box observer (``canaries.gradient``): outside ``miaudit dp-audit`` it does nothing.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.nn as nn
from opacus import PrivacyEngine
from torch.utils.data import DataLoader, TensorDataset

import miaudit

EPSILON, DELTA, EPOCHS, BATCH, CLIP = 1.0, 1e-5, 30, 64, 1.0
warnings.filterwarnings("ignore", message=".*(Secure RNG|Full backward hook|Optimal order).*")  # Opacus' and torch's


def small(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(input_shape)), 128), nn.Tanh(), nn.Linear(128, n_classes))


def train(model: nn.Module, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """DP-SGD with Opacus for (EPSILON, DELTA): trains ``model`` in place; returns what the accountant was told."""
    data = TensorDataset(torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long))
    engine = PrivacyEngine(accountant="prv")
    private, optimizer, loader = engine.make_private_with_epsilon(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
        data_loader=DataLoader(data, batch_size=BATCH),
        target_epsilon=EPSILON,
        target_delta=DELTA,
        epochs=EPOCHS,
        max_grad_norm=CLIP,
    )
    miaudit.dp_observe(optimizer)  # <- the one line: white-box canaries in these noisy steps during an audit
    private.train()
    steps = 0
    for _ in range(EPOCHS):
        for xb, yb in loader:
            if len(yb):
                optimizer.zero_grad()
                nn.functional.cross_entropy(private(xb), yb).backward()
                optimizer.step()
                steps += 1
    private.remove_hooks()
    model.eval()
    return {"noise_multiplier": optimizer.noise_multiplier, "sample_rate": 1 / len(loader), "steps": steps}


if __name__ == "__main__":
    report = miaudit.dp_audit(
        train,
        data="digits",
        model=small,
        epsilon=EPSILON,
        delta=DELTA,
        canaries={"count": 300, "kind": "crafted", "guesses": 50, "gradient": 1000},
        references=2,
        out="dp-opacus-audit",
        force=True,
    )
    audit = report.dp_audit
    assert audit is not None and audit.training is not None
    print(audit.verdict)
    print("audited:", audit.training.function, "| white-box steps:", audit.training.white_box_steps)
    print("could not see:", audit.training.not_observed)
