"""Dataset inference under selection: suspects chosen the way a data owner chooses them, not drawn at random.

Protocol (fixed before the reporting runs; issue 58). Per data set (digits, the mlp, seed 0; Location, the mlp,
seed 3; 4 references: the models of `miaudit run` on run.py's config, from the cache), the command's own code
(`dataset_inference.infer.measure` once, `decide` per draw: 999 permutations, both guards, the fraction, the power).
An independent model (scikit-learn MLP, 64 hidden units, 300 iterations, random_state 0) is trained on up to 2,000
records outside the audit's queries (seeded 11, as ../shared/checks/trust does) and gives each unused record (the
target's non-members and validation split: no model trained on them) its loss. Suites, 20 draws each; Location 100
suspects from pools of 200 against 300 validation records, digits (718 unused records) 50 suspects from pools of
100 against 250; validation records drawn at random among unused records outside the suspects' pool and the
carriers below:

- null: 100 unused records at random (every "used" false);
- null: suspects drawn at random among the unused records (every "used" false);
- easiest / hardest: suspects among the pool of lowest / highest loss (every "used" false);
- few classes: suspects of 3 labels drawn at random per draw (every "used" false);
- class skew: half the suspects of one label drawn per draw, half of any label (every "used" false);
- noise: unused records with Gaussian noise added to their inputs (sd 0.5 times the data set's feature sd), written
  into a pool of carrier records of the unused set (never validation) and put through the target and the references
  afresh (every "used" false: no model saw them);
- near-duplicates: the target's members copied with small noise (sd 0.1 times the feature sd, the member's label)
  into another pool of carriers (not themselves used): reported as measured, not counted as false or true "used" (a
  test of the model's behaviour sees a near-copy of a training record as the record; the issue asks what it does);
- power: the target's members against unused records at random ("used" wanted).

Reported per suite: "used" with Clopper-Pearson 95% intervals, "no claim" by each guard, the raw p < 0.05 (the test
alone, guards aside), the mean direction. No parameter of the test was tuned on these draws; the calibration and
the guards were designed on ../shared/checks/trust's selections (Location seed 3, digits seed 0, with the check's
own model and draws 100-104), which share the data sets and seeds but not the draws (seeded 2027 here).

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/dataset_inference/selection.py [--datasets digits location]

Added before its run (same protocol, same seeds and draws): the CIFAR-10 subset (run.py's config: the cnn on 5,000
images, seed 0; 1,000 members and 2,000 unused records, so Location's sizes: 100 suspects, pools of 200, 300
validation records). Its independent model is the same scikit-learn MLP on the raw pixels (a weak model of
difficulty, said with the results). Not the causal LM: noise and near-duplicates of token sequences and an
independent model's loss need a text-specific design (another LM), not written here.

Writes selection_<data set>.json (every draw) and selection.md (the table).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from run import CONFIGS, rate, sub

from miaudit import pipeline
from miaudit.config.run import from_dict
from miaudit.dataset_inference.infer import decide, measure
from miaudit.dataset_inference.request import InferenceOptions
from miaudit.training.loop import predict_logits

HERE = Path(__file__).parent
DRAWS = 20
SIZES = {"digits": (50, 250, 100), "location": (100, 300, 200), "cifar10": (100, 300, 200)}  # n suspect/val/pool
SUITES = ("null", "easiest", "hardest", "few classes", "class skew", "noise", "near-duplicates", "power")


def independent_loss(x: np.ndarray, y: np.ndarray, outside: np.ndarray, records: np.ndarray) -> np.ndarray:
    """The loss of ``records`` under a scikit-learn MLP trained on (up to 2,000 of) the ``outside`` records."""
    from sklearn.neural_network import MLPClassifier

    fit = np.random.default_rng(11).choice(outside, min(len(outside), 2000), replace=False)
    own = MLPClassifier(hidden_layer_sizes=(64,), max_iter=300, random_state=0).fit(x[fit], y[fit])
    p = own.predict_proba(x[records])
    col = {c: i for i, c in enumerate(own.classes_)}
    py = np.array([p[i, col[y[r]]] if y[r] in col else 1e-12 for i, r in enumerate(records)])
    return -np.log(np.clip(py, 1e-12, 1))


def rewritten(exp, slots: np.ndarray, new_x: np.ndarray, new_y: np.ndarray):
    """The experiment with the records ``slots`` replaced by new inputs and labels, put through the target and the
    references afresh (in memory: the cache is not touched; the stored signals are not read)."""
    from dataclasses import replace

    x, y = np.array(exp.dataset.x), np.array(exp.dataset.y)
    x[slots], y[slots] = new_x, new_y
    for model in [exp.target, *exp.references]:
        logits = np.array(model.logits, dtype=np.float64)
        logits[slots] = predict_logits(model.module, new_x.astype(np.float32))
        model.logits = logits
    records = replace(exp.records, dataset=replace(exp.records.dataset, x=x, y=y))
    return replace(exp, records=records, signal_cache=None, memo={})


def bench(name: str, log, draws: int = DRAWS) -> dict:
    n_suspect, n_validation, pool_size = SIZES[name]
    cfg = from_dict(CONFIGS[name])
    exp = pipeline.prepare(cfg)
    ds = exp.dataset
    x = np.asarray(ds.x, dtype=np.float64).reshape(len(ds.y), -1)
    y = np.asarray(ds.y)
    members = np.asarray(exp.split.members)
    unused = np.concatenate([exp.split.nonmembers, exp.split.validation])
    queries = np.concatenate([members, unused])
    outside = np.setdiff1d(np.arange(len(y)), queries)
    rng = np.random.default_rng(2027)
    start = time.perf_counter()
    loss = independent_loss(x, y, outside, unused)
    by_loss = unused[np.argsort(loss)]
    carriers = rng.choice(unused, 2 * pool_size, replace=False)  # records rewritten for the noise and near-duplicates
    noisy_slots, dup_slots = carriers[:pool_size], carriers[pool_size:]
    plain = np.setdiff1d(unused, carriers)
    sd = float(x[queries].std())
    dup_of = rng.choice(members, pool_size, replace=False)
    shape = ds.x.shape[1:]
    new_x = np.concatenate([x[noisy_slots] + rng.normal(scale=0.5 * sd, size=(pool_size, x.shape[1])),
                            x[dup_of] + rng.normal(scale=0.1 * sd, size=(pool_size, x.shape[1]))])  # fmt: skip
    new_y = np.concatenate([y[noisy_slots], y[dup_of]])
    exp = rewritten(exp, carriers, new_x.reshape(-1, *shape).astype(ds.x.dtype), new_y)
    ds = exp.dataset
    idx = np.concatenate([members, unused])
    m = measure(exp, idx, unused, cfg.seed)
    log(f"{name}: measured {len(idx)} records in {time.perf_counter() - start:.0f} s")
    pos = {r: i for i, r in enumerate(idx)}
    upos = {r: i for i, r in enumerate(unused)}
    opts = InferenceOptions()
    rows_out: list[dict] = []
    labels = np.unique(y[plain])

    def draw(kind: str, suspects: np.ndarray, pool: np.ndarray, seed: int) -> None:
        val = rng.choice(np.setdiff1d(plain, pool), n_validation, replace=False)
        recs = np.r_[suspects, val]
        rows = np.array([pos[r] for r in recs])
        is_suspect = np.arange(len(recs)) < len(suspects)
        d, _ = decide(sub(m, rows, np.array([upos[r] for r in val])), is_suspect, ds.x[recs], ds.y[recs],
                      ds.n_classes, opts, seed)  # fmt: skip
        g = d.references_guard
        rows_out.append({
            "kind": kind, "used": d.used, "p_value": d.p_value, "direction": d.direction, "blind": d.blind.shifted,
            "blind_auc": d.blind.auc, "reference_guard": None if g is None else g.shifted,
            "reference_auc": None if g is None else g.auc,
            "fraction": None if d.fraction is None else d.fraction.estimate,
        })  # fmt: skip

    seed = 0
    for _ in range(draws):
        draw("null", rng.choice(plain, n_suspect, replace=False), np.array([], dtype=np.int64), seed := seed + 1)
        for kind, ends in (("easiest", by_loss[:pool_size]), ("hardest", by_loss[-pool_size:])):
            ends = ends[~np.isin(ends, carriers)]
            draw(kind, rng.choice(ends, n_suspect, replace=False), ends, seed := seed + 1)
        three = rng.choice(labels, 3, replace=False)
        pool = plain[np.isin(y[plain], three)]
        draw("few classes", rng.choice(pool, min(n_suspect, len(pool)), replace=False), pool, seed := seed + 1)
        one = plain[y[plain] == rng.choice(labels)]
        half = rng.choice(one, min(n_suspect // 2, len(one)), replace=False)
        rest = rng.choice(np.setdiff1d(plain, half), n_suspect - len(half), replace=False)
        draw("class skew", np.r_[half, rest], np.r_[half, rest], seed := seed + 1)
        draw("noise", rng.choice(noisy_slots, n_suspect, replace=False), noisy_slots, seed := seed + 1)
        draw("near-duplicates", rng.choice(dup_slots, n_suspect, replace=False), dup_slots, seed := seed + 1)
        draw("power", rng.choice(members, n_suspect, replace=False), np.array([], dtype=np.int64), seed := seed + 1)
    log(f"{name}: {len(rows_out)} draws in {time.perf_counter() - start:.0f} s")
    return {"config": CONFIGS[name], "n_members": len(members), "n_unused": len(unused), "draws": rows_out}


def table(results: dict) -> str:
    out = ["| data set | suite | draws | 'used' | no claim: reference guard | no claim: blind guard | p < 0.05 (test "
           "alone) | mean direction |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, res in results.items():
        groups: dict[str, list[dict]] = collections.defaultdict(list)
        for r in res["draws"]:
            groups[r["kind"]].append(r)
        for kind in SUITES:
            rows = groups.get(kind, [])
            if not rows:
                continue
            n = len(rows)
            used = sum(r["used"] is True for r in rows)
            ref = sum(bool(r["reference_guard"]) for r in rows)
            blind = sum(r["blind"] for r in rows)
            p05 = sum(r["p_value"] < 0.05 for r in rows)
            out.append(f"| {name} | {kind} | {n} | {rate(used, n)} | {rate(ref, n)} | {rate(blind, n)} | "
                       f"{rate(p05, n)} | {np.mean([r['direction'] for r in rows]):+.3f} |")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["digits", "location"])
    ap.add_argument("--table", action="store_true", help="only the table, from the selection_<data set>.json files")
    ap.add_argument("--draws", type=int, default=DRAWS, help="draws per suite (fewer: a smoke test, not reported)")
    args = ap.parse_args()
    if not args.table:
        for name in args.datasets:
            res = bench(name, print, args.draws)
            if args.draws == DRAWS:
                (HERE / f"selection_{name}.json").write_text(json.dumps(res, indent=1))
            else:
                print(table({name: res}))
                return
    results = {n: json.loads((HERE / f"selection_{n}.json").read_text())
               for n in CONFIGS if (HERE / f"selection_{n}.json").exists()}  # fmt: skip
    md = ["# Dataset inference under selection", "",
          "`MIAUDIT_DATA_DIR=../shared/data python benchmarks/dataset_inference/selection.py` (protocol: the "
          "script's docstring); Clopper-Pearson 95% intervals; per draw Location and CIFAR-10 100 suspects and "
          "300 validation records, digits 50 and 250. 2 shared CPU cores (AMD EPYC), no GPU.", "",
          table(results), ""]  # fmt: skip
    (HERE / "selection.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
