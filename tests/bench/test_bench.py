"""The benchmark suite cannot rot: the smoke suite runs every Table 1 row end to end."""

from __future__ import annotations

import json

from miaudit.bench import run as bench


def test_smoke_suite_runs_and_aggregates(tmp_path):
    res = bench.run_suite("smoke", out_dir=tmp_path, log=lambda _: None)
    saved = json.loads((tmp_path / "smoke.json").read_text())
    assert saved["datasets"].keys() == {"digits"}
    d = saved["datasets"]["digits"]
    assert d["seeds"] == [0, 1]
    names = {r["name"] for r in d["rows"]}
    # base1, not base4: BASE2-4 run online only, and the suites are offline
    assert {"attack-p", "bmia", "mr-bmia", "lira", "rmia", "attack-r", "qmia", "gls", "bavaria-n", "base1"} <= names
    for row in d["rows"]:
        assert 0.0 <= row["auc"]["mean"] <= 1.0 and row["auc"]["sd"] >= 0.0
        assert row["auc_ci"][0] <= row["auc_ci"][1] and len(row["tpr@0.01_ci"]) == 2
        assert set(row) >= {"tpr@0.001", "tpr@0.01", "tpr@0.05", "reference_training_s", "attack_s"}
    bmia = next(r for r in d["rows"] if r["name"] == "bmia")
    assert "fpr_calibrated@0.05" in bmia and bmia["attack_over_one_reference"]["mean"] > 0
    md = (tmp_path / "smoke.md").read_text()
    assert "| bmia (n=1) | 1 |" in md and "± " in md and " [" in md
    assert res["wall_seconds"] > 0


def test_table1_rows_respect_budget():
    rows = bench.table1_rows(4)
    assert max(r.get("references", 0) for r in rows) == 4
    assert {"name": "lira", "references": 8} not in rows
    assert {"name": "bmia", "references": 1} in rows


def test_frontier_suite_definition():
    """Reporting seeds 3-5 (benchmarks/frontier_protocol.md); candidates at every budget; the online ceiling."""
    suite = bench.SUITES["frontier"]
    assert suite.seeds == (3, 4, 5)
    # amendment 1 (compute): the online ceiling on seed 3 only; every offline data set on all three
    assert set(suite.seeds_for) == {"location-online", "digits-online", "cifar10-online"}
    assert {"location", "digits", "cifar10", "ag_news"} <= set(suite.datasets)
    for label in ("location", "digits", "cifar10", "ag_news"):
        rows = suite.rows_for.get(label, suite.rows)(suite.datasets[label]["references"])
        budgets = (1, 2, 4, 8) if label == "cifar10" else (1, 2, 4, 8, 16)
        for name in bench.FRONTIER_CANDIDATES:
            assert {(name, k) for k in budgets} <= {(r["name"], r["references"]) for r in rows}
    ceiling = suite.rows_for["location-online"](suite.datasets["location-online"]["references"])
    assert suite.datasets["location-online"]["mode"] == "online"
    assert {"name": "lira", "references": 16} in ceiling and {"name": "lira", "references": 64} in ceiling
