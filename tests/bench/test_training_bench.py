"""``miaudit bench training``: the three ways run on one audit, the table and the JSON hold them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from miaudit_bench import training

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)


def test_training_bench_runs_every_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = {"dataset": {"name": "digits", "subset": 300}, "model": "mlp", "train": {"epochs": 2, "batch_size": 32}}
    monkeypatch.setattr(training, "DATASETS", {"tiny": tiny})
    monkeypatch.setattr(training, "QUICK_GRID", {"tiny": (2,)})
    res = training.run_suite(tmp_path, {"cores": 2}, quick=True, log=lambda _: None)
    [cell] = res["cells"]
    assert list(cell["runs"]) == ["one at a time", "auto", "stacked"]
    assert [r["models_at_once"] for r in cell["runs"].values()] == [1, "auto", 2]
    assert set(cell["speedup"]) == {"auto", "stacked"} and cell["speedup"]["auto"]["training_wall"] > 0
    for run in cell["runs"].values():
        assert run["training_wall_s"] > 0 and set(run["tpr_at_1pct"]) == set(training.ATTACKS)
    assert json.loads((tmp_path / "training-quick.json").read_text())["cells"][0]["references"] == 2
    table = (tmp_path / "training-quick.md").read_text()
    assert "| tiny | 2 | 0 | auto |" in table and "lira TPR@1%" in table
