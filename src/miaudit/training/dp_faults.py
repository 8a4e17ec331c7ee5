"""Planted faults (``train.dp.planted_fault``): DP-SGD bugs put into training on purpose, so that an audit's power
to catch a broken claim can be tested. Defined once here (``Faults``: what each changes in a step) and used by
both DP-SGD trainers: ``dp_sgd.train_dp`` (Opacus, one model: ``Planted`` hooks them into Opacus' module and
optimizer) and ``dp_stacked.StackedDPSGD`` (M models at once, the many-run audit's). Each changes exactly what its
key names; the accountants are told the correct algorithm's parameters, so the declared epsilon is false:

- ``noise_scale: s``: the noise drawn is s times the noise accounted;
- ``clip: none``: per-sample gradients are not clipped (the noise stays sigma x max_grad_norm);
- ``clip: after_mean``: the batch's mean gradient is clipped to max_grad_norm instead of each record's gradient
  (the common bug of ``clip_grad_norm_`` after a mean loss), then the usual noise / expected batch size is added;
- ``sampling: {accounted_rate_factor: f}``: the accountants and the noise calibration are told a sampling rate f
  times smaller than the Poisson rate used (over the same number of steps);
- ``noise: per_epoch``: noise is drawn once per epoch, at its first step that takes place (a non-empty batch);
  the epoch's other steps add none;
- ``public_pass: true``: one epoch of plain (non-private) SGD on the private data before DP-SGD, with its own
  optimizer (``loop.optimizer_with_schedule``'s, at the first epoch's rate).

Opacus' ghost clipping reads the clipping norm from the wrapped module (``GradSampleModuleFastGradientClipping
.max_grad_norm``) and the noise's from the optimizer (``DPOptimizer.max_grad_norm``): clipping is skipped by
setting the module's alone to infinity, which makes every clipping coefficient 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

import torch
import torch.nn as nn

from .loop import optimizer_with_schedule
from .options import DPConfig, TrainConfig

NORM_EPS = 1e-6  # Opacus' clip factor: max_grad_norm / (norm + 1e-6), at most 1


@dataclass(frozen=True)
class Faults:
    """What the planted faults change in DP-SGD's step (the default: nothing, correct DP-SGD)."""

    noise_scale: float = 1.0  # noise drawn / noise accounted
    clip: Literal["none", "after_mean"] | None = None  # per-sample clipping skipped, or the batch's mean clipped
    noise_per_epoch: bool = False  # noise at each epoch's first step only
    accounted_rate_factor: float = 1.0  # the accountants are told a rate this many times smaller than the one used
    public_pass: bool = False  # one epoch of plain SGD on the private records first

    @classmethod
    def of(cls, dp: DPConfig) -> Faults:
        f = dp.planted_fault
        if f is None:
            return cls()
        return cls(
            noise_scale=f.noise_scale if f.noise_scale is not None else 1.0,
            clip=f.clip,
            noise_per_epoch=f.noise == "per_epoch",
            accounted_rate_factor=f.sampling.accounted_rate_factor if f.sampling is not None else 1.0,
            public_pass=bool(f.public_pass),
        )

    def accounted_rate(self, used_rate: float) -> float:
        """The sampling rate the accountants and the noise calibration are told of."""
        return used_rate / self.accounted_rate_factor if self.accounted_rate_factor != 1 else used_rate

    def per_sample_clip(self, max_grad_norm: float) -> float:
        """The norm each record's gradient is clipped to: none (infinity) under a clipping fault."""
        return math.inf if self.clip is not None else max_grad_norm

    def drawn(self, first_of_epoch: bool) -> float:
        """The noise drawn at a step, in multiples of the noise accounted."""
        return 0.0 if self.noise_per_epoch and not first_of_epoch else self.noise_scale

    def clip_mean(
        self, summed: torch.Tensor, counts: torch.Tensor, expected: float, max_grad_norm: float
    ) -> torch.Tensor:
        """What the noise is added to, from the (M, P) sums of the (per-sample clipped) gradients of M models'
        batches of ``counts`` (M, 1) records: the sums themselves, or, under ``clip: after_mean``, each batch's mean
        gradient clipped to ``max_grad_norm`` as a whole, times the expected batch size (the noisy sum is divided
        by it next)."""
        if self.clip != "after_mean":
            return summed
        mean = summed / counts.clamp(min=1)
        factor = (max_grad_norm / (mean.norm(dim=1, keepdim=True) + NORM_EPS)).clamp(max=1.0)
        return mean * factor * expected


