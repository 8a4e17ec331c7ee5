"""One training loop: seeded, deterministic on CPU, with a progress bar."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, overload

import numpy as np
import torch
import torch.nn as nn

from ..stats.metrics import accuracy
from .augment import query_views, random_batch, require_images, view
from .options import TrainConfig

ProgressFn = Callable[[int, int], None]  # (epochs done, total)


@dataclass(frozen=True)
class TrainReport:
    seconds: float
    train_accuracy: float
    privacy: dict | None = None  # DP-SGD: the accountant's record (miaudit.training.dp_sgd)


def seeded_model(factory: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Build a model with its initial weights fixed by ``seed``."""
    torch.manual_seed(seed)
    return factory()


def train(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    cfg: TrainConfig,
    seed: int,
    device: str = "cpu",
    progress: ProgressFn | None = None,
) -> TrainReport:
    """Minibatch SGD with momentum and weight decay on (x, y), in place.

    Shuffling uses a generator seeded by ``seed`` so that the same call gives the
    same weights; the last partial batch is kept (small data sets need it).
    ``cfg.augment`` (image data) draws each batch's flips and crops from a generator
    seeded by (seed, epoch, batch), so ``cfg.loader_workers`` processes preparing the
    batches give the same weights as the training process alone.
    """
    if cfg.augment != "none":
        require_images(x, "train.augment")
    start = time.perf_counter()
    # worker processes prepare batches on the CPU; the training process alone may hold them on the device
    data_device = device if cfg.loader_workers == 0 else "cpu"
    xt = torch.as_tensor(x, dtype=torch.float32, device=data_device)
    yt = torch.as_tensor(y, dtype=torch.long, device=data_device)
    model.to(device).train()
    opt, sched = optimizer_with_schedule(model, cfg, own_gradients=True)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    device_type = torch.device(device).type
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)
    scaler = torch.amp.GradScaler(device_type, enabled=cfg.precision == "fp16" and device_type == "cuda")
    batches = EpochBatches(xt, yt, cfg, seed)
    loader = batches if cfg.loader_workers == 0 else _worker_loader(batches, cfg.loader_workers, device_type)
    epochs_done = 0

    def finish_epochs(until: int) -> None:
        nonlocal epochs_done
        for _ in range(epochs_done, until):
            sched.step()
            epochs_done += 1
            if progress is not None:
                progress(epochs_done, cfg.epochs)

    for epoch, xb, yb in loader:
        finish_epochs(epoch)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type, dtype=half or torch.float32, enabled=half is not None):
            batch_loss = loss_fn(model(xb.to(device, non_blocking=True)), yb.to(device, non_blocking=True))
        scaler.scale(batch_loss).backward()  # a no-op scale unless fp16 on CUDA
        scaler.step(opt)
        scaler.update()
    finish_epochs(cfg.epochs)
    seconds = time.perf_counter() - start
    acc = accuracy(predict_logits(model, x, device=device), y)
    return TrainReport(seconds=seconds, train_accuracy=acc)


class EpochBatches(torch.utils.data.Dataset):
    """Every training batch of every epoch, in order: item j is (epoch, inputs, labels), augmented by
    ``train.augment`` with a generator seeded by (seed, j), whichever process prepares it."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig, seed: int):
        self.x, self.y, self.how, self.seed = x, y, cfg.augment, seed
        gen = torch.Generator().manual_seed(seed)
        n = len(y)
        self.items: list[tuple[int, torch.Tensor]] = [
            (epoch, idx)
            for epoch in range(cfg.epochs)
            for idx in torch.randperm(n, generator=gen).split(cfg.batch_size)
            if len(idx) >= 2 or n == 1  # BatchNorm cannot train on a single record
        ]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, j: int) -> tuple[int, torch.Tensor, torch.Tensor]:
        epoch, idx = self.items[j]
        if self.how == "none":  # no draws to seed (a generator per batch is a visible share of a small MLP's step)
            return epoch, self.x[idx], self.y[idx]
        gen = torch.Generator().manual_seed(int(np.random.SeedSequence([self.seed, 0xA06, j]).generate_state(1)[0]))
        return epoch, random_batch(self.x[idx], self.how, gen), self.y[idx]

    def __iter__(self) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
        return (self[j] for j in range(len(self)))


def _worker_loader(batches: EpochBatches, workers: int, device_type: str) -> Iterable[Any]:
    """``batches`` prepared by ``workers`` DataLoader processes (in order), pinned for a GPU."""
    return torch.utils.data.DataLoader(
        batches, batch_size=None, num_workers=workers, pin_memory=device_type == "cuda", persistent_workers=False
    )


def optimizer_with_schedule(
    model: nn.Module | Iterable[torch.Tensor], cfg: TrainConfig, own_gradients: bool = False
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """The optimizer (SGD with momentum and weight decay, or AdamW with that weight decay: transformers
    train poorly with plain SGD) of a model's parameters (or of tensors: a stack's, ``stacked.py``) and its
    per-epoch learning-rate schedule (cosine, constant or triangle). ``own_gradients``: the caller's gradients
    are fresh each step and read by nothing else, so SGD may add its weight decay to them in place
    (``DecayInPlaceSGD``: the same weights, bit for bit, at less CPU time)."""
    params = list(model.parameters() if isinstance(model, nn.Module) else model)
    opt: torch.optim.Optimizer
    if cfg.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    elif own_gradients:
        opt = DecayInPlaceSGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    sched: torch.optim.lr_scheduler.LRScheduler
    if cfg.schedule == "cosine":
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)
    elif cfg.schedule == "triangle":
        sched = torch.optim.lr_scheduler.LambdaLR(opt, partial(triangle, epochs=cfg.epochs))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    return opt, sched


def schedule_rates(cfg: TrainConfig) -> list[float]:
    """The learning rate of each epoch under ``cfg``'s schedule, as ``optimizer_with_schedule`` sets it."""
    opt, sched = optimizer_with_schedule([torch.zeros(1)], cfg)
    rates = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on a scheduler stepped before its optimizer
        for _ in range(cfg.epochs):
            rates.append(float(opt.param_groups[0]["lr"]))
            sched.step()
    return rates


