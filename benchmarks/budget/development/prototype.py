"""The development runs of the protocol's 2026-12-07 amendment (location seeds 0-2, B = 1): the first prototype of
the `heads` and `distill` designs and BMIA's variants on the `steps` references. Not product code; kept as run.

    PYTHONPATH=src MIAUDIT_CACHE_DIR=... python benchmarks/budget/development/prototype.py 0 steps head:3:8 head:4:32
    PYTHONPATH=src python benchmarks/budget/development/prototype.py 1,2 head:3:8 head:4:32
    PYTHONPATH=src python benchmarks/budget/development/prototype.py 0 distill distill:2:0.5:0.5:1:0.5:half \
        distill:2:0.5:0.5:3:0:half            # and 1,2 with ...:1:0.5:half and ...:1:0:half
    CANDS=mr-bmia,lr-bmia,eb-bmia PYTHONPATH=src python benchmarks/budget/development/prototype.py 0 steps

(head:CUT:K freezes the target's first CUT hidden layers and retrains the rest on K references; distill:K:epoch
share:batch share:temperature:label mix:records.) Output: one line per design and seed, each candidate's TPR@1%.
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
from sklearn.metrics import roc_auc_score, roc_curve

from miaudit import pipeline
from miaudit.attack_plan import build, config_roles
from miaudit.config.run import from_dict
from miaudit.data.split import reference_subsets
from miaudit.experiment.base import Experiment, TrainedModel
from miaudit.membership.run import run_experiment
from miaudit.training.loop import predict_logits, train

CANDS = os.environ.get("CANDS", "bavaria-n,lira,rmia,pair-lr,pair-logit").split(",")
torch.set_num_threads(1)


def tpr_at(scores, y, fpr=0.01):
    f, t, _ = roc_curve(y, scores)
    return float(np.max(t[f <= fpr]))


def base_exp(seed):
    cfg = from_dict({"dataset": "location", "model": "mlp", "seed": seed, "references": {"budget": 1}})
    return pipeline.prepare(cfg)


def evaluate(exp0, refs, masks, K, tag, auto=True):
    out = {}
    for kind in (["auto"] if auto else []) + ["all"]:
        attacks = "auto" if kind == "auto" else [{"name": n, "references": K} for n in CANDS]
        cfg = from_dict(
            {"dataset": "location", "model": "mlp", "seed": exp0.cfg.seed, "references": K, "attacks": attacks}
        )
        plan = build(cfg, config_roles(cfg))
        exp = Experiment(
            cfg=cfg,
            plan=plan,
            records=exp0.records,
            pool_idx=exp0.pool_idx,
            ref_masks=masks,
            target=exp0.target,
            references=refs,
        )
        res = run_experiment(exp)
        y = exp.is_member
        for r in res.attacks:
            s = np.nan_to_num(np.asarray(r.result.scores), nan=-1e9)
            out.setdefault(r.attack.name, {})["tpr1"] = round(100 * tpr_at(s, y), 2)
            out[r.attack.name]["auc"] = round(roc_auc_score(y, s), 3)
        if kind == "auto" and res.attack_choice is not None:
            out["_auto_first"] = (
                res.attack_choice.chosen[0] if hasattr(res.attack_choice, "chosen") else str(res.attack_choice)
            )
    print(tag, json.dumps(out), flush=True)
    return out


def params(m):
    return sum(p.numel() for p in m.parameters())


def split_target(target, cut):
    """(frozen prefix, fresh suffix factory): the MLP body's first `cut` Linear+Tanh blocks frozen."""
    body = target.body
    mods = list(body.children())  # Flatten, (Linear, Tanh) x 4
    frozen = nn.Sequential(*mods[: 1 + 2 * cut]).eval()
    tail_specs = [(m.in_features, m.out_features) for m in mods[1 + 2 * cut :: 2]] + [
        (target.head.in_features, target.head.out_features)
    ]

    def fresh():
        layers = []
        for i, (a, b) in enumerate(tail_specs):
            layers.append(nn.Linear(a, b))
            if i < len(tail_specs) - 1:
                layers.append(nn.Tanh())
        return nn.Sequential(*layers)

    return frozen, fresh