class _NoisyOptimizer(Protocol):
    """What ``Planted`` reads and sets of Opacus' ``DPOptimizer``."""

    noise_multiplier: float
    expected_batch_size: int
    params: list[torch.Tensor]

    def add_noise(self) -> None: ...


class Planted:
    """The hooks of one Opacus DP-SGD run's planted faults (none: every hook leaves the run as it is)."""

    def __init__(self, dp: DPConfig) -> None:
        self.fault = dp.planted_fault
        self.faults = Faults.of(dp)
        self.max_grad_norm = dp.max_grad_norm
        self.batch = 0  # the size of the step's Poisson batch (after_mean's mean)
        self.sigma = 0.0

    @property
    def noise_scale(self) -> float:
        return self.faults.noise_scale

    def accounted_rate(self, used_rate: float) -> float:
        """The sampling rate the accountants and the noise calibration are told of."""
        return self.faults.accounted_rate(used_rate)

    def public_pass(
        self, model: nn.Module, loader: Iterable[tuple[torch.Tensor, torch.Tensor]], cfg: TrainConfig
    ) -> None:
        """``public_pass``: one epoch of plain SGD (no clipping, no noise) on the private data, in place."""
        if not self.faults.public_pass:
            return
        opt, _ = optimizer_with_schedule(model, cfg)
        loss_fn = nn.CrossEntropyLoss()
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            opt.step()

    def into(self, private: nn.Module, dp_opt: _NoisyOptimizer, sigma: float) -> None:
        """Plant the clipping and noise faults into Opacus' module and optimizer."""
        self.sigma = sigma  # the accountants are told sigma; the noise drawn is set per step (``before_step``)
        dp_opt.noise_multiplier = sigma * self.faults.drawn(True)
        if self.faults.clip is not None:
            setattr(private, "max_grad_norm", self.faults.per_sample_clip(self.max_grad_norm))  # noqa: B010
        if self.faults.clip != "after_mean":
            return
        add_noise = dp_opt.add_noise

        def clipped_then_noise() -> None:  # Opacus divides by the expected batch size after the noise
            params = list(dp_opt.params)
            flat = torch.cat([p.summed_grad.reshape(1, -1) for p in params], 1)  # type: ignore[attr-defined]
            counts = torch.full((1, 1), float(self.batch))
            flat = self.faults.clip_mean(flat, counts, dp_opt.expected_batch_size, self.max_grad_norm)
            for p, g in zip(params, flat[0].split([p.numel() for p in params]), strict=True):
                p.summed_grad = g.view_as(p)  # type: ignore[attr-defined]
            add_noise()

        setattr(dp_opt, "add_noise", clipped_then_noise)  # noqa: B010  (an instance's method, replaced)

    def before_step(self, dp_opt: _NoisyOptimizer, first_of_epoch: bool, batch: int) -> None:
        """Per step: the noise drawn (``noise: per_epoch``: at the epoch's first step only)."""
        self.batch = batch
        dp_opt.noise_multiplier = self.sigma * self.faults.drawn(first_of_epoch)

    def record(self) -> dict[str, object]:
        """results.json's ``target.dp.planted_fault`` (empty when nothing was planted)."""
        if self.fault is None:
            return {}
        drawn = {"noise_multiplier_drawn": self.sigma * self.noise_scale} if self.fault.noise_scale is not None else {}
        return {"planted_fault": {**self.fault.kinds(), **drawn, "description": self.fault.description()}}
