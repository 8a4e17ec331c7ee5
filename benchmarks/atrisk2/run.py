"""Records at risk on the reporting runs of benchmarks/atrisk2/protocol.md (issue 45): the table.

Per (data set, seed): ``miaudit run`` with ``model`` as named, ``references: 4``, default attacks and training,
into ``--work`` (a finished run there is reused); from its results.json and scores.csv: the records flagged (the
column at_risk), the non-members among them (the column member), the realized FDP with its Clopper-Pearson 95%
interval, the attack and the procedure that named them, the queries the screen kept, the verdict's TPR at 1% FPR,
and ``why_none`` where nothing is flagged. Then the null: ``miaudit score`` on the atrisk check's synthetic logits
(members and non-members exchangeable), counting the audits that flag any record.

Run (models from the shared cache):
  MIAUDIT_DATA_DIR=... python benchmarks/atrisk2/run.py location:5,6,7,8,9 ag_news:5 cifar-gray:5 --null 10 \
      --work /tmp/atrisk2
writes benchmarks/atrisk2/results.json and results.md (``--append`` adds runs to them).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from scipy.stats import beta

HERE = Path(__file__).parent
K = 4
MODELS = {"location": "mlp", "ag_news": "mlp", "digits": "mlp", "cifar-gray": "mlp", "cifar10": "cnn"}


def clopper_pearson(k: int, n: int) -> list[float]:
    if n == 0:
        return [0.0, 1.0]
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return [lo, hi]


def dataset_line(name: str, work: Path) -> str:
    if name == "cifar-gray":  # the grayscale CIFAR-10 subset (benchmarks/cifar_gray.py), written once
        path = work / "cifar10-gray-6000.npz"
        if not path.exists():
            subprocess.run([sys.executable, str(HERE.parent / "cifar_gray.py"), str(work)], check=True)
        return f"dataset: {{path: {path}}}"
    if name == "cifar10":
        return "dataset: {name: cifar10, subset: 5000}"
    return f"dataset: {name}"


def audit(name: str, seed: int, work: Path) -> dict:
    cfg = work / f"{name}-{seed}.yaml"
    cfg.write_text(f"{dataset_line(name, work)}\nmodel: {MODELS[name]}\nseed: {seed}\nreferences: {K}\n")
    out = work / f"{name}-{seed}"
    seconds = None
    if not (out / "results.json").exists():
        start = time.perf_counter()
        subprocess.run(["miaudit", "run", str(cfg), "--out", str(out)], check=True, capture_output=True)
        seconds = time.perf_counter() - start
    r = json.loads((out / "results.json").read_text())
    risk = r["records_at_risk"]
    with open(out / "scores.csv") as f:
        rows = list(csv.DictReader(f))
    flagged = [x for x in rows if x.get("at_risk") == "1"]
    false = sum(x["member"] == "0" for x in flagged)
    v = r.get("verdict") or {}
    tpr = v.get("tpr") if v.get("fpr_level") == 0.01 else None
    return {
        "dataset": name,
        "seed": seed,
        "queries": len(rows),
        "attack": risk.get("attack"),
        "attack_rule": risk.get("attack_rule"),
        "procedure": risk.get("procedure"),
        "screened_queries": (risk.get("screen") or {}).get("queries"),
        "screened_calibration": (risk.get("screen") or {}).get("calibration_records"),
        "flagged": len(flagged),
        "count_in_results": risk.get("count"),
        "non_members": false,
        "realized_fdp": false / len(flagged) if flagged else 0.0,
        "realized_fdp_ci": clopper_pearson(false, len(flagged)),
        "verdict_attack": v.get("attack"),
        "verdict_tpr_at_1pct": tpr,
        "leaks": v.get("leaks"),
        "why_none": risk.get("why_none"),
        "by_attack": {label: a["count"] for label, a in risk.get("by_attack", {}).items()},
        "seconds": seconds,
    }


def null_generator() -> str:
    """The synthetic exchangeable logits of ../shared/checks/atrisk (its generator, read from the check)."""
    check = Path(os.environ.get("ATRISK_CHECK", HERE.parents[2] / "shared" / "checks" / "atrisk"))
    if not check.exists():
        check = Path("/work/shared/checks/atrisk")
    text = check.read_text()
    start = text.index("import sys\nimport numpy as np\nd, seed")
    return text[start : text.index("PY\n", start)]


def null_counts(n: int, work: Path) -> list[int]:
    gen = work / "null_gen.py"
    gen.write_text(null_generator())
    counts = []
    for s in range(1, n + 1):
        d = work / f"null{s}"
        d.mkdir(exist_ok=True)
        subprocess.run([sys.executable, str(gen), str(d), str(s)], check=True)
        cfg = work / f"null{s}.yaml"
        cfg.write_text(f"outputs: {{layout: npz, path: {d}}}\nname: null{s}\nmode: offline\n"
                       "attacks: [{name: lira}, {name: attack-r}]\n")  # fmt: skip
        out = work / f"null{s}-out"
        subprocess.run(["miaudit", "score", str(cfg), "--out", str(out), "-f"], check=True, capture_output=True)
        counts.append(int(json.loads((out / "results.json").read_text())["records_at_risk"]["count"]))
    return counts


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def table(rows: list[dict], null: list[int] | None) -> str:
    lines = [
        "# Records at risk at FDR 5% on the reporting runs (benchmarks/atrisk2/protocol.md)",
        "",
        f"K = {K} references, default attacks and training; {platform.machine()}, 2 shared CPU cores. Flagged: the "
        "column at_risk of scores.csv; realized FDP: non-members among them (member column), 95% Clopper-Pearson "
        "interval. Procedure: conformal p-values within the references-only screen, Storey's adaptive BH; attack: "
        "auto's first choice (no membership read).",
        "",
        "| data set | seed | verdict TPR@1% | attack | screened queries / calibration | flagged | non-members "
        "| realized FDP [95% CP] | why none |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lo, hi = r["realized_fdp_ci"]
        fdp = f"{pct(r['realized_fdp'])} [{pct(lo)}, {pct(hi)}]" if r["flagged"] else "-"
        lines.append(
            f"| {r['dataset']} | {r['seed']} | {pct(r['verdict_tpr_at_1pct'])} | {r['attack']} | "
            f"{r['screened_queries']} / {r['screened_calibration']} | {r['flagged']} | {r['non_members']} | {fdp} | "
            f"{r['why_none'] or ''} |"
        )
    named = [r for r in rows if r["flagged"]]
    if named:
        mean = sum(r["realized_fdp"] for r in named) / len(named)
        worst = max(r["realized_fdp"] for r in named)
        lines += ["", f"Runs that named records: {len(named)} of {len(rows)}; mean realized FDP {pct(mean)}, "
                  f"highest {pct(worst)}."]  # fmt: skip
    loc = [r["flagged"] for r in rows if r["dataset"] == "location"]
    if loc:
        lines.append(f"Location: {sum(loc) / len(loc):.1f} records named on average ({', '.join(map(str, loc))}).")
    if null is not None:
        lines += ["", f"No leak (the atrisk check's exchangeable synthetic logits, seeds 1-{len(null)}): records "
                  f"flagged in {sum(c > 0 for c in null)} of {len(null)} audits (counts {null})."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="*", help="DATASET:SEED,SEED,...")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--null", type=int, default=0)
    ap.add_argument("--append", action="store_true")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    path = HERE / "results.json"
    old = json.loads(path.read_text()) if a.append and path.exists() else {"runs": [], "null": None}
    rows = old["runs"]
    for spec in a.runs:
        name, seeds = spec.split(":")
        for s in seeds.split(","):
            row = audit(name, int(s), a.work)
            rows = [r for r in rows if (r["dataset"], r["seed"]) != (name, int(s))] + [row]
            print(json.dumps(row), flush=True)
            path.write_text(json.dumps({"runs": rows, "null": old["null"]}, indent=1))
    null = null_counts(a.null, a.work) if a.null else old["null"]
    path.write_text(json.dumps({"runs": rows, "null": null}, indent=1))
    (HERE / "results.md").write_text(table(rows, null))
    print(table(rows, null))


if __name__ == "__main__":
    main()
