"""What one run of a user's DP training function shows directly (issue 53): named defects, no statistics.

miaudit calls the function itself, so it sees the model before and after, every optimizer step the function takes
(torch's global step pre-hook, ``watch``) and, where the function calls ``miaudit.dp_observe(optimizer)``, the
Opacus ``DPOptimizer`` and the batches it draws. None of this needs canaries, so it holds at any claimed epsilon,
also above what a one-run statistical audit can ever show. A defect is a fact about the run, never an estimate:

- ``unprotected_parameters``: trainable parameters that changed but are not in the observed DP optimizer;
- ``noiseless_updates``: the last layer's gradient carries no noise. Softmax cross-entropy makes every per-example
  gradient of the classification layer sum to zero over the classes (sum_k (p_k - y_k) = 0), and clipping scales
  it; DP-SGD's Gaussian noise does not, so the class sums of that layer's gradient at each step are the noise
  alone. Sums that vanish (below 1e-4 of the gradient's norm, where float rounding sits near 1e-7) in any step mean
  a step without noise: the layer left out of DP, or a non-private pass after the private one (which is why
  pre-training on public data belongs outside the function: a fixed public initialisation is never flagged);
- ``repeated_noise``: those class sums, pure noise, repeat: across the steps of one run (a generator re-seeded with
  a constant) or, step by step, between the target and a reference the function trained (a constant seed per
  run: the same noise whatever miaudit seeds torch with). Fresh noise from a reproducible seed is not flagged:
  miaudit seeds torch differently for every model it trains, so a generator seeded from torch's RNG (or from
  anything that differs per run) draws other noise in each run; only noise independent of that seed repeats;
- ``private_buffers``: normalisation statistics (BatchNorm running mean and variance) changed during training:
  computed from the private records without clipping or noise;
- ``optimizer_never_stepped``: ``dp_observe`` joined an optimizer that took no noisy step;
- ``steps_outside_dp``: the optimizer wrapped by the DP optimizer (or another holding the model's parameters)
  stepped without a noisy step of the observed one (clipping and noise skipped);
- ``accountant_mismatch``: the facts the accountant was told understate what the run did: a sampling rate below the
  rate of the batches drawn (a one-sided binomial z above 6), a noise multiplier above the optimizer's, fewer steps
  than the optimizer took. Facts that overstate (fewer steps taken, as when training stops early) are conservative.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from ..config.dp_training import AccountantFacts
from ..results.dp import Defect

NOISELESS = 1e-4  # class sums below this fraction of the gradient's norm: no noise (rounding sits near 1e-7)
REPEAT = 0.25  # two steps' noise within this relative distance: the same noise (fresh noise: about sqrt(2))
KEPT_STEPS = 1000  # steps whose noise is kept for the repeat checks
RATE_Z = 6.0  # a claimed sampling rate this many binomial standard errors below the drawn rate understates it


@dataclass
class Observed:
    """The Opacus ``DPOptimizer`` a function joined (``miaudit.dp_observe``) and what it did."""

    optimizer: Any
    params: set[int]  # ids of its parameters
    noise_multiplier: float
    steps: int = 0  # noisy steps (its step hook ran)
    drawn: int = 0  # examples in the batches of those steps
    pending: bool = False  # a noisy step whose wrapped optimizer has not stepped yet
    bypassed: int = 0  # steps of an optimizer of the model's parameters without a noisy step before them

    def noisy_step(self, optimizer: Any) -> None:
        """Its step hook: one noisy step, with the batch it clipped (Opacus' per-sample gradients)."""
        self.steps += 1
        self.pending = True
        for p in optimizer.params:
            sample = getattr(p, "grad_sample", None)
            if sample is not None:
                self.drawn += sum(len(s) for s in sample) if isinstance(sample, list) else len(sample)
                break


@dataclass
class Trace:
    """One call of the function, seen directly: the model before and after, the class sums of its last layer's
    gradient at each step, the optimizer steps, the observed DP optimizer."""

    model: nn.Module
    records: int
    head: tuple[torch.Tensor, torch.Tensor | None] | None
    start: dict[str, torch.Tensor] = field(default_factory=dict)
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)
    noise: list[np.ndarray] = field(default_factory=list)  # class sums per step with a head gradient (kept steps)
    head_steps: int = 0
    noiseless_steps: int = 0
    observed: Observed | None = None
    changed: list[str] = field(default_factory=list)  # trainable parameters that changed
    changed_buffers: list[str] = field(default_factory=list)

    def step(self, optimizer: Any) -> None:
        """torch's global step pre-hook: an optimizer is about to apply its gradients."""
        mine = {id(p) for p in self.model.parameters()}
        params = [p for g in optimizer.param_groups for p in g["params"]]
        if not any(id(p) in mine for p in params):
            return
        if self.observed is not None and optimizer is not self.observed.optimizer:
            if self.observed.pending:
                self.observed.pending = False
            else:
                self.observed.bypassed += 1
        if self.head is None or not any(p is self.head[0] for p in params):
            return
        grads = [p.grad.detach().double() for p in self.head if p is not None and p.grad is not None]
        if not grads or self.head[0].grad is None:
            return
        total = float(torch.sqrt(torch.stack([g.pow(2).sum() for g in grads]).sum()))
        if total == 0.0:
            return
        sums = torch.cat([g.sum(0).reshape(-1) for g in grads])
        self.head_steps += 1
        self.noiseless_steps += bool(float(sums.norm()) < NOISELESS * total)
        if len(self.noise) < KEPT_STEPS:
            self.noise.append(sums.numpy())


