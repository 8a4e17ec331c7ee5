"""A gallery of DP training functions a user could have written, with real bugs, and the correct ones beside them
(docs/dp-pipeline.md; ``benchmarks/dp_gallery``). Each is called as ``function(model, x, y)``, trains ``model`` in
place and returns what its accountant was told (noise_multiplier, sample_rate, steps), which ``miaudit dp-audit``
records (``dp_training``):

    dp_training: {function: miaudit_bench.dp_gallery:no_clipping, epsilon: 1.0, delta: 1.0e-5}

The module-level functions claim epsilon 1; ``at(name, epsilon)`` is the same function claiming another epsilon
(its noise calibrated for it). All of them: 30 epochs, expected batch 64, SGD lr 0.05 with momentum 0.9, clipping
norm 1, noise from Opacus' PRV accountant for the claimed (epsilon, 1e-5) and the steps accounted.

- ``correct``: DP-SGD in plain torch: Poisson sampling at rate 64/n, per-sample gradients clipped to norm C,
  Gaussian noise of std sigma * C on their sum.
- ``opacus``: the same with Opacus' ``PrivacyEngine.make_private_with_epsilon`` (Poisson loader, its accountant),
  and the one-line white-box hook ``miaudit.dp_observe(optimizer)`` (``canaries.gradient: N`` then observes it).
  Opacus divides the noisy sum by floor(n * q), a function of the private data set's size (Opacus issues #571, 2023,
  and #819, 2026): the leak those reports measure is the size, which every canary of a one-run audit shares.
- ``plain_finish`` / ``plain_finish_1``: ten / one non-private epochs on the training data after the private ones.
- ``no_clipping``: clipping that never runs: ``clip_grad_norm_`` called after the optimizer's step (on a gradient
  already used), per-sample gradients summed unclipped.
- ``noise_not_scaled``: clipping norm 10, noise std sigma where sigma * 10 was meant.
- ``half_noise``: noise std sigma * C / 2 (the accountant told sigma).
- ``more_epochs``: the noise calibrated (and the accountant told) for 10 epochs; trained for 30;
  ``opacus_more_epochs``: the same with Opacus (``make_private_with_epsilon(epochs=10)``, a loop of 30).
- ``shuffled``: fixed-size batches of a shuffled pass per epoch, accounted as Poisson sampling at rate 64/n.

Round two (issue 53): bugs the final model barely shows, which a run shows directly (``miaudit.dp.structural``):

- ``head_plain`` / ``opacus_head_outside``: the last layer learns from the plain batch gradient (plain torch), or is
  left out of the optimizer given to ``make_private`` and stepped by its own SGD (Opacus).
- ``bn_recalibrated`` / ``opacus_bn``: BatchNorm running statistics (``small_bn``, ``affine=False``) recomputed on
  the private records after DP-SGD (plain torch), or updated by every private batch in train mode (Opacus accepts
  the layer without affine parameters).
- ``same_noise`` / ``opacus_same_noise``: the noise generator re-seeded with one constant at every step.
- ``fixed_seed`` / ``opacus_fixed_seed``: a constant seed for the noise in every run (``torch.manual_seed(0)`` at
  the start; ``noise_generator=torch.Generator().manual_seed(0)``): the same noise sequence whatever the run.
- ``opacus_stale``: the loop steps the optimizer given to ``make_private``, not the one it returned.
- ``wrong_rate`` / ``opacus_wrong_rate``: noise calibrated and accounted for a sampling rate ten times smaller than
  the batches drawn.
- ``public_init`` / ``opacus_public_init``: correct DP-SGD from a fixed public initialisation (a checkpoint every run
  loads); ``correct`` and ``opacus`` draw their noise from a generator seeded from torch's RNG, fresh per run.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn as nn

import miaudit

DELTA, EPOCHS, BATCH, LR, CLIP = 1e-5, 30, 64, 0.05, 1.0
ACCOUNTANT = "prv"  # calibrates the noise (Opacus' PRV accountant, as the dpcode check)
Facts = dict[str, float]


@dataclass(frozen=True)
class Recipe:
    """One training function: the claim it calibrates its noise for, and its bugs (none: correct DP-SGD)."""

    epsilon: float = 1.0
    clip: float = CLIP
    clipping: bool = True  # False: clip_grad_norm_ after the step, which changes nothing
    noise_times_clip: bool = True  # False: std sigma where sigma * clip was meant
    noise_factor: float = 1.0  # the noise drawn is this times what the accountant was told
    accounted_epochs: int | None = None  # the accountant (and the noise) for these (None: EPOCHS); trained for EPOCHS
    shuffled: bool = False  # fixed-size batches of a shuffled pass, accounted as Poisson
    plain_epochs: int = 0  # non-private epochs after the private ones
    opacus: bool = False  # Opacus' PrivacyEngine instead of the plain-torch loop
    head_plain: bool = False  # the last layer outside DP: its plain gradient (plain), its own SGD (Opacus)
    bn: bool = False  # the model has BatchNorm (small_bn): recalibrated on the private records (plain), train mode
    noise_seed: str = "fresh"  # "per_step": re-seeded with a constant every step; "per_run": a constant seed per run
    stale: bool = False  # Opacus: the optimizer given to make_private is stepped
    rate_factor: float = 1.0  # the accountant (and the noise) told this times the rate drawn
    public_init: bool = False  # start from a fixed public checkpoint


GALLERY: dict[str, Recipe] = {
    "correct": Recipe(),
    "opacus": Recipe(opacus=True),
    "plain_finish": Recipe(plain_epochs=10),
    "plain_finish_1": Recipe(plain_epochs=1),
    "no_clipping": Recipe(clipping=False),
    "noise_not_scaled": Recipe(clip=10.0, noise_times_clip=False),
    "half_noise": Recipe(noise_factor=0.5),
    "more_epochs": Recipe(accounted_epochs=10),
    "opacus_more_epochs": Recipe(opacus=True, accounted_epochs=10),
    "shuffled": Recipe(shuffled=True),
    # round two (issue 53)
    "head_plain": Recipe(head_plain=True),
    "opacus_head_outside": Recipe(opacus=True, head_plain=True),
    "bn_recalibrated": Recipe(bn=True),
    "opacus_bn": Recipe(opacus=True, bn=True),
    "same_noise": Recipe(noise_seed="per_step"),
    "opacus_same_noise": Recipe(opacus=True, noise_seed="per_step"),
    "fixed_seed": Recipe(noise_seed="per_run"),
    "opacus_fixed_seed": Recipe(opacus=True, noise_seed="per_run"),
    "opacus_stale": Recipe(opacus=True, stale=True),
    "wrong_rate": Recipe(rate_factor=0.1),
    "opacus_wrong_rate": Recipe(opacus=True, rate_factor=0.1),
    "public_init": Recipe(public_init=True),
    "opacus_public_init": Recipe(opacus=True, public_init=True),
}
CONSTANT_SEED = 1234  # the bugs' constant
CORRECT = ("correct", "opacus", "public_init", "opacus_public_init")


@functools.lru_cache(maxsize=64)
def sigma_for(epsilon: float, sample_rate: float, steps: int, accountant: str = "prv") -> float:
    """The noise multiplier Opacus' accountant (PRV: ``ACCOUNTANT``) gives for (epsilon, DELTA) after ``steps`` at
    ``sample_rate``."""
    from opacus.accountants.utils import get_noise_multiplier

    return float(get_noise_multiplier(target_epsilon=epsilon, target_delta=DELTA, sample_rate=sample_rate,
                                      steps=steps, accountant=accountant))  # fmt: skip


def _public_start(model: nn.Module) -> None:
    """A fixed public initialisation: the same checkpoint in every run (here drawn from a fixed seed)."""
    with torch.no_grad():
        g = torch.Generator().manual_seed(2024)
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)


def _tensors(x: np.ndarray, y: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)


def _plain_epochs(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, g: torch.Generator) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    for _ in range(epochs):
        for b in torch.randperm(len(y), generator=g).split(BATCH):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[b]), y[b]).backward()
            opt.step()


def _batches(n: int, q: float, steps: int, shuffled: bool, g: torch.Generator) -> list[torch.Tensor]:
    if not shuffled:  # Poisson: each record in each step with probability q
        return [(torch.rand(n, generator=g) < q).nonzero().squeeze(1) for _ in range(steps)]
    out: list[torch.Tensor] = []
    while len(out) < steps:
        out += list(torch.randperm(n, generator=g).split(BATCH))
    return out[:steps]


def train_plain(model: nn.Module, x: np.ndarray, y: np.ndarray, r: Recipe, seed: int = 0) -> Facts:
    """DP-SGD in plain torch (``torch.func`` per-sample gradients), with ``r``'s bugs."""
    from torch.func import functional_call, grad, vmap

    xt, yt = _tensors(x, y)
    n = len(yt)
    q, steps = BATCH / n, int(EPOCHS * n / BATCH)
    told = int((r.accounted_epochs or EPOCHS) * n / BATCH)
    sigma = sigma_for(r.epsilon, q * r.rate_factor, told, ACCOUNTANT)
    if r.noise_seed == "per_run":  # the bug: the same seed in every run
        torch.manual_seed(0)
        seed = CONSTANT_SEED
    if r.public_init:
        _public_start(model)
    g = torch.Generator().manual_seed(seed)
    # the noise from the sampling generator (as round one's functions); a separate one the bugs re-seed
    noise_g = g if r.noise_seed == "fresh" else torch.Generator().manual_seed(seed + 1)
    names = [k for k, _ in model.named_parameters()]
    head = set(names[-2:]) if r.head_plain else set()  # the last Linear's weight and bias

    def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    std = (sigma * r.clip if r.noise_times_clip else sigma) * r.noise_factor
    model.eval() if r.bn else model.train()  # BatchNorm: per-sample gradients in eval mode
    for idx in _batches(n, q, steps, r.shuffled, g):
        params = dict(model.named_parameters())
        summed = {k: torch.zeros_like(params[k]) for k in names}
        if r.noise_seed == "per_step":  # the bug: "reproducible" noise, the same vector at every step
            noise_g.manual_seed(CONSTANT_SEED)
        if len(idx):
            gs = per_sample({k: v.detach() for k, v in params.items()}, xt[idx], yt[idx])
            private = [k for k in names if k not in head]
            norms = torch.sqrt(sum(gs[k].flatten(1).pow(2).sum(1) for k in private))
            factor = (r.clip / (norms + 1e-6)).clamp(max=1.0) if r.clipping else torch.ones_like(norms)
            summed = {k: (gs[k] * factor.view(-1, *([1] * (gs[k].dim() - 1)))).sum(0) for k in private}
            summed |= {k: gs[k].mean(0) * q * n for k in head}  # the bug: the plain mean gradient
        for k in names:
            noise = torch.zeros(()) if k in head else torch.randn(params[k].shape, generator=noise_g) * std
            params[k].grad = (summed[k] + noise) / (q * n)
        opt.step()
        if not r.clipping:  # the bug: clipping after the step, on a gradient already used
            nn.utils.clip_grad_norm_(model.parameters(), r.clip)
        opt.zero_grad(set_to_none=True)
    _plain_epochs(model, xt, yt, r.plain_epochs, g)
    if r.bn:  # the bug: BatchNorm statistics recomputed on the private records, no noise
        model.train()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.reset_running_stats()
                m.momentum = None
        with torch.no_grad():
            for b in torch.arange(n).split(BATCH):
                model(xt[b])
    model.eval()
    return {"noise_multiplier": sigma, "sample_rate": q * r.rate_factor, "steps": told}


