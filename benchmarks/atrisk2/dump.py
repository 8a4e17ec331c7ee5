"""Save what the records-at-risk procedures read from one audit, so that they can be designed and compared on the
saved arrays without retraining or rerunning the attacks.

Per (data set, seed): ``miaudit``'s pipeline on ``dataset: D, model: mlp, seed: S, references: 4`` (default
attacks, models from the cache), then per attack with calibration scores: the queries' scores, the calibration
records' scores, and beside them the queries' membership, the labels and the references' logits on the queries
and on the calibration records (the screens read those), and the attack choice's order.

Run: MIAUDIT_DATA_DIR=... python benchmarks/atrisk2/dump.py location:0,1,2,3,4 digits:0 --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def dump(dataset: str, seed: int, out: Path) -> Path:
    from miaudit import audits
    from miaudit.config.run import from_dict

    path = out / f"{dataset}-{seed}.npz"
    if path.exists():
        return path
    cfg = from_dict({"dataset": dataset, "model": "mlp", "seed": seed, "references": 4})
    res = audits.run_config(cfg)
    exp = res.experiment
    inputs = exp.attack_inputs()
    cal = inputs.require(exp.calibration_part)
    arrays: dict[str, np.ndarray] = {
        "member": np.asarray(exp.is_member, dtype=bool),
        "q_labels": inputs.queries.labels,
        "q_ref_logits": np.asarray(inputs.queries.ref_logits, dtype=np.float32),
        "c_labels": cal.labels,
        "c_ref_logits": np.asarray(cal.ref_logits, dtype=np.float32),
    }
    if inputs.queries.ref_in is not None:
        arrays["q_ref_in"] = inputs.queries.ref_in
    if cal.ref_in is not None:
        arrays["c_ref_in"] = cal.ref_in
    names = []
    for i, run in enumerate(res.attacks):
        if run.calibration_scores is None or run.attack.info.is_ranking:
            continue
        names.append(run.attack.label)
        arrays[f"a{i}_q"] = run.result.scores
        arrays[f"a{i}_c"] = run.calibration_scores
    meta = {
        "attacks": {run.attack.label: f"a{i}" for i, run in enumerate(res.attacks) if run.attack.label in names},
        "chosen": res.attack_choice.chosen if res.attack_choice is not None else None,
        "mode": cfg.mode,
    }
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **arrays)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", help="DATASET:SEED,SEED,...")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for spec in a.runs:
        name, seeds = spec.split(":")
        for s in seeds.split(","):
            print(dump(name, int(s), a.out), flush=True)


if __name__ == "__main__":
    main()