class DecayInPlaceSGD(torch.optim.SGD):
    """torch's SGD with its weight decay added to the gradients in place, then the step without it.

    torch's SGD adds the decay out of place (``grad.add(param, alpha=wd)``): a fresh tensor per parameter and
    step, whose allocation and first touch took a large share of a Location MLP's training (cProfile, 16 models
    stacked, 3 epochs, one thread: ``add`` 3.3 s of 24.6 s). ``grad.add_`` is the
    same arithmetic on the same operands, so the weights are torch's bit for bit (tested); the gradients
    themselves are left decayed, which only a caller that owns them (``loop.train``, ``stacked.py``) allows.
    (torch's ``foreach=True`` on a CPU measured no faster here, and ``fused=True``, twice as fast, rounds
    differently: neither is used.)"""

    @overload
    def step(self, closure: None = None) -> None: ...

    @overload
    def step(self, closure: Callable[[], float]) -> float: ...

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        if closure is not None:
            raise ValueError("DecayInPlaceSGD takes no closure")
        decays = [group["weight_decay"] for group in self.param_groups]
        for group, decay in zip(self.param_groups, decays, strict=True):
            with_grad = [p for p in group["params"] if p.grad is not None]
            if decay != 0 and with_grad:
                torch._foreach_add_([p.grad for p in with_grad], with_grad, alpha=decay)
            group["weight_decay"] = 0
        try:
            return super().step()
        finally:
            for group, decay in zip(self.param_groups, decays, strict=True):
                group["weight_decay"] = decay


def triangle(epoch: int, epochs: int, start: float = 0.2, peak: float = 0.23, end: float = 0.07) -> float:
    """airbench's learning-rate factor (Jordan 2024), per epoch: linear from ``start`` up to 1 at ``peak`` of the
    training, then linear down to ``end`` at its end (airbench steps it per batch; here each epoch takes the
    factor at its start)."""
    t = epoch / epochs
    if t <= peak:
        return start + (1 - start) * t / peak
    return 1 + (end - 1) * (t - peak) / (1 - peak)


@torch.no_grad()
def predict_logits(
    model: nn.Module,
    x: np.ndarray,
    batch_size: int = 1024,
    device: str = "cpu",
    transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> np.ndarray:
    """Logits in eval mode (BatchNorm running statistics, no dropout), float64; ``transform`` maps each
    batch of inputs first (a view of ``queries.augment``)."""
    model.eval()
    fix = transform or (lambda t: t)
    out = [
        model(fix(torch.as_tensor(x[i : i + batch_size], dtype=torch.float32, device=device))).double().cpu()
        for i in range(0, len(x), batch_size)
    ]
    return torch.cat(out).numpy() if out else np.zeros((0, 0))


def predict_views(model: nn.Module, x: np.ndarray, logits: np.ndarray, how: str, device: str = "cpu") -> np.ndarray:
    """(A, n, C) logits on the A views of ``queries.augment`` (``augment.query_views``); view 0, the records
    themselves, is ``logits``, the model's logits already at hand."""
    views = query_views(how)
    if len(views) > 1:
        require_images(x, "queries.augment")
    rest = [predict_logits(model, x, device=device, transform=partial(view, v=v)) for v in views[1:]]
    return np.stack([np.asarray(logits, dtype=np.float64), *rest])
