"""The benchmark's tables (results.md) from run.py's JSON: per data set and method, over seeds.

python benchmarks/unlearning/table.py [--results benchmarks/unlearning/results]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np


def _auc(rows: list[dict], key: str) -> str:
    v = np.array([r[key] for r in rows], dtype=float)  # (seeds, 3): value, low, high
    sd = v[:, 0].std(ddof=1) if len(v) > 1 else 0.0
    return f"{v[:, 0].mean():.2f} ± {sd:.2f} [{v[:, 1].mean():.2f}, {v[:, 2].mean():.2f}]"


def _mean(rows: list[dict], key: str, pct: bool = False, digits: int = 2) -> str:
    v = [r[key] for r in rows if r[key] is not None]
    if not v:
        return "n/a"
    return f"{100 * np.mean(v):.0f}%" if pct else f"{np.mean(v):.{digits}f}"


def main_table(rows: list[dict]) -> list[str]:
    out = [
        "| data set | method | verdicts (seeds) | records named: remembered / over | per-example AUC | population AUC "
        "| TPR@1% before → after (retrained) | test acc: unlearned / retrained | retained newly exposed (retrained) "
        "| models trained | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"])].append(r)
    for (ds, method), g in groups.items():
        verdicts = ", ".join(f"{n} {v}" for v, n in Counter(r["verdict"] for r in g).most_common())
        named = f"{_mean(g, 'remembered', digits=0)} / {_mean(g, 'over_forgotten', digits=0)}"
        out.append(
            f"| {ds} | {method} | {verdicts} | {named} "
            f"| {_auc(g, 'per_example_auc')} | {_auc(g, 'population_auc')} "
            f"| {_mean(g, 'tpr_before', True)} → {_mean(g, 'tpr_after', True)} ({_mean(g, 'tpr_retrained', True)}) "
            f"| {_mean(g, 'test_acc', digits=3)} / {_mean(g, 'test_acc_retrained', digits=3)} "
            f"| {_mean(g, 'exposure_rose', digits=1)} ({_mean(g, 'exposure_rose_retrained', digits=1)}) "
            f"| {sum(r['models_trained'] for r in g)} | {_mean(g, 'seconds', digits=0)} |"
        )
    return out


def validity_table(rows: list[dict]) -> list[str]:
    out = [
        "| data set | seeds | verified | not_forgotten | over_forgotten | p-values ≤ 0.05 (records / models) "
        "| per-example AUC mean [min, max] |",
        "|---|---|---|---|---|---|---|",
    ]
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["dataset"]].append(r)
    for ds, g in by.items():
        c = Counter(r["verdict"] for r in g)
        auc = [r["per_example_auc"][0] for r in g]
        out.append(
            f"| {ds} | {len(g)} | {c['verified']} | {c['not_forgotten']} | {c['over_forgotten']} "
            f"| {sum(r['p_records'] <= 0.05 for r in g)} / {sum(r['p_models'] <= 0.05 for r in g)} "
            f"| {np.mean(auc):.3f} [{min(auc):.3f}, {max(auc):.3f}] |"
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    a = ap.parse_args()
    lines = ["# Unlearning verification: results", ""]
    for f in sorted(a.results.glob("results-*.json")):
        lines += [f"## Methods x data sets, seeds 3-5 ({f.name})", "", *main_table(json.loads(f.read_text())), ""]
    for f in sorted(a.results.glob("validity-*.json")):
        rows = [r for r in json.loads(f.read_text()) if r.get("validity")]
        lines += [f"## Exact retraining, validity ({f.name})", "", *validity_table(rows), ""]
    (a.results / "results.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
