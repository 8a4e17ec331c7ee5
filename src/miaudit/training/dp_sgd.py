"""DP-SGD with Opacus (optional extra ``dp``): the one training loop of ``miaudit.training.loop``, made private.

Per-sample gradients clipped to ``max_grad_norm`` (ghost clipping: exact norms, no per-sample gradients kept),
Gaussian noise of ``noise_multiplier`` x ``max_grad_norm``, Poisson sampling of each batch (rate
batch_size / n), SGD with momentum and weight decay and the same schedule. The noise multiplier is calibrated
to the declared (epsilon, delta) by Opacus' RDP accountant; the epsilon spent over the noisy steps taken is then
accounted by every accountant at hand (``accounted``: Opacus' RDP and PRV, and dp-accounting's PLD where it is
installed) and the audits compare with the smallest (results.json ``target.dp.accounted``; ``accounted_epsilon``
stays the RDP figure). Models go through Opacus' validator first (``compatible``: BatchNorm becomes GroupNorm),
in the recipe's ``build``, so a cached DP model loads into the same architecture.

A planted fault (``train.dp.planted_fault``, ``faults``: a noise scale, clipping skipped or after the mean, a
sampling rate misreported to the accountants, noise once per epoch, a non-private pass) is a self-test of the
audits, which must flag it. White-box gradient canaries (``whitebox``) are observed in,
and added to, every noisy update.
"""

from __future__ import annotations

import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn as nn

from ..errors import ConfigError
from .dp_faults import Faults, Planted
from .loop import ProgressFn, TrainReport, accuracy, optimizer_with_schedule, predict_logits
from .options import DPConfig, TrainConfig

ACCOUNTANT = "rdp"
# Ghost clipping (Opacus' fast gradient clipping): the exact per-sample gradient norms without materialising
# per-sample gradients, then the clipped mean; the same DP-SGD step as "hooks", 6-7x faster for our MLPs here.
GRAD_SAMPLE_MODE = "ghost"


@dataclass(frozen=True)
class NoisyStep:
    """A DP-SGD step as canaries joined to it see it: ``batch`` is the expected batch size Opacus divides the
    noisy sum by; canaries join a step at ``sample_rate`` (the rate used, as a record would) and are scored at
    ``claimed_rate`` (the rate the accountants are told of; default the same)."""

    sample_rate: float
    sigma: float
    clip: float
    batch: float
    seed: int
    claimed_rate: float | None = None

    @property
    def scored_rate(self) -> float:
        return self.sample_rate if self.claimed_rate is None else self.claimed_rate


class StepCanaries(Protocol):
    """White-box canaries joined to the noisy steps (the DP audit's ``dp/whitebox.py`` ``GradientCanaries``): what
    ``train_dp`` calls, so training imports nothing of the audits."""

    def hook(self, params: list[torch.Tensor], step: NoisyStep) -> Callable[[Any], None]: ...


def _opacus() -> types.ModuleType:
    try:
        import opacus
    except ImportError:
        raise ConfigError("train.dp: DP-SGD needs opacus; install the extra: pip install 'miaudit[dp]'") from None
    return opacus


def compatible(model: nn.Module) -> nn.Module:
    """The model with Opacus' validator fixes applied (e.g. GroupNorm for BatchNorm) and in-place activations made
    out-of-place; unchanged if none apply."""
    from opacus.validators import ModuleValidator

    _opacus()
    for module in model.modules():  # an in-place activation breaks Opacus' backward hooks on the view it writes
        if getattr(module, "inplace", False):
            setattr(module, "inplace", False)  # noqa: B010  (nn.Module types attributes as Tensor | Module)
    if ModuleValidator.is_valid(model):
        return model
    return ModuleValidator.fix(model)


def noise_multiplier(dp: DPConfig, sample_rate: float, epochs: int, steps: int | None = None) -> float:
    """The given noise multiplier, or the one Opacus' accountant calibrates to (epsilon, delta) over ``epochs``
    at this rate (or over ``steps``, when given)."""
    if dp.noise_multiplier is not None:
        return dp.noise_multiplier
    from opacus.accountants.utils import get_noise_multiplier

    return float(
        get_noise_multiplier(
            target_epsilon=dp.epsilon,
            target_delta=dp.delta,
            sample_rate=sample_rate,
            **({"epochs": epochs} if steps is None else {"steps": steps}),
            accountant=ACCOUNTANT,
            epsilon_tolerance=0.005,
        )
    )


def calibrated(dp: DPConfig, used_rate: float, epochs: int) -> tuple[float, float]:
    """The noise multiplier of a DP-SGD run sampling at ``used_rate`` for ``epochs`` epochs, and the sampling rate
    the accountants are told of: the used one, unless a planted sampling fault tells them a smaller one (the noise
    then calibrated at that rate over the steps taken). Both DP-SGD trainers take their noise from here."""
    told = Faults.of(dp).accounted_rate(used_rate)
    steps = round(epochs / used_rate) if told != used_rate else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return noise_multiplier(dp, told, epochs, steps), told


