"""Merge per-data-set runs of the `seeds` suite into benchmarks/results/seeds.{json,md}, and print the
claims-table rows for it (appended by hand to results/claims.md: claims.py does not read seeds.json).

    for d in cifar10-posteriors location-online cifar10-online cifar10-shifted-population cifar10-ood-nonmembers; do
        miaudit bench seeds -d $d --out /tmp/seeds-$d &    # one process per data set (what was run here)
    done; wait
    python benchmarks/seeds_merge.py /tmp/seeds-*/seeds.json

(`miaudit bench seeds` runs the same data sets one after the other and writes the same file.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from miaudit import bench


def main(paths: list[str]) -> None:
    parts = [json.loads(Path(p).read_text()) for p in paths]
    merged = dict(parts[0])
    merged["datasets"] = {k: v for p in parts for k, v in p["datasets"].items()}
    merged["wall_seconds"] = sum(p["wall_seconds"] for p in parts)
    merged["note"] = (
        "per-data-set runs merged by benchmarks/seeds_merge.py, run concurrently on 2 shared CPU cores "
        "(seconds are inflated); small subsets and few epochs (see benchmarks/README.md)"
    )
    order = [d for d in bench.SUITES["seeds"].datasets if d in merged["datasets"]]
    merged["datasets"] = {d: merged["datasets"][d] for d in order}
    out = Path("benchmarks/results")
    (out / "seeds.json").write_text(json.dumps(merged, indent=1))
    md = bench.markdown(merged)
    post = merged["datasets"].get("cifar10-posteriors")
    if post:
        lines = ["", "## Table 5 analogue: TPR (%) at 0.1 / 0.5 / 1 / 5 % FPR per posterior (cifar10-posteriors)", ""]
        lines += ["| posterior | TPR@0.1% | TPR@0.5% | TPR@1% | TPR@5% | AUC |", "|---|---|---|---|---|---|"]
        for r in post["rows"]:
            cells = [f"{100 * r[f'tpr@{k}']['mean']:.2f} ± {100 * r[f'tpr@{k}']['sd']:.2f}" for k in bench_levels(r)]
            lines.append(f"| {r['label']} | {' | '.join(cells)} | {r['auc']['mean']:.3f} |")
        md += "\n".join(lines) + "\n"
    (out / "seeds.md").write_text(md)
    print(f"wrote {out}/seeds.json and seeds.md: {', '.join(order)}")


def bench_levels(row: dict) -> list[str]:
    return [k for k in ("0.001", "0.005", "0.01", "0.05") if f"tpr@{k}" in row]


if __name__ == "__main__":
    main(sys.argv[1:])