def head_design(exp0, cut, K, tcfg, seed):
    ds = exp0.dataset
    target = exp0.target.module
    frozen, fresh = split_target(target, cut)
    with torch.no_grad():
        feats = frozen(torch.as_tensor(ds.x, dtype=torch.float32)).numpy()
    masks = reference_subsets(len(exp0.pool_idx), K, seed + 1000)
    refs = []
    t0 = time.time()
    for k in range(K):
        idx = exp0.pool_idx[masks[k]]
        torch.manual_seed(seed * 100 + k)
        m = fresh()
        rep = train(m, feats[idx], ds.y[idx], tcfg, seed=seed * 100 + k)
        logits = predict_logits(m, feats)
        refs.append(
            TrainedModel(
                role=f"ref{k}",
                module=nn.Sequential(frozen, m),
                logits=logits.astype(np.float64),
                train_idx=idx,
                seconds=rep.seconds,
                train_accuracy=rep.train_accuracy,
                cached=False,
                architecture="head",
            )
        )
    tp = params(target)
    cost = K * params(fresh()) * len(idx) * tcfg.epochs / (tp * len(exp0.split.members) * tcfg.epochs) + params(
        frozen
    ) / (tp * tcfg.epochs)
    return refs, masks, cost, time.time() - t0


if __name__ == "__main__" and sys.argv[2] != "distill":
    seeds = [int(a) for a in sys.argv[1].split(",")]
    designs = sys.argv[2:]
    for seed in seeds:
        exp0 = base_exp(seed)
        tcfg = exp0.cfg.train
        print(
            "seed",
            seed,
            "target seconds",
            exp0.target.seconds,
            "members",
            len(exp0.split.members),
            "pool",
            len(exp0.pool_idx),
            flush=True,
        )
        for d in designs:
            if d == "steps":
                evaluate(exp0, exp0.references, exp0.ref_masks, len(exp0.references), f"s{seed} steps cost1")
                continue
            name, cut, K = d.split(":")
            refs, masks, cost, secs = head_design(exp0, int(cut), int(K), tcfg, seed)
            evaluate(exp0, refs, masks, int(K), f"s{seed} {d} cost{cost:.3f} secs{secs:.1f}")


def soft_train(model, x, p, epochs, batch, lr, seed, mix=0.0, y=None):
    torch.manual_seed(seed)
    xt = torch.as_tensor(x, dtype=torch.float32)
    pt = torch.as_tensor(p, dtype=torch.float32)
    if mix > 0:
        onehot = torch.nn.functional.one_hot(torch.as_tensor(y), pt.shape[1]).float()
        pt = (1 - mix) * pt + mix * onehot
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    g = torch.Generator().manual_seed(seed)
    model.train()
    for _e in range(epochs):
        for idx in torch.randperm(len(xt), generator=g).split(batch):
            if len(idx) < 2:
                continue
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xt[idx]), pt[idx])
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    return model


def distill_design(exp0, K, epochs_share, batch_share, seed, T=1.0, mix=0.0, records="half"):
    from miaudit.models import build_model

    ds, tcfg = exp0.dataset, exp0.cfg.train
    tl = np.asarray(exp0.target.logits, dtype=np.float64)
    p = torch.softmax(torch.as_tensor(tl / T), 1).numpy()
    masks = reference_subsets(len(exp0.pool_idx), K, seed + 2000)
    if records == "all":
        masks[:] = True
    refs = []
    t0 = time.time()
    n = 0
    for k in range(K):
        idx = exp0.pool_idx[masks[k]]
        n = len(idx)
        torch.manual_seed(seed * 100 + k)
        m = build_model("mlp", tuple(ds.input_shape), ds.n_classes)
        ep = max(1, int(tcfg.epochs * epochs_share))
        bs = max(2, int(tcfg.batch_size * batch_share))
        soft_train(m, ds.x[idx], p[idx], ep, bs, tcfg.lr, seed * 100 + k, mix, ds.y[idx])
        logits = predict_logits(m, ds.x)
        refs.append(
            TrainedModel(
                role=f"ref{k}",
                module=m,
                logits=logits.astype(np.float64),
                train_idx=idx,
                seconds=0.0,
                train_accuracy=0.0,
                cached=False,
                architecture="mlp",
            )
        )
    cost = K * n * ep / (len(exp0.split.members) * tcfg.epochs)
    return refs, masks, cost, time.time() - t0


def run_distill(seed, spec):
    # distill:K:epochs_share:batch_share:T:mix:records
    _, K, es, bs, T, mix, rec = spec.split(":")
    return distill_design(EXP[seed], int(K), float(es), float(bs), seed, float(T), float(mix), rec)


EXP = {}
if __name__ == "__main__" and sys.argv[2] == "distill":
    for seed in [int(a) for a in sys.argv[1].split(",")]:
        EXP[seed] = base_exp(seed)
        for spec in sys.argv[3:]:
            refs, masks, cost, secs = run_distill(seed, spec)
            evaluate(EXP[seed], refs, masks, len(refs), f"s{seed} {spec} cost{cost:.3f} secs{secs:.1f}")