def accounted(sigma: float, sample_rate: float, steps: int, delta: float) -> dict[str, float]:
    """Epsilon of ``steps`` Poisson-subsampled Gaussian steps by each accountant at hand (upper bounds)."""
    from opacus.accountants import PRVAccountant, RDPAccountant

    out = {}
    with warnings.catch_warnings():  # Opacus' notes (optimal order at the largest alpha; PRV's overflows in exp)
        warnings.simplefilter("ignore")  # would be lines of every dp-audit's output: the figures stand as given
        for name, accountant in (("rdp", RDPAccountant()), ("prv", PRVAccountant())):
            accountant.history = [(sigma, sample_rate, steps)]
            out[name] = float(accountant.get_epsilon(delta=delta))
    try:
        import dp_accounting
    except ImportError:  # PLD is optional (the audit-ref extra installs dp-accounting)
        return out
    # a 1e-3 grid: 10x faster than the default 1e-4 and within 1e-4 of it; PLD rounds pessimistically either way
    pld = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    event = dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(sigma))
    out["pld"] = float(pld.compose(event, steps).get_epsilon(delta))
    return out


def with_accountants(privacy: dict | None) -> dict | None:
    """A DP-SGD record with ``accounted`` (a model cached before the accountants were recorded gets them now)."""
    if privacy is None or "accounted" in privacy:
        return privacy
    steps = privacy.get("noisy_steps", privacy["steps"])
    return {
        **privacy,
        "accounted": accounted(privacy["noise_multiplier"], privacy["sample_rate"], steps, privacy["delta"]),
    }


def make_private(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    loader: torch.utils.data.DataLoader,
    sigma: float,
    clip: float,
    seed: int,
    device: str,
) -> tuple[Any, Any, Any, Any]:
    """Opacus' module, optimizer, loss and Poisson loader of one DP-SGD run (ghost clipping; seeded noise)."""
    engine = _opacus().PrivacyEngine(accountant=ACCOUNTANT)
    return engine.make_private(
        module=model,
        optimizer=opt,
        criterion=nn.CrossEntropyLoss(),
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=clip,
        poisson_sampling=True,
        grad_sample_mode=GRAD_SAMPLE_MODE,
        noise_generator=torch.Generator(device=device).manual_seed(seed + 1),
    )


def train_dp(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    cfg: TrainConfig,
    dp: DPConfig,
    seed: int,
    device: str = "cpu",
    progress: ProgressFn | None = None,
    whitebox: StepCanaries | None = None,
) -> TrainReport:
    """DP-SGD on (x, y), in place; seeded (batch sampling and noise) so the same call gives the same weights.
    With ``whitebox``, its gradient canaries join the steps and are scored (``GradientCanaries.scores``)."""
    opacus = _opacus()
    start = time.perf_counter()
    torch.manual_seed(seed)
    data = torch.utils.data.TensorDataset(
        torch.as_tensor(x, dtype=torch.float32, device=device), torch.as_tensor(y, dtype=torch.long, device=device)
    )
    loader = torch.utils.data.DataLoader(
        data, batch_size=cfg.batch_size, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    used_rate = 1 / len(loader)  # Opacus' Poisson sampling rate for this loader
    planted = Planted(dp)
    sigma, sample_rate = calibrated(dp, used_rate, cfg.epochs)  # the rate the accountants are told of
    model.to(device).train()
    planted.public_pass(model, loader, cfg)
    opt, sched = optimizer_with_schedule(model, cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus' notes on secure RNG, alpha ranges and backward hooks
        private, dp_opt, loss_fn, dp_loader = make_private(model, opt, loader, sigma, dp.max_grad_norm, seed, device)
        planted.into(private, dp_opt, sigma)
        canary_step = (  # canaries are sampled at the rate used and scored at the rate claimed
            whitebox.hook(
                dp_opt.params,
                NoisyStep(
                    used_rate, sigma, dp.max_grad_norm, dp_opt.expected_batch_size, seed, claimed_rate=sample_rate
                ),
            )
            if whitebox is not None
            else None
        )
        noisy = [0]

        def step_hook(optimizer: object) -> None:  # replaces Opacus' accountant hook: we account after training
            noisy[0] += 1
            if canary_step is not None:
                canary_step(optimizer)

        dp_opt.attach_step_hook(step_hook)
        steps = 0
        for epoch in range(cfg.epochs):
            first = True
            for xb, yb in dp_loader:
                steps += 1
                if not len(yb):  # an empty Poisson batch (chance (1 - q)^n): skipped, which depends on no record
                    continue
                planted.before_step(dp_opt, first, len(yb))
                first = False
                dp_opt.zero_grad(set_to_none=True)
                loss_fn(private(xb), yb).backward()
                dp_opt.step()
            sched.step()
            if progress is not None:
                progress(epoch + 1, cfg.epochs)
    private.remove_hooks()
    epsilons = accounted(sigma, sample_rate, noisy[0], dp.delta)
    privacy = {
        "declared_epsilon": dp.epsilon,
        "accounted_epsilon": epsilons["rdp"],
        "accounted": epsilons,
        "delta": dp.delta,
        "noise_multiplier": sigma,
        "max_grad_norm": dp.max_grad_norm,
        "sample_rate": sample_rate,
        "steps": steps,
        "noisy_steps": noisy[0],
        "accountant": f"opacus {opacus.__version__} {ACCOUNTANT} (noise calibration; accounted: {sorted(epsilons)})",
        **planted.record(),
        "poisson_sampling": True,
        "clipping": f"flat, {GRAD_SAMPLE_MODE}",
    }
    acc = accuracy(predict_logits(model, x, device=device), y)
    return TrainReport(seconds=time.perf_counter() - start, train_accuracy=acc, privacy=privacy)
