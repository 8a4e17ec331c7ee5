"""Unlearning verification benchmark: method x data set x seed -> verdict, per-example and population AUC with
intervals, forget-set TPR@1% before/after, utility, models trained and time (``miaudit.verify_unlearning``).

    MIAUDIT_DATA_DIR=../shared/data OMP_NUM_THREADS=1 python benchmarks/unlearning/run.py [--seeds 3 4 5]
        [--datasets digits location] [--validity-seeds 20] [--out benchmarks/unlearning/results]

Protocol (fixed before the runs): the mlp of each data set's default recipe (30 epochs), `references: 4` models
retrained on the retained records, forget 100 records (digits: 50) drawn with the seed; methods at their defaults
(docs/unlearning.md) plus a 1-epoch finetune, a 5-epoch gradient ascent and 5 epochs at the training rate (0.1)
of finetune, neggrad-plus and random-label (``--methods`` picks, ``--tag`` names the file); seeds 3-5.
``--validity-seeds N`` adds exact retraining on seeds 100..100+N-1 (the false not_forgotten rate). One torch
thread; the model cache is shared (models trained = those this run trained; a warm cache trains fewer).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import miaudit

METHODS: list[tuple[str, object]] = [
    ("retrain", "retrain"),
    ("noop", "noop"),
    ("finetune-1", {"name": "finetune", "epochs": 1}),
    ("finetune", "finetune"),
    ("gradient-ascent", "gradient-ascent"),
    ("gradient-ascent-5", {"name": "gradient-ascent", "epochs": 5}),
    ("neggrad-plus", "neggrad-plus"),
    ("random-label", "random-label"),
    # stronger settings (the training rate, 0.1): where the methods move the model at all
    ("finetune-strong", {"name": "finetune", "epochs": 5, "lr": 0.1}),
    ("neggrad-plus-strong", {"name": "neggrad-plus", "epochs": 5, "lr": 0.1}),
    ("random-label-strong", {"name": "random-label", "epochs": 5, "lr": 0.1}),
    ("scrub", "scrub"),
    ("scrub-strong", {"name": "scrub", "epochs": 5, "lr": 0.1}),
]
FORGET = {"digits": 50, "location": 100}


def one(dataset: str, seed: int, method: object) -> dict:
    cfg = {
        "dataset": dataset,
        "model": "mlp",
        "seed": seed,
        "references": 4,
        "unlearning": {"forget": FORGET[dataset], "method": method},
    }
    start = time.perf_counter()
    s = miaudit.verify_unlearning(cfg).unlearning
    assert s is not None
    return {
        "dataset": dataset,
        "seed": seed,
        "method": s.method.label,
        "verdict": s.verdict,
        "p_value": s.p_value,
        "p_records": s.p_records,
        "p_models": s.p_models,
        "remembered": len(s.remembered),
        "over_forgotten": len(s.over_forgotten),
        "per_example_auc": [s.per_example_auc.value, *(s.per_example_auc.interval or [None, None])],
        "population_auc": [s.population_auc.value, *(s.population_auc.interval or [None, None])],
        "tpr_before": s.tpr_at_1pct_before.value,
        "tpr_after": s.tpr_at_1pct_after.value,
        "tpr_retrained": s.tpr_at_1pct_retrained.value,
        "test_acc": s.utility.test.unlearned,
        "test_acc_retrained": s.utility.test.retrained_mean,
        "retained_acc": s.utility.retained.unlearned,
        "retained_acc_retrained": s.utility.retained.retrained_mean,
        "exposure_rose": s.exposure_rose.count,
        "exposure_rose_retrained": s.exposure_rose.retrained_mean,
        "models_trained": s.models_trained,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="*", default=[3, 4, 5])
    ap.add_argument("--datasets", nargs="+", default=["digits", "location"])
    ap.add_argument("--validity-seeds", type=int, default=0)
    ap.add_argument("--methods", nargs="*", default=[k for k, _ in METHODS], help="METHODS keys")
    ap.add_argument("--tag", default="", help="appended to the results file's name")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    a = ap.parse_args()
    torch.set_num_threads(1)
    a.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for ds in a.datasets:
        for seed in a.seeds:
            for key, method in METHODS:
                if key not in a.methods:
                    continue
                rows.append(one(ds, seed, method))
                print(json.dumps(rows[-1]), flush=True)
        for seed in range(100, 100 + a.validity_seeds):
            rows.append({**one(ds, seed, "retrain"), "validity": True})
            print(json.dumps(rows[-1]), flush=True)
    name = "results" if not a.validity_seeds else "validity"
    (a.out / f"{name}-{'-'.join(a.datasets)}{a.tag}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
