"""The per-record p-values on real exact retrains: pooled over the forgotten records of seeds 100..100+N-1 (the
validity seeds of run.py, whose models are then cached), their share at or below 1%, 5% and 10% in each direction
and a KS test against uniform (approximate: a seed's p-values share its calibration records and models).

    MIAUDIT_DATA_DIR=../shared/data OMP_NUM_THREADS=1 python benchmarks/unlearning/pvalues.py [--dataset digits]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats as sps

from miaudit.unlearning import audit, config

FORGET = {"digits": 50, "location": 100}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    a = ap.parse_args()
    up, low = [], []
    for seed in range(100, 100 + a.seeds):
        raw = {"dataset": a.dataset, "seed": seed, "references": 4}
        u = config.from_mapping({**raw, "unlearning": {"forget": FORGET[a.dataset], "method": "retrain"}})
        v = audit.run(u)
        up.append(v.p_remembered)
        low.append(v.p_over_forgotten)
    p_up, p_low = np.concatenate(up), np.concatenate(low)
    out = {
        "dataset": a.dataset,
        "seeds": a.seeds,
        "records": len(p_up),
        "share_at_or_below": {
            str(t): {"remembered": float(np.mean(p_up <= t)), "over_forgotten": float(np.mean(p_low <= t))}
            for t in (0.01, 0.05, 0.1)
        },
        "ks_uniform_p": {"remembered": float(sps.kstest(p_up, "uniform").pvalue),
                         "over_forgotten": float(sps.kstest(p_low, "uniform").pvalue)},
    }  # fmt: skip
    (a.out / f"pvalues-{a.dataset}.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
