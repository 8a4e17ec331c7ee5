"""Records at risk at FDR 5% (issue 34): how many records each audit names, and how many of them are non-members.

Per (data set, seed): ``miaudit run`` with K = 4 references, offline, default attacks; from results.json and
scores.csv: the records flagged by the headline attack (``records_at_risk``), their realized FDP (non-members
among them, from the ``member`` column), the same procedure's FDP on the pseudo-targets, and what BH on the
calibrated p-values flagged before (the conformal floor). Then the no-leak case: ``miaudit score`` on synthetic
logits in which the target does not depend on membership (the generator of ../shared/checks/atrisk), counting
the audits that flag any record.

Run: MIAUDIT_DATA_DIR=... MIAUDIT_CACHE_DIR=... python benchmarks/records_at_risk/records_at_risk.py \
       location:1,3 digits:3,4,5 --null 20
     (writes records_at_risk.json and .md beside this script; models come from the cache), then
     python benchmarks/records_at_risk/records_at_risk.py location:4 --append
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent  # this study's folder: its results
K = 4


def audit(dataset: str, seed: int, where: Path) -> dict:
    """One audit, run into ``where`` unless a finished one is there already (a run interrupted before)."""
    cfg = where / f"{dataset}-{seed}.yaml"
    cfg.write_text(f"dataset: {dataset}\nmodel: mlp\nseed: {seed}\nreferences: {K}\n")
    out = where / f"{dataset}-{seed}"
    if not (out / "results.json").exists():
        subprocess.run(["miaudit", "run", str(cfg), "--out", str(out)], check=True, capture_output=True)
    r = json.loads((out / "results.json").read_text())["records_at_risk"]
    with open(out / "scores.csv") as f:
        rows = list(csv.DictReader(f))
    flagged = [x for x in rows if x["at_risk"] == "1"]
    false = sum(x["member"] == "0" for x in flagged)
    head = r["by_attack"][r["attack"]]
    return {
        "dataset": dataset,
        "seed": seed,
        "queries": len(rows),
        "attack": r["attack"],
        "procedure": r["procedure"],
        "flagged": len(flagged),
        "non_members": false,
        "realized_fdp": false / len(flagged) if flagged else 0.0,
        "realized_fdp_ci": r["realized_fdp"]["ci"],
        "pseudo_target_fdp": r.get("pseudo_targets", {}).get("realized_fdp", {}).get("value"),
        "calibrated_flagged": head.get("count_calibrated"),
        # "flagged" since the screened procedure (issue 45); "count" in the files this study's results came from
        "by_attack": {label: a.get("flagged", a.get("count")) for label, a in r["by_attack"].items()},
    }


NULL_GENERATOR = """
import sys
import numpy as np
d, seed = sys.argv[1], int(sys.argv[2])
K, N, C = 8, 2000, 10
rng = np.random.default_rng(1000 + seed)
y = rng.integers(0, C, N)
rows = np.arange(N)
hard = rng.standard_normal(N)
profile = rng.standard_normal((N, C))
keep = rng.random((K, N)).argsort(axis=0).argsort(axis=0) < K // 2
def model(member):
    z = profile + 0.5 * rng.standard_normal((N, C))
    z[rows, y] += 4.0 - 1.5 * hard + rng.standard_normal(N) + 1.5 * member
    return (rng.uniform(0.9, 1.1) * z).astype(np.float32)