def head_of(model: nn.Module, n_classes: int) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """The classification layer: the last ``nn.Linear`` with one output per class, when it is trained."""
    last = [m for m in model.modules() if isinstance(m, nn.Linear) and m.out_features == n_classes]
    if not last or not last[-1].weight.requires_grad:
        return None
    return last[-1].weight, last[-1].bias


def _normalisation_buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    """The floating-point buffers of normalisation layers (BatchNorm's running statistics), as they are now."""
    out = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.batchnorm._NormBase):
            for b, t in module.named_buffers(recurse=False):
                if t is not None and t.is_floating_point():
                    out[f"{name}.{b}" if name else b] = t.detach().clone()
    return out


_WATCHING: list[Trace] = []  # the calls being watched, innermost last (``dp_observe`` joins the last)


@contextmanager
def watch(model: nn.Module, n_classes: int, records: int) -> Iterator[Trace]:
    """Watch one call of the function on ``model``: every optimizer step it takes, and the model's change."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    trace = Trace(model, records, head_of(model, n_classes))
    trace.start = {k: p.detach().clone() for k, p in model.named_parameters() if p.requires_grad}
    trace.buffers = _normalisation_buffers(model)
    handle = register_optimizer_step_pre_hook(lambda opt, args, kwargs: trace.step(opt))
    _WATCHING.append(trace)
    try:
        yield trace
    finally:
        _WATCHING.remove(trace)
        handle.remove()
    now = dict(model.named_parameters())
    trace.changed = [k for k, v in trace.start.items() if k in now and not torch.equal(now[k].detach(), v)]
    after = _normalisation_buffers(model)
    trace.changed_buffers = [k for k, v in trace.buffers.items() if k in after and not torch.equal(after[k], v)]
    trace.start, trace.buffers = {}, {}  # the copies are not needed any more


def current() -> Trace | None:
    """The call being watched now, if any."""
    return _WATCHING[-1] if _WATCHING else None


def _repeats_within(noise: list[np.ndarray]) -> int:
    """Steps whose noise is (nearly) that of an earlier step."""
    if len(noise) < 2 or noise[0].size < 8:  # a few dimensions: near-repeats by chance (the cross-run check stays)
        return 0
    z = torch.as_tensor(np.stack(noise))
    dist = torch.cdist(z, z)
    dist = dist + torch.triu(torch.full_like(dist, float("inf")))  # earlier steps only
    nearest = dist.min(1).values[1:]
    return int((nearest < REPEAT * z.norm(dim=1)[1:]).sum())


def _repeats_across(a: list[np.ndarray], b: list[np.ndarray]) -> int:
    """Steps, by index, whose noise is (nearly) the same in two runs."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    za, zb = np.stack(a[:n]), np.stack(b[:n])
    return int((np.linalg.norm(za - zb, axis=1) < REPEAT * np.linalg.norm(zb, axis=1)).sum())


