"""The data sets issue 38 adds to the leave-one-data-set-out table, from ``miaudit run`` results.

    python benchmarks/lodo/lodo_runs.py NAME DESCRIPTION RUN_DIR...   # merges into lodo_runs.json beside it

Each RUN_DIR is a ``miaudit run --out`` directory of one seed (its results.json); rows are pooled over them
as ``benchmarks/frontier/merge_runs.py`` pools the frontier's: per attack and K the mean and sd over seeds of the
TPR at each FPR level and the mean per-seed 95% interval, in frontier2.json's row format.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

OUT = Path(__file__).parent / "lodo_runs.json"


def _stat(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}


def pooled(runs: list[dict]) -> dict:
    by: dict[tuple[str, int], list[dict]] = {}
    for r in runs:
        for a in r["attacks"]:
            if "tpr_at_fpr" in a:
                by.setdefault((a["name"], a["references"]), []).append(a)
    rows = []
    for (name, k), rs in by.items():
        row: dict = {"name": name, "label": f"{name} (n={k})", "references": k, "auc": _stat([a["auc"] for a in rs])}
        for level in ("0.001", "0.01", "0.05"):
            row[f"tpr@{level}"] = _stat([a["tpr_at_fpr"][level] for a in rs])
            cis = [a["tpr_at_fpr_ci"][level] for a in rs]
            row[f"tpr@{level}_ci"] = [statistics.fmean(c[0] for c in cis), statistics.fmean(c[1] for c in cis)]
        rows.append(row)
    return {
        "n_records": runs[0].get("n_records"),
        "n_members": runs[0]["n_members"],
        "seeds": [r["seed"] for r in runs],
        "target_test_accuracy": _stat([r["target"]["test_accuracy"] for r in runs]),
        "rows": rows,
    }


def main(name: str, description: str, dirs: list[str]) -> None:
    runs = [json.loads((Path(d) / "results.json").read_text()) for d in dirs]
    data = json.loads(OUT.read_text()) if OUT.exists() else {"note": __doc__.split("\n")[0], "datasets": {}}
    data["datasets"][name] = {"description": description, **pooled(runs)}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {name}, seeds {[r['seed'] for r in runs]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
