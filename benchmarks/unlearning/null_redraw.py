"""The model-level test's false alarm rate on exact retraining, forget sets redrawn on every seed's models.

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/unlearning/null_redraw.py --logits /tmp/unlearn-null \
        --dataset digits --redraws 50 --out benchmarks/unlearning/results/null-redraw-digits.json
    python benchmarks/unlearning/null_redraw.py --table benchmarks/unlearning/results/null-redraw-*.json

null_rates.py gives one audit per seed and unlearned model: the forget set the seed drew. Under exact retraining
every model compared (the unlearned one, the 4 retrained) trained on the retained records only, so given them the
forget set is a uniformly random choice among the non-retained records (forget + unseen): redrawing it that way
(same size, seeded) and rerunning the model-level test (``verify.stratified_test`` on the unlearned model's
confidence minus the retrained models' mean, as ``audit.verify_models`` does) samples the test's null on the
models each seed trained, ``--redraws`` times per audit instead of once. Its rate of p <= 2.5% (the test's share
of the level) must be at most 2.5% up to sampling: the test is exact by construction, this checks the code against
the construction on every model the benchmark trained, and separates a miscalibrated test from seeds that drew
badly. 399 permutations per test (p = (1 + #)/400: p <= 0.0125 a tail exactly 1.25% of the time, so the two-sided
2 x the smaller tail <= 0.025 at most 2.5%).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from miaudit.stats.metrics import clopper_pearson
from miaudit.stats.signals import confidence
from miaudit.unlearning import verify

EXACT = ("retrain", "seed", "epochs", "lr")
SHARE = 0.025  # the model-level test's share of the level 0.05
RESAMPLES = 399
REDRAW_TAG = 0x4ED4A


def redraws(a: np.lib.npyio.NpzFile, model: str, seed: int, n: int) -> list[float]:
    """The model-level test's two-sided p-value on ``n`` forget sets redrawn among the non-retained records."""
    y, f = a["y"], len(a["forget"])
    pool = np.concatenate([a["forget"], a["unseen"]])
    conf_u = confidence(a[model][pool].astype(np.float64), y[pool])
    conf_r = confidence(a["refs"][:, pool].astype(np.float64), y[pool]).mean(axis=0)
    values = conf_u - conf_r
    rng = np.random.default_rng(np.random.SeedSequence([seed, REDRAW_TAG, EXACT.index(model)]))
    out = []
    for i in range(n):
        order = rng.permutation(len(pool))  # the redrawn forget set first, the rest unseen
        strata = verify.Strata.of(y[pool[order[:f]]], y[pool[order[f:]]])
        test = verify.stratified_test(values[order], strata, seed + 1000 * i, verify.MODELS_TAG, RESAMPLES)
        out.append(test.p_value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logits", type=Path, default=Path("/tmp/unlearn-null"))
    ap.add_argument("--redraws", type=int, default=100)
    ap.add_argument("--dataset", default="*", help="only this data set's seeds")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--table", type=Path, nargs="+", help="only the table, from these files")
    args = ap.parse_args()
    if args.table:
        print(table([r for path in args.table for r in json.loads(path.read_text())["rows"]]))
        return
    rows = []
    for path in sorted(args.logits.glob(f"{args.dataset}-*.npz")):
        name, seed = path.stem.rsplit("-", 1)
        a = np.load(path)
        for model in EXACT:
            p = redraws(a, model, int(seed), args.redraws)
            rows.append({"dataset": name, "seed": int(seed), "unlearned": model, "redraws": len(p),
                         "alarms": int(np.sum(np.asarray(p) <= SHARE))})  # fmt: skip
        print(path.stem, [r["alarms"] for r in rows[-len(EXACT) :]], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"resamples": RESAMPLES, "rows": rows}, indent=1) + "\n")
    print(table(rows))


def table(rows: list[dict]) -> str:
    """Per data set and unlearned model, and pooled: alarms (p <= 2.5%) over every redraw, with the Clopper-Pearson
    95% interval, and the highest rate on one seed's models."""
    out = ["| data set | unlearned model | seeds | redraws | model test p <= 2.5% | highest on one seed |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    groups = sorted({(r["dataset"], r["unlearned"]) for r in rows}) + [("all", "exact, all four")]
    for ds, model in groups:
        sel = [r for r in rows if ds in (r["dataset"], "all") and model in (r["unlearned"], "exact, all four")]
        k, n = sum(r["alarms"] for r in sel), sum(r["redraws"] for r in sel)
        lo, hi = clopper_pearson(k, n)
        top = max(r["alarms"] / r["redraws"] for r in sel)
        out.append(f"| {ds} | {model} | {len({(r['dataset'], r['seed']) for r in sel})} | {n} | "
                   f"{k}/{n} = {100 * k / n:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}] | {100 * top:.0f}% |")  # fmt: skip
    return "\n".join(out)


if __name__ == "__main__":
    main()
