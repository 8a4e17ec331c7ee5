"""DP-SGD for a stack of M models at once (the multi-run audit's trainer): one architecture, M parameter sets
with a leading model axis, each model with its own training records, Poisson sampler and noise.

Each model takes the steps of ``training.train_dp`` (Opacus): every step it samples each of its records with
probability q = 1 / ceil(n / batch_size), clips each sampled record's gradient to ``max_grad_norm`` (flat
clipping: the norm over all parameters), sums them, adds Gaussian noise of standard deviation
noise_multiplier x max_grad_norm to every coordinate, divides by the expected batch size int(n q) and takes a step
of ``train``'s optimizer and per-epoch schedule (``loop.optimizer_with_schedule``'s, over the (M, P) stack of
parameters: SGD and AdamW act on each coordinate alone, so each model steps as it would alone); a step whose
Poisson batch is empty is skipped (that model's parameters and optimizer state kept). The noise multiplier is
``dp_sgd.calibrated``'s, train_dp's. Planted faults (``train.dp.planted_fault``) are ``dp_faults.Faults``, as
train_dp plants them: the per-sample clip, the clipped mean, the noise drawn per step, the accountant's rate and
the public pass are its.

Per-sample gradients, two ways with the same result:
- ``per_sample_grads``: torch.func, ``vmap`` over models and over records of ``grad`` of a ``functional_call``:
  any architecture without buffers, every per-sample gradient materialised (the reference; memory B x P per
  model).
- the Linear path (``linear_layers``): a model that is a chain of ``nn.Linear`` layers and element-wise
  activations (miaudit's ``mlp``, ``logreg``) gets each record's gradient norm from its layer inputs a and
  output gradients g (||g a^T||^2 = ||g||^2 ||a||^2, "ghost" norms) and the clipped sum as one batched matmul
  per layer, never materialising a per-sample gradient: ~3 forward passes of work per step.

Models train in chunks of ``chunk`` (memory bounded); each model's randomness comes from its own seed, so a
model's weights do not depend on the chunking.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from ..errors import ConfigError
from .dp_faults import NORM_EPS, Faults
from .dp_sgd import calibrated
from .loop import optimizer_with_schedule, schedule_rates
from .options import DPConfig, TrainConfig

ELEMENTWISE = (nn.Tanh, nn.ReLU, nn.Sigmoid, nn.GELU, nn.LeakyReLU, nn.ELU, nn.Identity, nn.Dropout)


@dataclass(frozen=True)
class StackSpec:
    """The DP-SGD algorithm every model of the stack runs: ``train_dp``'s for the same ``train`` and ``dp``."""

    train: TrainConfig  # epochs, batch size, optimizer, learning rate, momentum, weight decay, schedule
    noise_multiplier: float  # accounted
    max_grad_norm: float
    faults: Faults = Faults()

    @classmethod
    def of(cls, train: TrainConfig, dp: DPConfig, n: int) -> StackSpec:
        """The DP-SGD of ``train_dp`` on a data set of n records (the noise multiplier calibrated as there)."""
        sigma, _ = calibrated(dp, 1.0 / math.ceil(n / train.batch_size), train.epochs)
        return cls(train=train, noise_multiplier=sigma, max_grad_norm=dp.max_grad_norm, faults=Faults.of(dp))

    def sample_rate(self, n: int) -> float:
        return 1.0 / self.steps_per_epoch(n)

    def accounted_rate(self, n: int) -> float:
        """The sampling rate the accountant is told (the sample rate unless a sampling fault is planted)."""
        return self.faults.accounted_rate(self.sample_rate(n))

    def steps_per_epoch(self, n: int) -> int:
        return math.ceil(n / self.train.batch_size)

    def lr_rates(self) -> list[float]:
        """Each epoch's learning rate (``loop.schedule_rates``: the optimizer's schedule)."""
        return schedule_rates(self.train)


def linear_layers(model: nn.Module) -> list[nn.Module] | None:
    """The model as a chain of Linear layers and element-wise activations (Flatten first), or None."""
    from ..models.base import FeatureHeadModel

    if isinstance(model, FeatureHeadModel) and isinstance(model.body, nn.Sequential) and model.head_dropout == 0:
        chain = [*model.body, model.head]
    elif isinstance(model, nn.Sequential):
        chain = list(model)
    else:
        return None
    chain = [m for m in chain if not isinstance(m, nn.Flatten)]
    if not chain or not all(isinstance(m, (nn.Linear, *ELEMENTWISE)) for m in chain):
        return None
    return chain