np.save(f"{d}/labels.npy", y.astype(np.int64))
np.save(f"{d}/target_logits.npy", model(np.zeros(N)))
np.save(f"{d}/target_keep.npy", rng.permutation(N) < N // 2)
np.save(f"{d}/reference_keep.npy", keep)
np.save(f"{d}/reference_logits.npy", np.stack([model(keep[k]) for k in range(K)]))
"""


def null_audit(seed: int, where: Path) -> int:
    d = where / f"null{seed}"
    d.mkdir()
    subprocess.run([sys.executable, "-c", NULL_GENERATOR, str(d), str(seed)], check=True)
    cfg = where / f"null{seed}.yaml"
    attacks = "[{name: lira}, {name: attack-r}]"
    cfg.write_text(f"outputs: {{layout: npz, path: {d}}}\nname: null{seed}\nmode: offline\nattacks: {attacks}\n")
    subprocess.run(["miaudit", "score", str(cfg), "--out", str(d) + "-out"], check=True, capture_output=True)
    return int(json.loads((Path(str(d) + "-out") / "results.json").read_text())["records_at_risk"]["count"])


def markdown(runs: list[dict], nulls: list[int], env: dict) -> str:
    lines = [
        "# Records at risk at FDR 5% (benchmarks/records_at_risk/records_at_risk.py)",
        "",
        f"K = {K} references, offline, default attacks; {env['machine']}. Realized FDP: non-members among the "
        "flagged records (95% Clopper-Pearson interval); pseudo-target FDP: the same procedure on the references "
        "in the target's place; calibrated: BH on the conformal p-values before this change.",
        "",
        "| data set | seed | attack | flagged | non-members | realized FDP | pseudo-target FDP | calibrated flagged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lo, hi = r["realized_fdp_ci"]
        pt = "-" if r["pseudo_target_fdp"] is None else f"{100 * r['pseudo_target_fdp']:.1f}%"
        lines.append(
            f"| {r['dataset']} | {r['seed']} | {r['attack']} | {r['flagged']} | {r['non_members']} | "
            f"{100 * r['realized_fdp']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] | {pt} | {r['calibrated_flagged']} |"
        )
    lines += ["", "| data set | seeds | flagged (mean) | realized FDP mean | realized FDP max |"]
    lines += ["|---|---|---|---|---|"]
    for ds in dict.fromkeys(r["dataset"] for r in runs):
        mine = [r for r in runs if r["dataset"] == ds]
        fdp = [r["realized_fdp"] for r in mine]
        lines.append(
            f"| {ds} | {', '.join(str(r['seed']) for r in mine)} | {np.mean([r['flagged'] for r in mine]):.1f} | "
            f"{100 * np.mean(fdp):.1f}% | {100 * max(fdp):.1f}% |"
        )
    if nulls:
        lines += ["", f"No leak (the atrisk check's synthetic logits, seeds 1-{len(nulls)}): records flagged in "
                  f"{sum(c > 0 for c in nulls)} of {len(nulls)} audits (counts: {nulls})."]  # fmt: skip
    lines += ["", "Records flagged per attack: results.json `by_attack`."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", help="dataset:seed,seed,...")
    ap.add_argument("--null", type=int, default=0, help="no-leak audits to run")
    ap.add_argument("--where", type=Path, default=None, help="the audits' folder (default: a new temporary one)")
    ap.add_argument(
        "--append", action="store_true", help="add to the committed results (same data set and seed: replaced)"
    )
    args = ap.parse_args()
    where = args.where or Path(tempfile.mkdtemp())
    cases = [(ds, int(s)) for case in args.cases for ds, seeds in [case.split(":")] for s in seeds.split(",")]
    runs = [audit(ds, s, where) for ds, s in cases]
    nulls = [null_audit(s, where) for s in range(1, args.null + 1)]
    if args.append and (RESULTS / "records_at_risk.json").exists():
        old = json.loads((RESULTS / "records_at_risk.json").read_text())
        done = {(r["dataset"], r["seed"]) for r in runs}
        runs = [r for r in old["runs"] if (r["dataset"], r["seed"]) not in done] + runs
        nulls = nulls or old["null_counts"]
    env = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared, loaded)",
           "python": platform.python_version()}  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "records_at_risk.json").write_text(json.dumps({"runs": runs, "null_counts": nulls, **env}, indent=1))
    (RESULTS / "records_at_risk.md").write_text(markdown(runs, nulls, env))
    print(markdown(runs, nulls, env))


if __name__ == "__main__":
    main()
