"""The Python API end to end: ``miaudit.audit`` on a user's model and arrays, ``miaudit.run`` on a config,
and the example script. (The documented example, once the README's, is docs/own-model.md's: tests/test_docs.py
runs it as written.)"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from _byo import TinyNet, api_sets, fitted_net, tiny_data

import miaudit
from miaudit.experiment.own_model import reinitialised_copy

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def user() -> tuple[TinyNet, np.ndarray, np.ndarray]:
    x, y = tiny_data()
    return fitted_net(x[:40], y[:40], steps=150), x, y


def test_audit_with_members_gives_metrics_table_json_and_report(user, tmp_path: Path) -> None:
    net, x, y = user
    result = miaudit.audit(net, **api_sets(x, y), attacks=["attack-p", "gls"])
    assert set(result.metrics) == {"attack-p", "gls"}
    assert 0.0 <= result.metrics["attack-p"]["auc"] <= 1.0
    table = result.scores
    assert len(table) == 80 and table["risk_rank"].tolist() == list(range(1, 81))
    # every record points back to the array and row it came from
    for row in table.itertuples():
        source_x = {"members": x[:40], "nonmembers": x[40:80]}[row.set]
        assert row.member == (row.set == "members")
        assert row.label == y[:80][row.record] and np.array_equal(x[:80][row.record], source_x[row.position])
    assert {"attack-p_n0.p_value", "attack-p_n0.log_p", "gls_n0.score"} <= set(table.columns)
    as_json = result.to_json()
    assert as_json["membership"] == "known" and as_json["n_members"] == 40 and as_json["model"] == "TinyNet"
    assert as_json["target"]["train_accuracy"] == 1.0  # 150 full-batch steps memorise 40 records
    written = result.report(tmp_path / "audit").dump()
    assert written == json.loads((tmp_path / "audit" / "results.json").read_text()) == json.loads(json.dumps(as_json))
    assert sorted(p.name for p in (tmp_path / "audit").iterdir()) == [
        "at_risk.csv",
        "report.html",
        "report.md",
        "results.json",
        "roc.png",
        "scores.csv",
        "scores.parquet",
    ]


def test_members_are_more_exposed_than_nonmembers(user) -> None:
    """Attack-P on a memorising model: members have higher hinge scores (a sanity check on the wiring)."""
    net, x, y = user
    result = miaudit.audit(net, **api_sets(x, y))
    assert result.metrics["attack-p"]["auc"] > 0.6


def test_queries_of_unknown_membership_give_pvalues_and_ranking_only(user, tmp_path: Path) -> None:
    net, x, y = user
    result = miaudit.audit(net, queries=(x[:30], y[:30]), population=(x[80:], y[80:]), attacks=["attack-p"])
    assert result.metrics == {"attack-p": None}
    table = result.scores
    assert "member" not in table.columns and sorted(table["position"]) == list(range(30))
    assert (table["attack-p_n0.p_value"] > 0).all() and (table["attack-p_n0.p_value"] <= 1).all()
    ranked = -table["attack-p_n0.log_p"].to_numpy()
    assert np.all(np.diff(ranked) <= 0)  # rank 1 = smallest p-value
    results = result.report(tmp_path / "q").dump()
    assert results["membership"] == "unknown" and "no ROC" in results["notes"][0] and results["n_members"] is None
    assert "auc" not in results["attacks"][0] and len(results["attacks"][0]["most_exposed"]) == 10
    assert not (tmp_path / "q" / "roc.png").exists()


def test_tensors_and_torch_datasets_are_accepted(user) -> None:
    net, x, y = user
    as_arrays = miaudit.audit(net, **api_sets(x, y)).scores
    members = torch.utils.data.TensorDataset(torch.from_numpy(x[:40]), torch.from_numpy(y[:40]))
    as_torch = miaudit.audit(
        net,
        members=members,
        nonmembers=(torch.from_numpy(x[40:80]), torch.from_numpy(y[40:80])),
        population=(x[80:], y[80:]),
    ).scores
    assert as_torch.equals(as_arrays)


def test_references_use_the_users_factory_and_training_function(user) -> None:
    net, x, y = user
    calls = []

    def train_fn(model, xs, ys):
        calls.append((type(model).__name__, xs.shape, ys.dtype))

    result = miaudit.audit(
        net, **api_sets(x, y), attacks=["lira"], references=2, model_factory=lambda: TinyNet(), train_fn=train_fn
    )
    # 16 of the 80 population records are held out to calibrate p-values (no validation given);
    # each reference trains on half of the other 64
    assert calls == [("TinyNet", (32, 6), np.dtype("int64"))] * 2
    assert result.to_json()["references"] == 2
    assert result.to_json()["n_validation"] == 16


def test_default_reference_models_are_reinitialised_copies(user) -> None:
    net, _, _ = user
    torch.manual_seed(1)
    fresh = reinitialised_copy(net)
    assert type(fresh) is TinyNet and fresh is not net
    assert not torch.equal(fresh.head.weight, net.head.weight)
    torch.manual_seed(1)
    assert torch.equal(reinitialised_copy(net).head.weight, fresh.head.weight)  # seeded: reproducible


def test_default_references_are_the_fewest_the_attacks_need(user) -> None:
    net, x, y = user
    result = miaudit.audit(
        net,
        **api_sets(x, y),
        attacks=["attack-p", {"name": "lira", "references": 2}],
        train={"epochs": 2, "batch_size": 16},
    )
    assert [r["references"] for r in result.to_json()["attacks"]] == [0, 2]


def test_run_accepts_a_config_dict(tiny_raw: dict) -> None:
    result = miaudit.run({**tiny_raw, "references": 0, "attacks": ["attack-p"]})
    assert result.to_json()["dataset"] == "digits" and set(result.metrics) == {"attack-p"}


def test_example_audits_a_saved_model_with_api_and_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """examples/audit_own_model.py as a user runs it (its CLI step is a real ``miaudit run`` process)."""
    monkeypatch.setattr(sys, "argv", ["audit_own_model.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "examples" / "audit_own_model.py"), run_name="__main__")
    api = json.loads((tmp_path / "api-report" / "results.json").read_text())
    cli = json.loads((tmp_path / "cli-report" / "results.json").read_text())
    assert api["model"] == "Net" and cli["model"] == "audit_own_model:make_net"
    assert (
        [a["name"] for a in api["attacks"]]
        == [a["name"] for a in cli["attacks"]]
        == ["attack-p", "gls", "bmia", "lira"]
    )
    # the same saved weights and the same members: identical accuracies, and GLS (which reads only
    # the target and the queries) gives the identical AUC both ways
    assert {k: api["target"][k] for k in ("train_accuracy", "test_accuracy")} == {
        k: cli["target"][k] for k in ("train_accuracy", "test_accuracy")
    }
    assert api["attacks"][1]["auc"] == pytest.approx(cli["attacks"][1]["auc"], abs=1e-12)