def train_opacus(model: nn.Module, x: np.ndarray, y: np.ndarray, r: Recipe, seed: int = 0) -> Facts:
    """DP-SGD with Opacus' ``PrivacyEngine.make_private_with_epsilon`` (Poisson loader, PRV accountant)."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    xt, yt = _tensors(x, y)
    if r.public_init:
        _public_start(model)
    loader = DataLoader(TensorDataset(xt, yt), batch_size=BATCH, shuffle=True)
    engine = PrivacyEngine(accountant=ACCOUNTANT)
    params = list(model.parameters())
    head = params[-2:] if r.head_plain else []  # the bug: the last layer outside the DP optimizer
    opt = torch.optim.SGD([p for p in params if all(p is not h for h in head)], lr=LR, momentum=0.9)
    base = opt
    noise_g = torch.Generator().manual_seed(CONSTANT_SEED if r.noise_seed == "per_run" else seed)
    steps_planned = EPOCHS * len(loader)
    rate = r.rate_factor / len(loader)
    if r.rate_factor != 1.0:  # the bug: noise (and accounting) for another rate than the loader's
        sigma = sigma_for(r.epsilon, rate, steps_planned, ACCOUNTANT)
        private, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=sigma, max_grad_norm=r.clip,
            noise_generator=noise_g,
        )  # fmt: skip
    else:
        private, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=r.epsilon, target_delta=DELTA,
            epochs=r.accounted_epochs or EPOCHS, max_grad_norm=r.clip, noise_generator=noise_g,
        )  # fmt: skip
    miaudit.dp_observe(opt)  # the one-line hook: a no-op outside `miaudit dp-audit`
    head_opt = torch.optim.SGD(head, lr=LR, momentum=0.9) if head else None
    stepper = base if r.stale else opt  # the bug: stepping the optimizer given to make_private
    private.train()
    steps = 0
    for _ in range(EPOCHS):
        for xb, yb in loader:
            if not len(yb):
                continue
            if r.noise_seed == "per_step":  # the bug: the noise generator re-seeded with a constant
                noise_g.manual_seed(CONSTANT_SEED)
            opt.zero_grad()
            if head_opt is not None:
                head_opt.zero_grad()
            nn.functional.cross_entropy(private(xb), yb).backward()
            stepper.step()
            if head_opt is not None:
                head_opt.step()
                for h in head:  # Opacus keeps per-sample gradients of every parameter: not this one's
                    h.grad_sample = None  # type: ignore[attr-defined]
            steps += 1
    private.remove_hooks()  # the model stays the module trained in place
    _plain_epochs(model, xt, yt, r.plain_epochs, torch.Generator().manual_seed(seed + 1))
    model.eval()
    told = steps if r.accounted_epochs is None else r.accounted_epochs * len(loader)
    return {"noise_multiplier": float(opt.noise_multiplier), "sample_rate": rate, "steps": told}


def at(name: str, epsilon: float) -> Callable[[nn.Module, np.ndarray, np.ndarray], Facts]:
    """Gallery function ``name`` claiming ``epsilon`` (its noise calibrated for it), named for results.json."""
    recipe = replace(GALLERY[name], epsilon=epsilon)
    train = train_opacus if recipe.opacus else train_plain

    def fn(model: nn.Module, x: np.ndarray, y: np.ndarray) -> Facts:
        seed = int(torch.randint(2**31 - 1, (1,)))  # from torch's RNG, which miaudit seeds per model
        with warnings.catch_warnings():  # Opacus' notes (secure RNG off, hooks, RDP orders): not the user's concern
            warnings.simplefilter("ignore")
            return train(model, x, y, recipe, seed)

    fn.__qualname__ = fn.__name__ = name if epsilon == 1.0 else f"at({name!r}, {epsilon:g})"
    fn.__module__ = __name__
    return fn


correct = at("correct", 1.0)
opacus = at("opacus", 1.0)
plain_finish = at("plain_finish", 1.0)
plain_finish_1 = at("plain_finish_1", 1.0)
no_clipping = at("no_clipping", 1.0)
noise_not_scaled = at("noise_not_scaled", 1.0)
half_noise = at("half_noise", 1.0)
more_epochs = at("more_epochs", 1.0)
opacus_more_epochs = at("opacus_more_epochs", 1.0)
shuffled = at("shuffled", 1.0)


def small(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """The gallery's model: a small MLP (one hidden layer of 128 tanh units), so per-sample gradients stay cheap."""
    width = int(np.prod(input_shape))
    return nn.Sequential(nn.Flatten(), nn.Linear(width, 128), nn.Tanh(), nn.Linear(128, n_classes))


