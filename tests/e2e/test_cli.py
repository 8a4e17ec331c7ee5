"""The command-line contract (docs/running.md's "What a run writes", docs/conventions.md): outputs of a run, and exit
code 2 with nothing written on bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner, Result

from miaudit.cli import app

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a scratch folder, as a user would: relative paths resolve there."""
    monkeypatch.chdir(tmp_path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write_config(raw: dict[str, Any], name: str = "run.yaml") -> str:
    Path(name).write_text(yaml.safe_dump(raw))
    return name


def tabular_data(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three classes decided by a random linear map of six features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    return x, (x @ rng.normal(size=(6, 3))).argmax(axis=1)


def test_attacks_lists_attack_p() -> None:
    res = invoke("attacks")
    assert res.exit_code == 0
    assert any(line.startswith("attack-p ") for line in res.output.splitlines())


def test_unknown_key_exits_2_and_writes_nothing(tiny_raw: dict[str, Any]) -> None:
    res = invoke("run", write_config({**tiny_raw, "bogus_key": 1}), "--out", "d")
    assert res.exit_code == 2
    assert "bogus_key" in res.output and len(res.output.strip().splitlines()) == 1
    assert not Path("d/results.json").exists()


def test_missing_config_exits_2() -> None:
    res = invoke("run", "absent.yaml", "--out", "d")
    assert res.exit_code == 2 and "absent.yaml not found" in res.output


def test_attack_requirement_exits_2_and_writes_nothing(tiny_raw: dict[str, Any]) -> None:
    res = invoke("run", write_config({**tiny_raw, "references": 0, "attacks": ["lira"]}), "--out", "d")
    assert res.exit_code == 2 and "lira: needs at least 1 reference" in res.output
    assert not Path("d").exists()


def test_offline_base3_is_refused_at_config_time_naming_bavaria(tiny_raw: dict[str, Any]) -> None:
    raw = {**tiny_raw, "mode": "offline", "references": 4, "attacks": [{"name": "base3", "references": 4}]}
    res = invoke("run", write_config(raw), "--out", "d")
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1
    assert "base3: runs in online mode only" in res.output and "bavaria-n or bavaria-t" in res.output
    assert not Path("d").exists()


@pytest.mark.slow
def test_tiny_run_writes_the_spec_outputs(tiny_raw: dict[str, Any]) -> None:
    res = invoke("run", write_config(tiny_raw), "--out", "out")
    assert res.exit_code == 0, res.output
    out = Path("out")
    results = json.loads((out / "results.json").read_text())
    assert results["dataset"] == "digits"
    assert (results["n_members"], results["n_nonmembers"]) == (60, 60)
    assert set(results["target"]) >= {"train_accuracy", "test_accuracy"}
    assert all(0 <= results["target"][k] <= 1 for k in ("train_accuracy", "test_accuracy"))
    attack, attack_r = results["attacks"]
    assert attack["name"] == "attack-p" and attack["references"] == 0  # attack-p uses no reference model
    assert attack_r["name"] == "attack-r" and attack_r["references"] == 2
    assert 0 <= attack["auc"] <= 1
    assert set(attack["tpr_at_fpr"]) == {"0.001", "0.01", "0.05"}
    assert set(attack["seconds"]) == {"reference_training", "attack"}
    assert attack["unreliable_fpr_levels"] == ["0.001", "0.01", "0.05"]  # 60 non-members < 10 / 0.05
    report = (out / "report.md").read_text()
    assert f"| {attack['label']} | 0 |" in report
    # every number with its uncertainty: TPR and realized FPR intervals, thresholds, AUC interval
    for key in ("tpr_at_fpr_ci", "realized_fpr", "realized_fpr_ci", "threshold"):
        assert set(attack[key]) == set(attack["tpr_at_fpr"])
    lo, hi = attack["auc_ci"]
    assert lo <= attack["auc"] <= hi and attack["n_nan_scores"] == 0
    tpr, (tlo, thi) = attack["tpr_at_fpr"]["0.05"], attack["tpr_at_fpr_ci"]["0.05"]
    assert f"{100 * tpr:.1f} [{100 * tlo:.1f}, {100 * thi:.1f}]" in report and "## Operating points" in report
    assert (out / "roc.png").read_bytes().startswith(PNG_MAGIC)
    scores = pd.read_csv(out / "scores.csv")
    assert {"record", "member", "label"} <= set(scores.columns)
    assert sum(c.endswith(".score") for c in scores.columns) == sum(c.endswith(".p_value") for c in scores.columns) == 2
    assert len(scores) == 120 and scores["member"].sum() == 60 and scores["record"].is_unique


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["npz", "csv"])
def test_user_data_file_runs(tiny_raw: dict[str, Any], suffix: str) -> None:
    x, y = tabular_data()
    if suffix == "npz":
        np.savez("mine.npz", x=x, y=y)
        dataset = {"path": "mine.npz"}
    else:
        pd.DataFrame(x, columns=[f"f{i}" for i in range(6)]).assign(target=y).to_csv("mine.csv", index=False)
        dataset = {"path": "mine.csv", "label_column": "target"}
    res = invoke("run", write_config({**tiny_raw, "dataset": dataset}), "--out", "out")
    assert res.exit_code == 0, res.output
    results = json.loads(Path("out/results.json").read_text())
    assert results["dataset"] == "mine" and results["n_records"] == 200
    assert (results["n_members"], results["n_nonmembers"]) == (40, 40)


def test_npz_with_nan_exits_2_and_writes_nothing(tiny_raw: dict[str, Any]) -> None:
    x, y = tabular_data()
    x[[3, 17], 2] = np.nan
    np.savez("dirty.npz", x=x, y=y)
    res = invoke("run", write_config({**tiny_raw, "dataset": {"path": "dirty.npz"}}), "--out", "out")
    assert res.exit_code == 2
    assert "NaN or inf in 2 record(s)" in res.output and len(res.output.strip().splitlines()) == 1
    assert not Path("out").exists()


@pytest.mark.slow
def test_auto_chooses_on_pseudo_targets_and_says_why(tiny_raw: dict[str, Any]) -> None:
    """attacks: auto with 2 references: every candidate's pseudo-target estimate in results.json and report.md,
    and only those chosen run beside the baseline and the risk ranking."""
    res = invoke("run", write_config({**tiny_raw, "attacks": "auto"}), "--out", "out")
    assert res.exit_code == 0, res.output
    results = json.loads(Path("out/results.json").read_text())
    choice = results["attack_choice"]
    considered = [c["name"] for c in choice["candidates"]]
    assert choice["rule"] == "pseudo-targets" and len(considered) == 5
    assert all(
        "0.01" in c["pseudo_target_tpr"] and c["why"].split()[0] in ("run", "left") for c in choice["candidates"]
    )
    ran = [a["name"] for a in results["attacks"] if a["references"] > 0]
    assert sorted(ran) == sorted(choice["chosen"]) and 1 <= len(ran) < len(considered)
    assert "pseudo-target TPR@1%" in Path("out/report.md").read_text()
