"""Merge runs of one suite into benchmarks/results/<suite>.{json,md}.

On 2 cores a long suite runs fastest as two single-threaded processes, each on some of its data sets:

    OMP_NUM_THREADS=1 miaudit bench frontier -d location -d digits --out /tmp/part1 &
    OMP_NUM_THREADS=1 miaudit bench frontier -d cifar10 --out /tmp/part2 &
    wait; python benchmarks/frontier/merge_runs.py /tmp/part1/frontier.json /tmp/part2/frontier.json

Parts may also split a data set by seed (one process per data set and seed, as
benchmarks/frontier/frontier2_device.sh runs them): the seeds of a data set are then pooled as
``bench.aggregate`` pools them, from each part's per-seed numbers (each such part holds one seed).
The data sets keep the suite's order; wall time is the longest part's (they ran at once).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from miaudit_bench import run as bench


def _pool(values: list[Any], key: str) -> Any:
    """One field over single-seed parts: a {mean, sd} statistic from the seeds' values, an interval
    (``*_ci``) averaged, a list of flagged levels united, anything else as the first part has it."""
    first = values[0]
    if isinstance(first, dict) and set(first) == {"mean", "sd"}:
        a = np.asarray([v["mean"] for v in values], dtype=np.float64)
        return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0}
    if key.endswith("_ci"):
        return np.mean(values, axis=0).tolist()
    if key == "unreliable_fpr_levels":
        return sorted(set().union(*values))
    return first


def pool_seeds(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One data set's entry from single-seed parts (rows matched by label)."""
    if len(parts) == 1:
        return parts[0]
    if any(len(p["seeds"]) != 1 for p in parts):
        raise SystemExit("merge_runs: a data set split across parts must have one seed per part")
    parts = sorted(parts, key=lambda p: p["seeds"][0])
    pooled = {k: _pool([p[k] for p in parts], k) for k in parts[0] if k not in ("rows", "seeds")}
    pooled["seeds"] = [p["seeds"][0] for p in parts]
    rows = []
    for row in parts[0]["rows"]:
        same = [next(r for r in p["rows"] if r["label"] == row["label"]) for p in parts]
        rows.append({k: _pool([r[k] for r in same], k) for k in row})
    pooled["rows"] = rows
    return pooled


def merge(paths: list[str], out: Path = Path("benchmarks/results")) -> dict:
    parts = [json.loads(Path(p).read_text()) for p in paths]
    suite = parts[0]["suite"]
    if any(p["suite"] != suite for p in parts):
        raise SystemExit(f"merge_runs: parts of different suites: {sorted({p['suite'] for p in parts})}")
    merged = dict(parts[0])
    found: dict[str, list[dict[str, Any]]] = {}
    for p in parts:
        for label, entry in p["datasets"].items():
            found.setdefault(label, []).append(entry)
    merged["datasets"] = {d: pool_seeds(found[d]) for d in bench.SUITES[suite].datasets if d in found}
    merged["wall_seconds"] = max(p["wall_seconds"] for p in parts)
    merged["note"] = (
        f"{len(parts)} processes run at once (data sets or seeds), merged by benchmarks/frontier/merge_runs.py"
    )
    (out / f"{suite}.json").write_text(json.dumps(merged, indent=1))
    (out / f"{suite}.md").write_text(bench.markdown(merged))
    print(f"wrote {out}/{suite}.json and .md: {', '.join(merged['datasets'])}")
    return merged


if __name__ == "__main__":
    merge(sys.argv[1:])
