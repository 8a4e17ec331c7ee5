"""The LM benchmark suite: its rows by reference budget, and the blind baseline aggregated as a row."""

from __future__ import annotations

import math

import pytest

from miaudit.results import AuditReport, BlindBaseline
from miaudit_bench import lm as lm_bench
from miaudit_bench.run import aggregate, blind_row
from miaudit_bench.suites import SUITES


def test_rows_cover_k_0_1_and_4():
    by_k: dict[int, set[str]] = {}
    for row in lm_bench.rows(4):
        by_k.setdefault(row.get("references", 0), set()).add(row["name"])
    assert by_k == {
        0: {"attack-p", "zlib", "min-k", "min-k-pp"},
        1: {"bmia", "lira", "rmia"},
        4: {"lira", "rmia", "mr-bmia"},
    }
    assert SUITES["lm"].rows is lm_bench.rows and set(SUITES["lm"].datasets) == set(lm_bench.DATASETS)


def _entry(auc: float) -> dict:
    return {
        "auc": auc,
        "auc_ci": [auc - 0.05, auc + 0.05],
        "tpr_at_fpr": {"0.01": 0.02},
        "tpr_at_fpr_ci": {"0.01": [0.0, 0.05]},
        "unreliable_fpr_levels": [],
    }


def _blind(auc: float) -> BlindBaseline:
    return BlindBaseline.model_validate({"method": "TF-IDF + LR", **_entry(auc)})


def test_blind_baseline_row_is_the_mean_over_seeds():
    row = blind_row([_blind(0.5), _blind(0.6)])
    assert math.isclose(row["auc"]["mean"], 0.55) and math.isclose(row["auc"]["sd"], math.sqrt(0.005))
    assert row["references"] == 0 and math.isnan(row["attack_s"]["mean"])
    assert row["auc_ci"] == pytest.approx([0.5, 0.6])


def test_aggregate_appends_the_blind_baseline():
    attack = {**_entry(0.7), "name": "zlib", "label": "zlib", "kind": "test", "references": 0, "params": {},
              "p_values": None, "seconds": {"reference_training": 0.0, "attack": 1.0}}  # fmt: skip
    run = {
        "miaudit_version": "0", "created": "now", "dataset": "ag_news", "data_fingerprint": "0",
        "n_records": 10, "n_members": 2, "n_nonmembers": 2, "model": "gpt-tiny", "reference_model": None,
        "config": {}, "seed": 0, "reference_models": [], "calibration": {"calibrated": False, "records": 0},
        "target": {"train_accuracy": 0.0, "test_accuracy": 0.0, "train_perplexity": 50.0, "test_perplexity": 80.0,
                   "source": "trained"},
        "attacks": [attack], "verdict": None, "blind_baseline": {"method": "TF-IDF + LR", **_entry(0.5)},
        "environment": {"miaudit": "0", "python": "3", "platform": "x", "torch_threads": 1, "device": "cpu"},
    }  # fmt: skip
    out = aggregate([AuditReport.model_validate(run), AuditReport.model_validate({**run, "seed": 1})])
    assert [r["name"] for r in out["rows"]] == ["zlib", "blind-baseline"]
    assert out["target_test_perplexity"]["mean"] == 80.0
