"""The development comparison of the protocol's 2026-12-07 amendment: location seeds 0-2, online LiRA 16, `steps`
and `distill` at B = 1 and 2, with the committed cells of budget_bench.py and tried_designs.py.

    PYTHONPATH=src MIAUDIT_CACHE_DIR=... python benchmarks/budget/development/dev_seeds.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from budget_bench import budget_cell, ceiling_cell, tried_cell


def show(tag: str, seed: int, cell: dict) -> None:
    tprs = {k: round(100 * v["tpr_0.01"], 1) for k, v in cell["attacks"].items()}
    print(tag, seed, cell["auto_first"], tprs, flush=True)


for seed in (0, 1, 2):
    c = ceiling_cell("location", seed, 16)
    print("ceil", seed, c["attacks"]["lira"]["tpr_0.01"], flush=True)
    show("steps", seed, budget_cell("location", seed, "steps", 1.0))
    show("distill", seed, tried_cell("location", seed, "distill", 1.0))
    show("distill B2", seed, tried_cell("location", seed, "distill", 2.0))
