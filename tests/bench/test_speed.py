"""``miaudit bench speed``: its synthetic store, its numpy floor (the same formulas as miaudit's attacks), its plan
and its growth fit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

import miaudit
from miaudit_bench import speed
from miaudit_bench.speed_table import markdown


def floor_module():
    """speed_contenders.py as the bench runs it: a script by path (it imports nothing from miaudit)."""
    spec = importlib.util.spec_from_file_location("speed_contenders", speed.CONTENDERS_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("speed") / "store"
    speed.write_store(folder, k=8, n=600, c=5)
    return folder


def test_store_is_in_the_npz_layout_with_balanced_references(store: Path) -> None:
    keep = np.load(store / "reference_keep.npy")
    assert keep.shape == (8, 600) and (keep.sum(axis=0) == 4).all()  # every record IN for half the references
    members, nonmembers = np.load(store / "members.npy"), np.load(store / "nonmembers.npy")
    assert len(np.intersect1d(members, nonmembers)) == 0 and len(members) + len(nonmembers) == 300
    assert np.load(store / "reference_logits.npy").dtype == np.float32


@pytest.mark.parametrize(
    ("task", "mode", "attack"),
    [("lira-offline", "offline", "lira"), ("lira-online", "online", "lira"), ("rmia-online", "online", "rmia")],
)
def test_numpy_floor_ranks_as_miaudit(store: Path, task: str, mode: str, attack: str) -> None:
    floor = floor_module()
    data = floor.load(str(store))
    scores = (floor.numpy_lira if attack == "lira" else floor.numpy_rmia)(data, mode == "online")
    cfg = {"outputs": {"layout": "npz", "path": str(store)}, "mode": mode, "calibration": None, "attacks": [attack]}
    table = miaudit.score(cfg).scores
    by_record = dict(zip(table["record"], table[next(c for c in table.columns if c.endswith(".score"))]))
    ours = np.array([by_record[r] for r in data["queries"]])
    assert spearmanr(scores, ours)[0] >= 0.9999


def test_plan_runs_every_task_on_the_headline_cell_first_and_drops_oversized_cells() -> None:
    todo, dropped = speed.plan(speed.GRID)
    assert todo[0] == ((64, 50_000, 100), speed.TASKS)
    assert dropped == [(64, 200_000, 100)]  # 5.1 GB of float32 logits
    assert all(tasks == ("lira-offline",) for _, tasks in todo[1:]) and len(todo) == 17


def test_growth_exponents_recover_a_power_law() -> None:
    rows = [
        {"K": k, "N": n, "C": c, "task": "t", "contender": "x", "wall_s": 0.5 * k * n**0.5 * c**0, "cpu_s": 1.0}
        | {"rss_gb": 0.1, "records_per_s": 10.0}
        for k in (1, 4, 16)
        for n in (100, 1000)
        for c in (10, 100)
    ]
    assert speed.growth_exponents(rows) == {"t / x": {"K": 1.0, "N": 0.5, "C": 0.0}}
    results = {
        "command": "miaudit bench speed",
        "hardware": {"cpu": "x", "cores": 2},
        "load_average_at_start": (1, 1, 1),
        "peers": {"sacroml": "installed"},
        "dropped_cells": [],
        "rows": rows,
        "growth_exponents": {},
    }
    assert "| 16 | 1,000 | 100 | t |" in markdown(results)
