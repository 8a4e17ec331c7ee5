"""Models trained together: K models of one architecture and recipe stacked into one and trained in one
loop (``train.models_at_once``).

``torch.func.stack_module_state`` stacks the members' parameters and buffers along a new leading
dimension; ``vmap`` over ``torch.func.grad`` of ``functional_call`` runs every member's forward and
backward pass on its own batch in one call of each kernel, giving each member the gradient of its own
loss. The optimizer (``loop.optimizer_with_schedule``)
steps the stacked tensors: SGD with momentum and weight decay and AdamW are elementwise, so each member
takes the step it would take alone. Each member keeps its own initial weights (its seed), its own
records, data order and augmentation (its own ``EpochBatches``, seeded as in ``loop.train``).

Identical to training alone, up to float rounding: the batched kernels (a batched matmul or a grouped
convolution for K separate ones) may sum in another order, so weights agree to float tolerance after a
step and then drift apart as any two runs of SGD on different hardware do; the members are the models
one-at-a-time training gives, in distribution. Not bit-identical where randomness is drawn inside the
forward pass (dropout: one draw for the stack, ``randomness="different"``), nor with fp16 loss scaling
(one scale for the stack: an overflow in one member skips the step for all).

Batch norm: each member's running statistics are its own stacked buffers, updated in place under
``vmap`` with its own batch's statistics, so train and eval behave as alone (checked in the tests).

Memory: a stack holds per member its parameters, gradients and optimizer state plus the activations of
one batch; ``members_that_fit`` measures both on one member and cuts a group into chunks under a budget
(``train.stack_memory_mb``, and on CUDA the free device memory).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.func import functional_call, grad, stack_module_state, vmap

from ..stats.metrics import accuracy
from .augment import require_images
from .loop import EpochBatches, ProgressFn, TrainReport, optimizer_with_schedule, predict_logits
from .options import TrainConfig

MB = 2**20
CUDA_SHARE = 0.8  # of the free device memory, a stack may take at most this share


@dataclass(frozen=True)
class Member:
    """One model of a stack: its fresh module (seeded), its training records and its seed."""

    model: nn.Module
    x: np.ndarray
    y: np.ndarray
    seed: int


def why_not_stackable(model: nn.Module, cfg: TrainConfig) -> str | None:
    """Why models of this recipe cannot be trained together (then they train one at a time), or None."""
    if cfg.dp is not None:
        return "DP-SGD trains one model at a time"
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) and not m.track_running_stats for m in model.modules()):
        return "batch norm without running statistics"
    if any(p.is_sparse for p in model.parameters()):
        return "sparse parameters"
    return None


def why_not_by_default(model: nn.Module, device: str) -> str | None:
    """Why ``models_at_once: auto`` trains this model one at a time although it could stack, or None.

    On a CPU no stack trained faster than the same models one at a time: the small CNN at 0.7x (``miaudit bench
    training-quick``: vmap turns a stack's convolutions into grouped ones), and 16 Location MLP references at
    0.87x on the idle 2-core machine (45 s one at a time, 52 s stacked; ``../shared/checks/together``): a core
    running one small model is already busy. So ``auto`` stacks only on an accelerator; ``models_at_once: N``
    stacks anyway."""
    if torch.device(device).type == "cpu":
        return (
            "on a CPU a stack measured no faster than one model at a time (with several cores auto trains in worker "
            "processes instead; models_at_once: N stacks anyway)"
        )
    return None


def _optimizer_states(cfg: TrainConfig) -> int:
    """Tensors the optimizer keeps per parameter (SGD with momentum: 1; AdamW: 2)."""
    return 2 if cfg.optimizer == "adamw" else int(cfg.momentum > 0)


def bytes_per_member(model: nn.Module, x: np.ndarray, cfg: TrainConfig) -> int:
    """Memory one member of a stack takes: its parameters, gradients and optimizer state, its buffers, and
    the activations of one training batch (each module's output, kept for the backward pass, counted
    twice for the gradients flowing back through them), measured by running one batch forward."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    activations = 0

    def count(_m: nn.Module, _i: object, out: object) -> None:
        nonlocal activations
        if isinstance(out, torch.Tensor):
            activations += out.numel() * out.element_size()

    probe = copy.deepcopy(model).cpu().train()
    hooks = [m.register_forward_hook(count) for m in probe.modules() if not list(m.children())]
    try:
        with torch.no_grad():
            batch = torch.as_tensor(x[: max(2, min(cfg.batch_size, len(x)))], dtype=torch.float32)
            probe(batch)
    finally:
        for h in hooks:
            h.remove()
    batch_bytes = batch.numel() * batch.element_size()
    return weights * (2 + _optimizer_states(cfg)) + buffers + 2 * activations + batch_bytes


def memory_budget(cfg: TrainConfig, device: str) -> int:
    """Bytes a stack may take: ``train.stack_memory_mb``, and on CUDA at most a share of the free memory."""
    budget = cfg.stack_memory_mb * MB
    if torch.device(device).type == "cuda":
        free, _total = torch.cuda.mem_get_info(torch.device(device))
        budget = min(budget, int(CUDA_SHARE * free))
    return budget


def members_that_fit(model: nn.Module, x: np.ndarray, cfg: TrainConfig, device: str, wanted: int) -> int:
    """How many members one stack takes: ``train.models_at_once`` (auto: ``wanted``, all of them), cut to
    what the memory budget holds (at least 1)."""
    cap = wanted if cfg.models_at_once == "auto" else min(int(cfg.models_at_once), wanted)
    fits = memory_budget(cfg, device) // max(bytes_per_member(model, x, cfg), 1)
    return max(1, min(cap, int(fits)))


def train_together(
    members: Sequence[Member], cfg: TrainConfig, device: str = "cpu", progress: ProgressFn | None = None
) -> list[TrainReport]:
    """Train ``members`` (one architecture, the same number of records each) as one stack, each in place:
    its weights end where ``loop.train`` would take it, up to float rounding (module docstring). Each
    member's report carries an equal share of the stack's time."""
    if not members:
        return []
    sizes = {len(m.y) for m in members}
    if len(sizes) != 1:
        raise ValueError(f"models trained together need as many records each; got sizes {sorted(sizes)}")
    if cfg.augment != "none":
        require_images(members[0].x, "train.augment")
    start = time.perf_counter()
    models = [m.model.to(device).train() for m in members]
    stacked_params, buffers = stack_module_state(models)
    # plain tensors (torch.func.grad gives the gradients): no autograd graph kept around the stack
    params = {name: p.detach() for name, p in stacked_params.items()}
    template = copy.deepcopy(models[0]).to("meta")  # the architecture: its weights are the stacked ones

    def member_loss(p: dict, b: dict, xb: torch.Tensor, yb: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        logits = functional_call(template, (p, b), (xb,))
        return scale * nn.functional.cross_entropy(logits, yb, label_smoothing=cfg.label_smoothing)

    # Each member's gradient by torch.func.grad under vmap: autograd's backward through the vmapped loss gave
    # the same numbers twice as slowly on CPU (its gradients' layout made every accumulation a copy).
    # randomness "different": dropout draws a fresh mask per member, as alone (not the same draws).
    gradients = vmap(grad(member_loss), in_dims=(0, 0, 0, 0, None), randomness="different")
    opt, sched = optimizer_with_schedule(params.values(), cfg, own_gradients=True)
    device_type = torch.device(device).type
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(cfg.precision)
    scaler = torch.amp.GradScaler(device_type, enabled=cfg.precision == "fp16" and device_type == "cuda")
    streams = [
        EpochBatches(
            torch.as_tensor(m.x, dtype=torch.float32, device=device),
            torch.as_tensor(m.y, dtype=torch.long, device=device),
            cfg,
            m.seed,
        )
        for m in members
    ]
    steps = len(streams[0])  # equal sizes, equal batch sizes: every member takes the same steps
    epochs_done = 0
    for j in range(steps):
        items = [s[j] for s in streams]
        for _ in range(epochs_done, items[0][0]):
            sched.step()
            epochs_done += 1
            if progress is not None:
                progress(epochs_done, cfg.epochs)
        xb = torch.stack([it[1] for it in items])
        yb = torch.stack([it[2] for it in items])
        scale = scaler.scale(torch.ones((), device=device))  # fp16 on CUDA: the loss scale; else 1
        with torch.autocast(device_type, dtype=half or torch.float32, enabled=half is not None):
            grads = gradients(params, buffers, xb, yb, scale)
        for name, p in params.items():
            p.grad = grads[name]
        scaler.step(opt)  # unscales the gradients first, and skips the step on an overflow (fp16)
        scaler.update()
    for _ in range(epochs_done, cfg.epochs):
        sched.step()
        epochs_done += 1
        if progress is not None:
            progress(epochs_done, cfg.epochs)
    unstack(params, buffers, models)
    seconds = (time.perf_counter() - start) / len(members)
    return [
        TrainReport(seconds=seconds, train_accuracy=accuracy(predict_logits(model, m.x, device=device), m.y))
        for model, m in zip(models, members, strict=True)
    ]


def unstack(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], models: Sequence[nn.Module]) -> None:
    """Write member k's slice of the stacked tensors back into ``models[k]``."""
    with torch.no_grad():
        for k, model in enumerate(models):
            for name, param in model.named_parameters():
                param.copy_(params[name][k])
            for name, buffer in model.named_buffers():
                buffer.copy_(buffers[name][k])
