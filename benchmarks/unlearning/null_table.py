"""results/null.md from null_rates.py's before and after JSON: per data set and unlearned model, the audits, the
verdicts other than verified (any alarm) and each test's alarms, with 95% Clopper-Pearson intervals; the records
named as remembered and the share of them that truly stayed (the list's precision).

    python benchmarks/unlearning/null_table.py benchmarks/unlearning/results/null-before.json \
        benchmarks/unlearning/results/null-after.json > benchmarks/unlearning/results/null.md
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from miaudit.stats.metrics import clopper_pearson

LEVEL = 0.05
EXACT = ("retrain", "seed", "epochs", "lr")  # exact retraining: every verdict but verified is a false alarm


def rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} = {100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "-"


def precision(right: int | None, named: int) -> str:
    """The names' precision: those that truly stayed (none on exact retraining, all on noop, the kept half on the
    half-forgotten model) among the names, with its interval ("-" when the run did not record it)."""
    if right is None:
        return "-"
    return rate(right, named) if named else "0 named"


def main() -> None:
    runs = [json.loads(Path(p).read_text()) for p in sys.argv[1:]]
    print(
        "| code | data set | unlearned model | audits (seeds) | any alarm | record test <= 2.5% | model test <= 2.5% "
        "| no claim | verdicts | records named (audits naming any) | named that truly stayed |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        rows = run["rows"]
        groups = sorted({(r["dataset"], r["unlearned"]) for r in rows}, key=lambda g: (g[0], g[1] not in EXACT, g[1]))
        pooled = [(d, "exact, all four") for d in [*sorted({r["dataset"] for r in rows}), "all"]]
        for ds, name in [*groups, *pooled]:
            sel = [r for r in rows if ds in (r["dataset"], "all") and (r["unlearned"] == name or
                   (name == "exact, all four" and r["unlearned"] in EXACT))]  # fmt: skip
            n = len(sel)
            seeds = len({(r["dataset"], r["seed"]) for r in sel})
            alarms = sum(r["verdict"] != "verified" for r in sel)
            rec = sum(r["p_records"] <= LEVEL / 2 for r in sel)
            mod = sum(r["p_models"] <= LEVEL / 2 for r in sel)
            noc = sum(r["verdict"] == "no_claim" for r in sel)
            verdicts = ", ".join(f"{v} {c}" for v, c in sorted(Counter(r["verdict"] for r in sel).items()))
            named = sum(r["remembered"] for r in sel)
            naming = sum(r["remembered"] > 0 for r in sel)
            right = (
                sum(r.get("remembered_right", 0) for r in sel) if all("remembered_right" in r for r in sel) else None
            )
            print(
                f"| {run['tag']} | {ds} | {name} | {n} ({seeds}) | {rate(alarms, n)} | {rate(rec, n)} | "
                f"{rate(mod, n)} | {noc} | {verdicts} | {named} ({naming}) | {precision(right, named)} |"
            )


if __name__ == "__main__":
    main()
