"""The built-in approximate unlearning methods: each edits a copy of the original model in place.

``retrain`` is not here: it is a fresh model trained by miaudit's loop on the retained records (a cached model,
``audit.py``). Each method is plain minibatch SGD with momentum, seeded (the same call gives the same weights):

- ``finetune``: descent on the retained records' cross-entropy;
- ``gradient-ascent``: ascent on the forget set's cross-entropy;
- ``neggrad-plus``: per step, alpha x a retained batch's loss - (1 - alpha) x a forget batch's (Kurmanji et al.
  2023's NegGrad+), one pass over the retained records per epoch, the forget batches cycled;
- ``random-label``: descent on the forget set with each label replaced by another class drawn at random;
- ``scrub`` (Kurmanji et al. 2023, SCRUB): the original model is the teacher. In each of the first ``max_epochs``
  epochs a max pass over the forget set (ascent on KL(teacher || student) at ``temperature``), then in every epoch
  a min pass over the retained records (descent on KL(teacher || student) + cross-entropy), each its own SGD.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

import numpy as np
import torch
import torch.nn as nn

from .config import MethodConfig

Records = tuple[np.ndarray, np.ndarray]  # (x, y)
UnlearnFn = Callable[[nn.Module, Records, Records], "nn.Module | None"]


def _batches(n: int, batch_size: int, gen: torch.Generator) -> Iterator[torch.Tensor]:
    yield from torch.randperm(n, generator=gen).split(batch_size)


def _tensors(records: Records, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = records
    return torch.as_tensor(x, dtype=torch.float32, device=device), torch.as_tensor(y, dtype=torch.long, device=device)


def unlearned(
    original: nn.Module,
    method: MethodConfig,
    forget: Records,
    retain: Records,
    n_classes: int,
    seed: int,
    batch_size: int,
    device: str = "cpu",
) -> nn.Module:
    """A copy of ``original`` unlearned by ``method`` (``noop``: the copy itself); the original is untouched."""
    model = copy.deepcopy(original).to(device)
    if method.name == "noop":
        return model.eval()
    if method.name == "retrain":
        raise ValueError("retrain trains a fresh model (unlearning.audit), not an edit of the original")
    epochs, lr = method.resolved_epochs, method.resolved_lr
    assert epochs is not None and lr is not None  # every edit has defaults (config.DEFAULTS)
    bs = method.resolved_batch_size(batch_size)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    xf, yf = _tensors(forget, device)
    xr, yr = _tensors(retain, device)
    if method.name == "random-label":
        shift = torch.randint(1, max(n_classes, 2), yf.shape, generator=gen).to(device)
        yf = (yf + shift) % n_classes  # never the true class
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=method.momentum)
    loss_fn = nn.CrossEntropyLoss()
    if method.name == "scrub":
        return _scrub(original, model, method, (xf, yf), (xr, yr), gen, bs, lr, device)
    model.train()

    def step(loss: torch.Tensor) -> None:
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(epochs):
        if method.name == "finetune":
            for b in _batches(len(yr), bs, gen):
                step(loss_fn(model(xr[b]), yr[b]))
        elif method.name in ("gradient-ascent", "random-label"):
            sign = -1.0 if method.name == "gradient-ascent" else 1.0
            for b in _batches(len(yf), bs, gen):
                step(sign * loss_fn(model(xf[b]), yf[b]))
        elif method.name == "neggrad-plus":
            forget_batches = list(_batches(len(yf), bs, gen))
            for j, b in enumerate(_batches(len(yr), bs, gen)):
                fb = forget_batches[j % len(forget_batches)]
                retained_loss = loss_fn(model(xr[b]), yr[b])
                forget_loss = loss_fn(model(xf[fb]), yf[fb])
                step(method.alpha * retained_loss - (1 - method.alpha) * forget_loss)
        else:  # pragma: no cover - MethodName lists every method
            raise ValueError(f"unlearning.method: unknown method {method.name!r}")
    return model.eval()


def by_user(original: nn.Module, unlearn_fn: UnlearnFn, forget: Records, retain: Records, seed: int) -> nn.Module:
    """The user's ``unlearn_fn(model, forget, retain)`` on a copy of the original (edited in place, or a model
    returned); torch's RNG seeded first."""
    model = copy.deepcopy(original)
    torch.manual_seed(seed)
    out = unlearn_fn(model, forget, retain)
    result = model if out is None else out
    if not isinstance(result, nn.Module):
        raise TypeError(f"unlearn_fn: returned a {type(result).__name__}, expected a torch module or None")
    return result.eval()


def _kl_to_teacher(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(teacher || student) of the softened outputs, averaged over the batch."""
    t = temperature
    return nn.functional.kl_div(
        nn.functional.log_softmax(student_logits / t, dim=1),
        nn.functional.log_softmax(teacher_logits / t, dim=1),
        reduction="batchmean",
        log_target=True,
    )


def _scrub(
    teacher: nn.Module,
    model: nn.Module,
    method: MethodConfig,
    forget: tuple[torch.Tensor, torch.Tensor],
    retain: tuple[torch.Tensor, torch.Tensor],
    gen: torch.Generator,
    bs: int,
    lr: float,
    device: str,
) -> nn.Module:
    """SCRUB's max-min passes (module docstring) on ``model``, a copy of ``teacher``."""
    epochs = method.resolved_epochs
    assert epochs is not None
    teacher = copy.deepcopy(teacher).to(device).eval()
    (xf, _), (xr, yr) = forget, retain
    with torch.no_grad():
        teacher_f, teacher_r = teacher(xf), teacher(xr)
    max_opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=method.momentum)
    min_opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=method.momentum)
    model.train()
    for epoch in range(epochs):
        if epoch < method.max_epochs:
            for b in _batches(len(xf), bs, gen):
                max_opt.zero_grad(set_to_none=True)
                (-_kl_to_teacher(model(xf[b]), teacher_f[b], method.temperature)).backward()
                max_opt.step()
        for b in _batches(len(xr), bs, gen):
            min_opt.zero_grad(set_to_none=True)
            out = model(xr[b])
            loss = _kl_to_teacher(out, teacher_r[b], method.temperature) + nn.functional.cross_entropy(out, yr[b])
            loss.backward()
            min_opt.step()
    return model.eval()
