"""One training loop: seeded, deterministic on CPU, with a progress bar."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from .config import TrainConfig

ProgressFn = Callable[[int, int], None]  # (epochs done, total)


@dataclass(frozen=True)
class TrainReport:
    seconds: float
    train_accuracy: float
    privacy: dict | None = None  # DP-SGD: the accountant's record (miaudit.dp.training)


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
    """
    start = time.perf_counter()
    xt = torch.as_tensor(x, dtype=torch.float32, device=device)
    yt = torch.as_tensor(y, dtype=torch.long, device=device)
    model.to(device).train()
    opt, sched = sgd_with_schedule(model, cfg)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)
    n = len(yt)
    for epoch in range(cfg.epochs):
        for idx in torch.randperm(n, generator=gen).split(cfg.batch_size):
            if len(idx) < 2 and n > 1:  # BatchNorm cannot train on a single record
                continue
            opt.zero_grad(set_to_none=True)
            batch_loss = loss_fn(model(xt[idx]), yt[idx])
            batch_loss.backward()
            opt.step()
        sched.step()
        if progress is not None:
            progress(epoch + 1, cfg.epochs)
    seconds = time.perf_counter() - start
    acc = accuracy(predict_logits(model, x, device=device), y)
    return TrainReport(seconds=seconds, train_accuracy=acc)


def sgd_with_schedule(
    model: nn.Module, cfg: TrainConfig
) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.LRScheduler]:
    """SGD with momentum and weight decay, and its per-epoch learning-rate schedule (cosine or constant)."""
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    sched = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.epochs)
        if cfg.schedule == "cosine"
        else torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    )
    return opt, sched


@torch.no_grad()
def predict_logits(model: nn.Module, x: np.ndarray, batch_size: int = 1024, device: str = "cpu") -> np.ndarray:
    """Logits in eval mode (BatchNorm running statistics, no dropout), float64."""
    model.eval()
    out = [
        model(torch.as_tensor(x[i : i + batch_size], dtype=torch.float32, device=device)).double().cpu()
        for i in range(0, len(x), batch_size)
    ]
    return torch.cat(out).numpy() if out else np.zeros((0, 0))


def accuracy(logits: np.ndarray, y: np.ndarray) -> float:
    return float((logits.argmax(axis=1) == y).mean()) if len(y) else float("nan")