def stack_params(model: nn.Module, count: int) -> dict[str, torch.Tensor]:
    """``count`` copies of the model's parameters, each with a leading model axis."""
    return {k: v.detach().unsqueeze(0).repeat(count, *([1] * v.dim())).clone() for k, v in model.named_parameters()}


def per_sample_grads(
    model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> dict[str, torch.Tensor]:
    """(M, B, *shape) gradients of each record's cross-entropy for each model (torch.func: vmap over models and
    records of grad of functional_call). x: (M, B, *input), y: (M, B)."""

    def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    per_record = vmap(grad(loss), in_dims=(None, 0, 0))
    return dict(vmap(per_record, in_dims=(0, 0, 0))(params, x, y))


def clipped_sum_vmap(
    model: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, clip: float
) -> dict[str, torch.Tensor]:
    """Sum over records of w x the per-sample gradient clipped to ``clip`` (w: 1 for a sampled record, 0 for
    padding), from materialised per-sample gradients."""
    grads = per_sample_grads(model, params, x, y)
    norms = torch.stack([g.flatten(2).pow(2).sum(-1) for g in grads.values()]).sum(0).sqrt()  # (M, B)
    factor = (clip / (norms + NORM_EPS)).clamp(max=1.0) * w
    return {k: torch.einsum("mb,mb...->m...", factor, g) for k, g in grads.items()}


def clipped_sum_linear(
    chain: list[nn.Module],
    names: list[tuple[str, str]],
    params: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    clip: float,
) -> dict[str, torch.Tensor]:
    """``clipped_sum_vmap`` for a chain of Linear layers and element-wise activations (``linear_layers``):
    per-sample norms from layer inputs and output gradients, the clipped sum as one batched matmul a layer."""
    a = x.flatten(2)
    inputs, outputs = [], []
    with torch.enable_grad():
        layer = 0
        for module in chain:
            if isinstance(module, nn.Linear):
                wname, bname = names[layer]
                inputs.append(a)
                z = torch.baddbmm(params[bname].unsqueeze(1), a, params[wname].transpose(1, 2))
                if not z.requires_grad:  # the first layer's output: a leaf to differentiate by
                    z.requires_grad_(True)
                outputs.append(z)
                a = z
                layer += 1
            else:
                a = module(a)
        loss = F.cross_entropy(a.flatten(0, 1), y.flatten(), reduction="sum")
        gs = torch.autograd.grad(loss, outputs)
    # ||g a^T||^2 + ||g||^2 = ||g||^2 (||a||^2 + 1): a record's weight and bias gradient of one layer
    sq = torch.stack([g.pow(2).sum(-1) * (a_.pow(2).sum(-1) + 1.0) for g, a_ in zip(gs, inputs, strict=True)])
    factor = (clip / (sq.sum(0).sqrt() + NORM_EPS)).clamp(max=1.0) * w  # (M, B)
    out = {}
    for (wname, bname), g, a_ in zip(names, gs, inputs, strict=True):
        gc = g * factor.unsqueeze(-1)
        out[wname] = torch.bmm(gc.transpose(1, 2), a_)
        out[bname] = gc.sum(1)
    return out


class StackedDPSGD:
    """M models of one architecture trained by DP-SGD together (module docstring). ``build`` gives the module
    whose parameter layout the stack copies; ``start`` the parameters every model starts from (default: each
    model's own seeded initialisation)."""

    def __init__(self, build: Callable[[], nn.Module], spec: StackSpec, chunk: int = 16) -> None:
        self.build, self.spec, self.chunk = build, spec, chunk
        self.template = build()
        chain = linear_layers(self.template)
        self.chain = chain
        if chain is not None:
            by_id = {id(p): k for k, p in self.template.named_parameters()}
            self.names = [(by_id[id(m.weight)], by_id[id(m.bias)]) for m in chain if isinstance(m, nn.Linear)]
            if any(m.bias is None for m in chain if isinstance(m, nn.Linear)):
                self.chain = None
        if self.chain is None and any(True for _ in self.template.buffers()):
            raise ConfigError("model: the stacked DP-SGD trainer needs a model without buffers (no BatchNorm)")

    def clipped_sum(
        self, params: dict, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, clip: float | None = None
    ) -> dict:
        """The per-sample sum clipped to ``clip`` (default: the planted faults' per-sample clip, max_grad_norm for
        correct DP-SGD)."""
        if clip is None:
            clip = self.spec.faults.per_sample_clip(self.spec.max_grad_norm)
        if self.chain is not None:
            return clipped_sum_linear(self.chain, self.names, params, x, y, w, clip)
        return clipped_sum_vmap(self.template, params, x, y, w, clip)

    def train(
        self,
        x: np.ndarray,
        y: np.ndarray,
        train_idx: list[np.ndarray],
        seeds: list[int],
        size: int,
        start: dict[str, torch.Tensor] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[dict[str, torch.Tensor]]:
        """One parameter dict per model: model i trains on records ``train_idx[i]`` with seed ``seeds[i]``.
        The sample rate, steps and expected batch size are those of a data set of ``size`` records for every
        model: the add/remove neighbours D and D + canary are trained by the same algorithm (the accountant's)."""
        xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)
        out: list[dict[str, torch.Tensor]] = []
        for lo in range(0, len(seeds), self.chunk):
            trained = self._train_chunk(
                xt, yt, train_idx[lo : lo + self.chunk], seeds[lo : lo + self.chunk], size, start
            )
            out += [{k: v[i].clone() for k, v in trained.items()} for i in range(len(trained[next(iter(trained))]))]
            if progress is not None:
                progress(len(out))
        return out

    def _initial(self, seeds: list[int], start: dict[str, torch.Tensor] | None) -> dict[str, torch.Tensor]:
        if start is not None:
            return {k: v.detach().unsqueeze(0).repeat(len(seeds), *([1] * v.dim())).clone() for k, v in start.items()}
        models = []
        for s in seeds:
            torch.manual_seed(s)
            models.append(dict(self.build().named_parameters()))
        return {k: torch.stack([m[k].detach() for m in models]) for k in models[0]}

    @torch.no_grad()
    def _train_chunk(
        self,
        x: torch.Tensor,
        y: torch.Tensor,
        train_idx: list[np.ndarray],
        seeds: list[int],
        n: int,
        start: dict[str, torch.Tensor] | None,
    ) -> dict[str, torch.Tensor]:
        spec, faults, m = self.spec, self.spec.faults, len(seeds)
        initial = self._initial(seeds, start)
        shapes = {k: v.shape[1:] for k, v in initial.items()}
        flat = torch.cat([v.flatten(1) for v in initial.values()], 1)  # (m, P): one update pass for all tensors
        params = unflatten(flat, shapes)  # views into flat
        q, per_epoch = spec.sample_rate(n), spec.steps_per_epoch(n)
        expected = int(n * q)
        sizes = [len(i) for i in train_idx]
        longest = max(sizes)
        records = torch.zeros(m, longest, dtype=torch.long)  # (m, longest): each model's records, then padding
        valid = torch.zeros(m, longest, dtype=torch.bool)
        for i, idx in enumerate(train_idx):
            records[i, : len(idx)], valid[i, : len(idx)] = torch.as_tensor(idx, dtype=torch.long), True
        if faults.public_pass:
            self._public_pass(flat, params, shapes, x, y, records, sizes, seeds)
        samplers = [torch.Generator().manual_seed(int(s) + 2) for s in seeds]
        noises = [torch.Generator().manual_seed(int(s) + 1) for s in seeds]
        noise = torch.empty_like(flat)
        opt, sched = optimizer_with_schedule([flat], spec.train, own_gradients=True)
        for _ in range(spec.train.epochs):
            noised = torch.zeros(m, 1, dtype=torch.bool)  # which models drew this epoch's first noise
            for _ in range(per_epoch):
                masks = valid.clone()  # each model draws for its own records only: independent of the chunking
                for i, g in enumerate(samplers):
                    masks[i, : sizes[i]] = torch.rand(sizes[i], generator=g) < q
                counts = masks.sum(1)
                width = int(counts.max())
                if width == 0:
                    continue
                active = (counts > 0).unsqueeze(1)  # an empty Poisson batch: the step is skipped (train_dp)
                # each model's sampled records first, then padding (weight 0)
                order = torch.argsort((~masks).to(torch.int8), dim=1, stable=True)[:, :width]
                picked = torch.gather(records, 1, order)
                w = (torch.arange(width).unsqueeze(0) < counts.unsqueeze(1)).to(torch.float32)
                summed = self.clipped_sum(params, x[picked], y[picked], w)
                for i, g in enumerate(noises):
                    torch.randn(flat.shape[1], generator=g, out=noise[i])
                grads = torch.cat([summed[k].flatten(1) for k in shapes], 1)
                grads = faults.clip_mean(grads, counts.unsqueeze(1), expected, spec.max_grad_norm)
                if faults.noise_per_epoch:
                    drawn = torch.tensor([[faults.drawn(not bool(b))] for b in noised[:, 0]])
                    grads.add_(noise * (spec.noise_multiplier * drawn * spec.max_grad_norm))
                else:
                    grads.add_(noise, alpha=spec.noise_multiplier * faults.drawn(True) * spec.max_grad_norm)
                step(opt, flat, grads.div_(expected), active)
                noised |= active
            sched.step()
        return {k: v.clone() for k, v in params.items()}

    def _public_pass(
        self,
        flat: torch.Tensor,
        params: dict[str, torch.Tensor],
        shapes: dict[str, torch.Size],
        x: torch.Tensor,
        y: torch.Tensor,
        records: torch.Tensor,
        sizes: list[int],
        seeds: list[int],
    ) -> None:
        """The ``public_pass`` fault, in place (as ``dp_faults.Planted.public_pass``: one epoch of plain SGD with
        its own optimizer before DP-SGD): each model's records shuffled by its own seed, in batches of
        ``batch_size``, the mean raw gradient, the optimizer at the first epoch's rate."""
        size = self.spec.train.batch_size
        orders = [torch.randperm(n, generator=torch.Generator().manual_seed(int(s) + 3)) for n, s in zip(sizes, seeds)]
        opt, _ = optimizer_with_schedule([flat], self.spec.train, own_gradients=True)
        for b in range(math.ceil(max(sizes) / size)):
            picked = torch.zeros(len(seeds), size, dtype=torch.long)
            w = torch.zeros(len(seeds), size)
            for i, order in enumerate(orders):
                batch = records[i, order[b * size : (b + 1) * size]]
                picked[i, : len(batch)], w[i, : len(batch)] = batch, 1.0
            counts = w.sum(1, keepdim=True)
            summed = self.clipped_sum(params, x[picked], y[picked], w, clip=math.inf)
            grads = torch.cat([summed[k].flatten(1) for k in shapes], 1) / counts.clamp(min=1)
            step(opt, flat, grads, counts > 0)  # a model whose records ran out takes no step


def step(opt: torch.optim.Optimizer, flat: torch.Tensor, grads: torch.Tensor, active: torch.Tensor) -> None:
    """One step of ``opt`` (over the (M, P) stack ``flat``) with these gradients, for the models ``active`` (M, 1)
    alone: the others keep their parameters and their rows of the optimizer's state (the momentum buffer a model
    has not started is zero: its first step's buffer is its gradient, as torch's). AdamW's step count is shared
    by the stack: a model that skipped a step (an empty Poisson batch, chance (1 - q)^n) corrects its moments' bias
    as if it had taken it."""
    flat.grad = grads
    if bool(active.all()):
        opt.step()
        return
    idle = ~active[:, 0]
    kept = flat[idle].clone()
    state = opt.state[flat]
    rows = {k: v[idle].clone() for k, v in state.items() if torch.is_tensor(v) and v.shape == flat.shape}
    opt.step()
    flat[idle] = kept
    for k, v in state.items():
        if torch.is_tensor(v) and v.shape == flat.shape:
            v[idle] = rows.get(k, 0.0)


def unflatten(flat: torch.Tensor, shapes: dict[str, torch.Size]) -> dict[str, torch.Tensor]:
    """Views of a (M, P) tensor as the named (M, *shape) parameters."""
    sizes = [math.prod(s) for s in shapes.values()]
    return {k: v.view(len(flat), *s) for (k, s), v in zip(shapes.items(), flat.split(sizes, 1), strict=True)}
