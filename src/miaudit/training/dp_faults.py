"""Planted faults (``train.dp.planted_fault``): DP-SGD bugs put into ``training.train_dp`` on purpose, so that an
audit's power to catch a broken claim can be tested. Each changes exactly what its key names; the accountants are
told the correct algorithm's parameters, so the declared epsilon is false:

- ``noise_scale: s``: the noise drawn is s times the noise accounted;
- ``clip: none``: per-sample gradients are not clipped (the noise stays sigma x max_grad_norm);
- ``clip: after_mean``: the batch's mean gradient is clipped to max_grad_norm instead of each record's gradient
  (the common bug of ``clip_grad_norm_`` after a mean loss), then the usual noise / expected batch size is added;
- ``sampling: {accounted_rate_factor: f}``: the accountants and the noise calibration are told a sampling rate f
  times smaller than the Poisson rate used (over the same number of steps);
- ``noise: per_epoch``: noise is drawn once per epoch, at its first step; the epoch's other steps add none;
- ``public_pass: true``: one epoch of plain (non-private) SGD on the private data before DP-SGD.

Opacus' ghost clipping reads the clipping norm from the wrapped module (``GradSampleModuleFastGradientClipping
.max_grad_norm``) and the noise's from the optimizer (``DPOptimizer.max_grad_norm``): clipping is skipped by
setting the module's alone to infinity, which makes every clipping coefficient 1.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from .loop import optimizer_with_schedule
from .options import DPConfig, TrainConfig


class Planted:
    """The hooks of one DP-SGD run's planted faults (none: every hook leaves the run as it is)."""

    def __init__(self, dp: DPConfig) -> None:
        self.fault = dp.planted_fault
        self.max_grad_norm = dp.max_grad_norm
        self.batch = 0  # the size of the step's Poisson batch (after_mean's mean)

    @property
    def noise_scale(self) -> float:
        return self.fault.noise_scale if self.fault is not None and self.fault.noise_scale is not None else 1.0

    def accounted_rate(self, used_rate: float) -> float:
        """The sampling rate the accountants and the noise calibration are told of."""
        if self.fault is None or self.fault.sampling is None:
            return used_rate
        return used_rate / self.fault.sampling.accounted_rate_factor

    def public_pass(self, model: nn.Module, loader: Any, cfg: TrainConfig) -> None:
        """``public_pass``: one epoch of plain SGD (no clipping, no noise) on the private data, in place."""
        if self.fault is None or not self.fault.public_pass:
            return
        opt, _ = optimizer_with_schedule(model, cfg)
        loss_fn = nn.CrossEntropyLoss()
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()

    def into(self, private: nn.Module, dp_opt: Any, sigma: float) -> None:
        """Plant the clipping and noise faults into Opacus' module and optimizer."""
        dp_opt.noise_multiplier = sigma * self.noise_scale  # the noise drawn; the accountants are told sigma
        self.sigma_drawn = dp_opt.noise_multiplier
        clip = None if self.fault is None else self.fault.clip
        if clip is not None:
            setattr(private, "max_grad_norm", float("inf"))  # noqa: B010  every clipping coefficient becomes 1
        if clip == "after_mean":
            add_noise = dp_opt.add_noise

            def clipped_mean_then_noise() -> None:
                grads = [p.summed_grad for p in dp_opt.params]
                mean_norm = torch.sqrt(sum(((g / max(self.batch, 1)) ** 2).sum() for g in grads))
                factor = min(1.0, self.max_grad_norm / (float(mean_norm) + 1e-6))
                for p in dp_opt.params:  # Opacus divides by the expected batch size after the noise
                    p.summed_grad = p.summed_grad / max(self.batch, 1) * factor * dp_opt.expected_batch_size
                add_noise()

            setattr(dp_opt, "add_noise", clipped_mean_then_noise)  # noqa: B010  (an instance's method, replaced)

    def before_step(self, dp_opt: Any, first_of_epoch: bool, batch: int) -> None:
        """Per step: ``noise: per_epoch`` draws noise at the epoch's first step only."""
        self.batch = batch
        if self.fault is not None and self.fault.noise == "per_epoch":
            dp_opt.noise_multiplier = self.sigma_drawn if first_of_epoch else 0.0

    def record(self) -> dict[str, Any]:
        """results.json's ``target.dp.planted_fault`` (empty when nothing was planted)."""
        if self.fault is None:
            return {}
        drawn = {"noise_multiplier_drawn": self.sigma_drawn} if self.fault.noise_scale is not None else {}
        return {"planted_fault": {**self.fault.kinds(), **drawn, "description": self.fault.description()}}
