"""Two more ways to spend a budget, tried for issue 56 and not carried into the product (both lose to `steps` on the
development seeds; budget_protocol.md, amendment of 2026-12-07): references built here, outside miaudit's training
loop, then attacked by miaudit exactly as a budgeted run's references are.

- `heads`: the target's own body frozen up to its last hidden layer; each reference retrains that layer and the
  head from scratch on its half of the population (the target's recipe), so a reference costs its trainable
  parameters only, and the budget buys many (at most 32). The cost counts one pass of the population through the
  frozen layers as well. MLP only (the architecture must end in Linear + activation blocks).
- `distill`: the `steps` design (two references at B = 1: half the epochs in batches of half the size), each
  trained on its half of the population towards the target's own answers there (softmax of the target's logits,
  mixed half and half with the one-hot label), so that the references imitate the target on records it never saw.

Neither reads the target's membership: the target's outputs on population records (its non-members) and its
frozen body are what a user holding the model has.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from miaudit.attack_plan import build, config_roles
from miaudit.attacks.recommended import CANDIDATES
from miaudit.config.run import from_dict
from miaudit.data.split import reference_subsets
from miaudit.experiment.base import Experiment, TrainedModel
from miaudit.membership.run import run_experiment
from miaudit.models import build_model
from miaudit.training.loop import predict_logits, train

TRIED = ("heads", "distill")
MAX_HEADS = 32
MIX = 0.5  # distill: weight of the one-hot label in each reference's soft target


def _parameters(m: nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def _split_mlp(target: nn.Module) -> tuple[nn.Sequential, list[tuple[int, int]]]:
    """The target MLP's frozen part (everything before its last hidden layer) and the (in, out) widths of the
    layers retrained (the last hidden layer, then the head)."""
    mods = list(target.body.children())  # type: ignore[union-attr]
    last = max(i for i, m in enumerate(mods) if isinstance(m, nn.Linear))
    frozen = nn.Sequential(*mods[:last]).eval()
    widths = [(mods[last].in_features, mods[last].out_features), (target.head.in_features, target.head.out_features)]
    return frozen, widths  # type: ignore[return-value]


def _tail(widths: list[tuple[int, int]]) -> nn.Sequential:
    (a, b), (c, d) = widths
    return nn.Sequential(nn.Linear(a, b), nn.Tanh(), nn.Linear(c, d))


def _model(
    role: str, module: nn.Module, logits: np.ndarray, idx: np.ndarray, seconds: float, arch: str
) -> TrainedModel:
    return TrainedModel(role=role, module=module, logits=logits.astype(np.float64), train_idx=idx, seconds=seconds,
                        train_accuracy=float("nan"), cached=False, architecture=arch)  # fmt: skip


def heads(exp: Experiment, budget: float) -> tuple[list[TrainedModel], np.ndarray, dict[str, Any]]:
    ds, cfg, target = exp.dataset, exp.cfg.train, exp.target.module
    assert target is not None
    frozen, widths = _split_mlp(target)
    with torch.no_grad():
        feats = frozen(torch.as_tensor(ds.x, dtype=torch.float32)).numpy()
    p_target, p_frozen, p_tail = _parameters(target), _parameters(frozen), _parameters(_tail(widths))
    target_cost = p_target * len(exp.split.members) * cfg.epochs
    half = len(exp.pool_idx) // 2
    feature_pass = p_frozen * len(exp.pool_idx) / target_cost
    count = min(MAX_HEADS, math.floor((budget - feature_pass) * target_cost / (p_tail * half * cfg.epochs)))
    masks = reference_subsets(len(exp.pool_idx), count, exp.cfg.seed + 0x4EAD)
    refs = []
    for k in range(count):
        idx = exp.pool_idx[masks[k]]
        torch.manual_seed(exp.cfg.seed * 1000 + k)
        tail = _tail(widths)
        start = time.perf_counter()
        train(tail, feats[idx], ds.y[idx], cfg, seed=exp.cfg.seed * 1000 + k)
        seconds = time.perf_counter() - start
        refs.append(_model(f"head-{k}", nn.Sequential(frozen, tail), predict_logits(tail, feats), idx, seconds, "head"))
    cost = feature_pass + count * p_tail * half * cfg.epochs / target_cost
    return refs, masks, {"count": count, "epochs": cfg.epochs, "records": half, "batch_size": cfg.batch_size,
                         "cost_ratio": cost, "trainable_parameters": p_tail}  # fmt: skip


def _soft_train(
    model: nn.Module, x: np.ndarray, soft: np.ndarray, epochs: int, batch: int, exp: Experiment, seed: int
) -> None:
    """The target's recipe (SGD, momentum, weight decay, cosine schedule) towards soft targets."""
    cfg = exp.cfg.train
    xt, pt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(soft, dtype=torch.float32)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(xt), generator=gen).split(batch):
            if len(idx) < 2:
                continue
            opt.zero_grad()
            nn.functional.cross_entropy(model(xt[idx]), pt[idx]).backward()
            opt.step()
        sched.step()
    model.eval()


def distill(exp: Experiment, budget: float) -> tuple[list[TrainedModel], np.ndarray, dict[str, Any]]:
    ds, cfg = exp.dataset, exp.cfg.train
    count = max(1, math.floor(budget / 0.5 + 1e-9))
    share = min(1.0, budget / count)
    epochs, batch = max(1, math.floor(share * cfg.epochs)), max(2, round(share * cfg.batch_size))
    probs = torch.softmax(torch.as_tensor(np.asarray(exp.target.logits, dtype=np.float64)), 1).numpy()
    soft = (1 - MIX) * probs + MIX * np.eye(ds.n_classes)[ds.y]
    masks = reference_subsets(len(exp.pool_idx), count, exp.cfg.seed + 0xD157)
    refs = []
    for k in range(count):
        idx = exp.pool_idx[masks[k]]
        torch.manual_seed(exp.cfg.seed * 1000 + k)
        model = build_model(exp.cfg.reference_architecture, tuple(ds.input_shape), ds.n_classes)
        start = time.perf_counter()
        _soft_train(model, ds.x[idx], soft[idx], epochs, batch, exp, exp.cfg.seed * 1000 + k)
        seconds = time.perf_counter() - start
        refs.append(_model(f"distilled-{k}", model, predict_logits(model, ds.x), idx, seconds, "mlp"))
    cost = count * len(idx) * epochs / (len(exp.split.members) * cfg.epochs)
    return refs, masks, {"count": count, "epochs": epochs, "records": len(idx), "batch_size": batch,
                         "cost_ratio": cost}  # fmt: skip


def attacked(base: dict[str, Any], exp: Experiment, refs: list[TrainedModel], masks: np.ndarray, auto: bool) -> Any:
    """miaudit's attacks on the target with these references: `attacks: auto` (auto=True) or every candidate."""
    k = len(refs)
    attacks: Any = "auto" if auto else [{"name": n, "references": k} for n in CANDIDATES]
    cfg = from_dict({**base, "references": k, "attacks": attacks})
    tried = Experiment(cfg=cfg, plan=build(cfg, config_roles(cfg)), records=exp.records, pool_idx=exp.pool_idx,
                       ref_masks=masks, target=exp.target, references=refs)  # fmt: skip
    return run_experiment(tried)


BUILDERS = {"heads": heads, "distill": distill}
