"""False "used" over independent targets: the null suite of run.py repeated on targets trained with other seeds.

run.py's 100 null draws per data set share one target (and its 4 references), so they test the p-value on one
model. Here each seed trains a fresh target and 4 references (run.py's config with only the seed changed), and 20
null draws (100 unused suspects, 300 unused validation records, disjoint) are decided on each by the command's own
code. Protocol fixed before any of it ran: Location seeds 10-19 and the CIFAR-10 subset seeds 10-13 (seeds no
other study here used), 20 draws each, every result reported.

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/dataset_inference/null_seeds.py location 10 11 12 ...

writes null_seeds_<data set>.json (every draw); `--table` prints null_seeds.md from the files. Sized for 2 CPU
cores: a Location seed trains in about 40 s, a CIFAR-10 seed in about 2 min.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from run import CONFIGS, N_VALIDATION, TEST, sub
from scipy import stats

from miaudit import pipeline
from miaudit.config.run import from_dict
from miaudit.dataset_inference.infer import decide, measure
from miaudit.dataset_inference.request import InferenceOptions
from miaudit.stats.metrics import clopper_pearson

HERE = Path(__file__).parent
DRAWS = 20


def null_draws(name: str, seed: int) -> list[dict]:
    """20 null draws on the target and references of ``name``'s config at ``seed``."""
    cfg = from_dict({**CONFIGS[name], "seed": seed})
    exp = pipeline.prepare(cfg)
    ds, unused = exp.dataset, np.concatenate([exp.split.nonmembers, exp.split.validation])
    m = measure(exp, unused, unused, seed)
    rng = np.random.default_rng([2026, seed])
    out = []
    for i in range(DRAWS):
        order = rng.permutation(len(unused))
        val_pos, sus_pos = order[:N_VALIDATION], order[N_VALIDATION : N_VALIDATION + 100]
        rows = np.r_[sus_pos, val_pos]
        is_suspect = np.r_[np.ones(100, dtype=bool), np.zeros(N_VALIDATION, dtype=bool)]
        recs = unused[rows]
        d, _ = decide(sub(m, rows, val_pos), is_suspect, ds.x[recs], ds.y[recs], ds.n_classes, InferenceOptions(), i)
        g = d.references_guard
        out.append({"seed": seed, "draw": i, "p_value": d.p_value, "used": d.used, "guard": d.blind.shifted,
                    "reference_guard": None if g is None else g.shifted, "test": TEST})  # fmt: skip
    return out


def table() -> str:
    lines = ["# False 'used' over independent targets (null_seeds.py)", "",
             "| data set | seeds | draws | 'used' | p < 0.05 | blind guard fired | reference guard fired | "
             "KS p (p-values vs uniform) |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for path in sorted(HERE.glob("null_seeds_*.json")):
        rows = json.loads(path.read_text())
        p = np.array([r["p_value"] for r in rows])
        used, n = sum(r["used"] is True for r in rows), len(rows)
        lo, hi = clopper_pearson(used, n)
        seeds = sorted({r["seed"] for r in rows})
        new = all(r.get("test") == TEST for r in rows)
        name = path.stem.removeprefix("null_seeds_") + ("" if new else " (earlier test)")
        ref = str(sum(bool(r["reference_guard"]) for r in rows)) if new else "-"
        lines.append(f"| {name} | {seeds[0]}-{seeds[-1]} ({len(seeds)}) | {n} | "
                     f"{used}/{n} = {100 * used / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] | {int((p < 0.05).sum())} | "
                     f"{sum(r['guard'] for r in rows)} | {ref} | "
                     f"{stats.kstest(p, 'uniform').pvalue:.2f} |")  # fmt: skip
    lines += ["", "Rows marked (earlier test): the two-sided cross-fitted test before issue 58, not rerun."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", choices=list(CONFIGS))
    ap.add_argument("seeds", nargs="*", type=int)
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if not args.table:
        rows = [r for seed in args.seeds for r in null_draws(args.dataset, seed)]
        (HERE / f"null_seeds_{args.dataset}.json").write_text(json.dumps(rows, indent=1))
    (HERE / "null_seeds.md").write_text(table())
    print(table())


if __name__ == "__main__":
    main()
