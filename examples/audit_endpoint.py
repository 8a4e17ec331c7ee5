"""Audit a deployed model you can only query, in each output mode, and see what each mode costs and finds.

    python examples/audit_endpoint.py [--data synthetic|location|cifar10] [--records N] [--references K]
                                      [--queries Q] [--seed S] [--json OUT]

1. Train a target with miaudit's loop on the members (the auditor never sees its weights again).
2. Serve it on 127.0.0.1 with ``miaudit.endpoint.serve.V2Server`` (an Open Inference Protocol v2 server on
   the standard library; a real deployment is KServe, Triton, MLServer or ``mlflow models serve``), once per
   output mode: logits, probabilities, top-1 (the predicted class and its probability) and label.
3. Audit each with ``miaudit.audit(target=miaudit.Endpoint(url, output=..., architecture=...), ...)``: the
   references are trained by miaudit on the auditor's population records in the named architecture.
   Logit-based attacks run on logits, probabilities and top-k; the label-only attacks (label-gap,
   label-lira, label-dist) on every mode.
4. Print, per mode and attack: AUC with its 95% bootstrap interval, TPR at 1% FPR with its Clopper-Pearson
   interval, and the endpoint queries spent per audited record (the audited record's own answer included).

Everything runs on the CPU; --data synthetic (the default) takes a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

import miaudit
from miaudit.config.run import TrainConfig
from miaudit.data import load
from miaudit.endpoint.serve import V2Server, module_fn
from miaudit.models import build_model
from miaudit.training.loop import train

MODES = {"logits": {}, "probabilities": {}, "top-k": {"top_k": 1}, "label": {}}
LABEL_ONLY = ["label-gap", "label-dist"]  # and label-lira with --queries


def data(name: str, records: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(x, y, architecture) of ``records`` records."""
    if name == "synthetic":
        from sklearn.datasets import make_classification

        x, y = make_classification(
            n_samples=records,
            n_features=20,
            n_informative=12,
            n_redundant=4,
            n_classes=4,
            n_clusters_per_class=2,
            flip_y=0.1,
            class_sep=1.2,
            random_state=seed,
        )
        return ((x - x.mean(0)) / x.std(0)).astype(np.float32), y.astype(np.int64), "mlp"
    ds = load(name, subset=records, seed=seed)
    return ds.x.astype(np.float32), ds.y.astype(np.int64), "cnn" if ds.x.ndim == 4 else "mlp"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="synthetic")
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--references", type=int, default=4)
    ap.add_argument("--queries", type=int, default=32, help="label-lira: perturbed copies per record")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None, help="write the table here as JSON")
    args = ap.parse_args()

    x, y, arch = data(args.data, args.records, args.seed)
    order = np.random.default_rng(args.seed).permutation(len(y))
    q = len(y) // 4  # a quarter members, a quarter non-members, half the auditor's population
    members, nonmembers, population = order[:q], order[q : 2 * q], order[2 * q :]
    settings = TrainConfig(epochs=args.epochs)
    torch.manual_seed(args.seed)  # the target's initial weights
    target = build_model(arch, x.shape[1:], int(y.max()) + 1)
    train(target, x[members], y[members], settings, seed=10_000 + args.seed)
    logits = module_fn(target)(x)
    gap = (logits[members].argmax(1) == y[members]).mean() - (logits[nonmembers].argmax(1) == y[nonmembers]).mean()
    print(f"{args.data}: {len(y)} records, target {arch}, train-test accuracy gap {gap:.2f}")

    rows = []
    for mode, options in MODES.items():
        server = V2Server(module_fn(target), name="target", output=mode, **options)
        try:
            logit_attacks = [] if mode == "label" else ["attack-p", {"name": "lira"}, {"name": "rmia"}]
            result = miaudit.audit(
                miaudit.Endpoint(server.url, output=mode, architecture=arch, **options),
                members=(x[members], y[members]),
                nonmembers=(x[nonmembers], y[nonmembers]),
                population=(x[population], y[population]),
                attacks=[*logit_attacks, *LABEL_ONLY, {"name": "label-lira", "queries": args.queries}],
                references=args.references,
                train=settings,
                seed=args.seed,
            )
        finally:
            server.stop()
        usage = result.run.experiment.oracle.usage()
        audited = 2 * q
        own = usage["queries_by_stage"].get("target outputs", 0) / len(y)  # every record asked once
        for run in result.run.attacks:
            m = run.metrics.to_json()
            spent = own + usage["queries_by_stage"].get(run.attack.name, 0) / (
                audited + len(result.run.experiment.split.validation)
            )
            tpr = m["tpr_at_fpr"]["0.01"]
            ci = m["tpr_at_fpr_ci"]["0.01"]
            rows.append(
                {
                    "data": args.data,
                    "output": mode,
                    "attack": run.attack.label,
                    "auc": m["auc"],
                    "auc_ci": m.get("auc_ci"),
                    "tpr@1%": tpr,
                    "tpr_ci": ci,
                    "queries_per_record": spent,
                }
            )
    print(f"{'output':<14}{'attack':<22}{'AUC [95% CI]':<24}{'TPR@1% [95% CI]':<26}queries/record")
    for r in rows:
        auc_ci = r["auc_ci"] or [float("nan")] * 2
        print(
            f"{r['output']:<14}{r['attack']:<22}{r['auc']:.3f} [{auc_ci[0]:.3f}, {auc_ci[1]:.3f}]      "
            f"{100 * r['tpr@1%']:.1f}% [{100 * r['tpr_ci'][0]:.1f}, {100 * r['tpr_ci'][1]:.1f}]{'':<8}"
            f"{r['queries_per_record']:.0f}"
        )
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