def defects(
    target: Trace, others: list[Trace], facts: AccountantFacts | None, name: str
) -> tuple[list[Defect], list[str]]:
    """The target's defects, each with what to fix, and what could not be checked (``others``: the calls of the
    function that trained the references, whose noise is compared with the target's)."""
    found: list[Defect] = []
    unchecked: list[str] = []
    seen = target.observed

    def add(kind: str, detail: str) -> None:
        found.append(Defect(kind=kind, detail=detail))

    if target.changed_buffers:
        add(
            "private_buffers",
            f"normalisation statistics ({', '.join(target.changed_buffers[:4])}) changed during training: they are "
            "computed from the private records with no clipping and no noise; keep those layers in eval mode (or "
            "use GroupNorm/LayerNorm, as Opacus does) and compute any statistics from public data",
        )
    if seen is not None:
        outside = [k for k, p in target.model.named_parameters() if k in target.changed and id(p) not in seen.params]
        if outside:
            add(
                "unprotected_parameters",
                f"{len(outside)} trainable parameter tensor(s) changed but are not in the DP optimizer passed to "
                f"miaudit.dp_observe ({', '.join(outside[:4])}): give make_private an optimizer over every "
                "parameter, or freeze them (requires_grad=False)",
            )
        if seen.steps == 0:
            add(
                "optimizer_never_stepped",
                f"the DP optimizer {name} passed to miaudit.dp_observe took no noisy step: the model was trained by "
                "something else; step the optimizer make_private returned",
            )
        if seen.bypassed:
            add(
                "steps_outside_dp",
                f"{seen.bypassed} optimizer step(s) updated the model without a noisy step of the DP optimizer "
                "(no clipping, no noise): step the optimizer make_private returned, not the one you gave it",
            )
        if facts is not None and seen.steps:
            add_facts(facts, seen, target.records, add)
    elif facts is None:
        unchecked.append("the accountant's facts (no dp_observe, and none returned or configured)")
    if target.head is None:
        unchecked.append("noise on the last layer and its freshness (no linear layer with one output per class)")
    elif target.head_steps:
        if target.noiseless_steps:  # Gaussian noise leaves class sums that vanish with probability 0
            add(
                "noiseless_updates",
                f"the last layer's gradient carried no noise in {target.noiseless_steps} of {target.head_steps} "
                "optimizer steps (its class sums are exactly zero, which Gaussian noise never leaves): it learned "
                "from the plain gradient there (left out of DP, or a non-private pass); clip and noise every "
                "parameter's gradient in every step, and pre-train on public data outside the function",
            )
        else:
            within = _repeats_within(target.noise)
            across = max((_repeats_across(target.noise, o.noise) for o in others), default=0)
            kept = len(target.noise)
            if within > kept // 2:
                add(
                    "repeated_noise",
                    f"the noise repeats: in {within} of {kept} steps it is that of an earlier step (a generator "
                    "re-seeded with a constant?); draw fresh noise at every step from a generator seeded once per run",
                )
            elif across > kept // 2:
                add(
                    "repeated_noise",
                    f"the same noise in every run: {across} of {kept} steps drew the noise of the reference your "
                    "function trained with another seed (a fixed seed in your code?); seed the noise from a source "
                    "that differs per run (torch's RNG, which miaudit seeds per model, or the OS's)",
                )
            if not others:
                unchecked.append("noise reused across runs (no reference trained by your function to compare with)")
    return found, unchecked


def add_facts(facts: AccountantFacts, seen: Observed, records: int, add: Any) -> None:
    """The accountant's facts against the observed optimizer: the sampling rate of the batches drawn, its noise
    multiplier and its steps (only what understates the privacy loss is a defect)."""
    claimed = facts.sample_rate
    trials = seen.steps * records
    drawn_rate = seen.drawn / trials
    z = (seen.drawn - trials * claimed) / np.sqrt(max(trials * claimed * (1 - claimed), 1e-12))
    wrong = []
    if z > RATE_Z:
        wrong.append(
            f"sampling rate {claimed:.4g} accounted, but the batches drawn hold {seen.drawn} examples in "
            f"{seen.steps} steps over {records} records: rate {drawn_rate:.4g}"
        )
    if facts.noise_multiplier > seen.noise_multiplier * (1 + 1e-3):
        wrong.append(
            f"noise multiplier {facts.noise_multiplier:.4g} accounted, the optimizer's {seen.noise_multiplier:.4g}"
        )
    if seen.steps > facts.steps:
        wrong.append(f"{facts.steps} steps accounted, {seen.steps} taken")
    if wrong:
        add(
            "accountant_mismatch",
            "the accountant was told less than the run did: " + "; ".join(wrong) + ": compute epsilon from what "
            "the training does (Opacus' make_private takes the rate from the data loader)",
        )


def observed_rate(seen: Observed | None, records: int) -> float | None:
    """The sampling rate of the batches the observed optimizer drew: what the white-box observer scores at."""
    if seen is None or not seen.steps or not seen.drawn:
        return None
    return min(1.0, seen.drawn / (seen.steps * records))
