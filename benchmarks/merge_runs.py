"""Merge per-data-set runs of one suite into benchmarks/results/<suite>.{json,md}.

On 2 cores a long suite runs fastest as two single-threaded processes, each on some of its data sets:

    OMP_NUM_THREADS=1 miaudit bench frontier -d location -d digits --out /tmp/part1 &
    OMP_NUM_THREADS=1 miaudit bench frontier -d cifar10 --out /tmp/part2 &
    wait; python benchmarks/merge_runs.py /tmp/part1/frontier.json /tmp/part2/frontier.json

The data sets keep the suite's order; wall time is the longest part's (they ran at once).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from miaudit.bench import run as bench


def merge(paths: list[str], out: Path = Path("benchmarks/results")) -> dict:
    parts = [json.loads(Path(p).read_text()) for p in paths]
    suite = parts[0]["suite"]
    if any(p["suite"] != suite for p in parts):
        raise SystemExit(f"merge_runs: parts of different suites: {sorted({p['suite'] for p in parts})}")
    merged = dict(parts[0])
    found = {k: v for p in parts for k, v in p["datasets"].items()}
    merged["datasets"] = {d: found[d] for d in bench.SUITES[suite].datasets if d in found}
    merged["wall_seconds"] = max(p["wall_seconds"] for p in parts)
    merged["note"] = f"{len(parts)} per-data-set processes run at once, merged by benchmarks/merge_runs.py"
    (out / f"{suite}.json").write_text(json.dumps(merged, indent=1))
    (out / f"{suite}.md").write_text(bench.markdown(merged))
    print(f"wrote {out}/{suite}.json and .md: {', '.join(merged['datasets'])}")
    return merged


if __name__ == "__main__":
    merge(sys.argv[1:])