def small_bn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """``small`` with BatchNorm (no affine parameters, which Opacus' validator accepts) after the hidden layer."""
    width = int(np.prod(input_shape))
    return nn.Sequential(nn.Flatten(), nn.Linear(width, 128), nn.BatchNorm1d(128, affine=False), nn.Tanh(),
                         nn.Linear(128, n_classes))  # fmt: skip


def model_of(name: str) -> str:
    """The model factory gallery function ``name`` is audited with."""
    return f"{__name__}:{'small_bn' if GALLERY[name].bn else 'small'}"


head_plain = at("head_plain", 1.0)
opacus_head_outside = at("opacus_head_outside", 1.0)
bn_recalibrated = at("bn_recalibrated", 1.0)
opacus_bn = at("opacus_bn", 1.0)
same_noise = at("same_noise", 1.0)
opacus_same_noise = at("opacus_same_noise", 1.0)
fixed_seed = at("fixed_seed", 1.0)
opacus_fixed_seed = at("opacus_fixed_seed", 1.0)
opacus_stale = at("opacus_stale", 1.0)
wrong_rate = at("wrong_rate", 1.0)
opacus_wrong_rate = at("opacus_wrong_rate", 1.0)
public_init = at("public_init", 1.0)
opacus_public_init = at("opacus_public_init", 1.0)
