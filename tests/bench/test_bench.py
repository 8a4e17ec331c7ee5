"""The benchmark suite cannot rot: the smoke suite runs every Table 1 row end to end."""

from __future__ import annotations

import json

import pytest

from miaudit_bench import run as bench


@pytest.mark.slow
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
    """Reporting seeds 3-5 (benchmarks/frontier/frontier_protocol.md); candidates at every budget; the ceiling."""
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


def test_frontier2_suite_definition():
    """Protocol amendment 2: the first round's configurations with 8 references, seeds 3-5, the candidates and
    the first round's best at K = 1, 2, 4, 8 on every data set."""
    suite, first = bench.SUITES["frontier2"], bench.SUITES["frontier"]
    assert suite.seeds == (3, 4, 5)
    for label in ("location", "digits", "cifar10", "ag_news"):
        config = suite.datasets[label]
        assert config == {**first.datasets[label], "references": 8}
        rows = {(r["name"], r["references"]) for r in suite.rows(config["references"])}
        assert {(n, k) for n in ("pair-lr", "pair-logit", "bavaria-n", "rmia") for k in (1, 2, 4, 8)} <= rows


def test_merge_pools_single_seed_parts_by_hand():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "frontier"))
    from merge_runs import pool_seeds

    def part(seed: int, tpr: float, levels: list[str]) -> dict:
        row = {
            "name": "x",
            "label": "x (n=1)",
            "references": 1,
            "unreliable_fpr_levels": levels,
            "tpr@0.01": {"mean": tpr, "sd": 0.0},
            "tpr@0.01_ci": [tpr - 0.05, tpr + 0.05],
        }
        return {"n_members": 10, "seeds": [seed], "target_test_accuracy": {"mean": tpr, "sd": 0.0}, "rows": [row]}

    pooled = pool_seeds([part(4, 0.3, []), part(3, 0.1, ["0.001"])])
    row = pooled["rows"][0]
    assert pooled["seeds"] == [3, 4] and pooled["n_members"] == 10
    assert row["tpr@0.01"]["mean"] == 0.2 and abs(row["tpr@0.01"]["sd"] - 0.2 / 2**0.5) < 1e-12
    assert row["tpr@0.01_ci"] == [0.15, 0.25] and row["unreliable_fpr_levels"] == ["0.001"]
    assert pooled["target_test_accuracy"]["mean"] == 0.2
