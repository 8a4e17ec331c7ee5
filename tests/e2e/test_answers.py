"""What a run answers, end to end on the tiny run: verdict, records at risk (q_value = BH), PPV, and
`miaudit compare` of two runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

from miaudit.cli import app
from miaudit.report.ranking import slug_of
from miaudit.results import Comparison


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    from conftest import TINY_RUN

    where = tmp_path_factory.mktemp("answers")
    runs = []
    for epochs in (3, 1):
        raw: dict[str, Any] = {**TINY_RUN, "train": {**TINY_RUN["train"], "epochs": epochs}}
        (where / f"e{epochs}.yaml").write_text(yaml.safe_dump(raw))
        out = where / f"e{epochs}"
        result = CliRunner().invoke(app, ["run", str(where / f"e{epochs}.yaml"), "--out", str(out)])
        assert result.exit_code == 0, result.output
        runs.append(out)
    compared = CliRunner().invoke(app, ["compare", str(runs[0]), str(runs[1]), "--out", str(where / "cmp")])
    assert compared.exit_code == 0, compared.output
    return runs[0], where / "cmp", compared.output


@pytest.mark.slow
def test_results_answer_with_verdict_records_at_risk_and_ppv(two_runs: tuple[Path, Path, str]) -> None:
    run, _, _ = two_runs
    r = json.loads((run / "results.json").read_text())
    v = r["verdict"]
    assert v["statement"].startswith(("Leaks", "No leak detected")) and v["leaks"] == v["statement"].startswith("L")
    assert v["attack"] in {a["label"] for a in r["attacks"]} and v["fpr_level"] == 0.01
    assert v["tpr_ci"][0] <= v["tpr"] <= v["tpr_ci"][1] and v["n_tests"] == 2 * 3
    frame = pd.read_parquet(run / "scores.parquet")
    risk = r["records_at_risk"]
    for label, counted in risk["by_attack"].items():
        row = next(a for a in r["attacks"] if a["label"] == label)
        stem = slug_of(row["name"], label, row["references"])
        q = frame[f"{stem}.q_value"].to_numpy()
        np.testing.assert_allclose(q, stats.false_discovery_control(frame[f"{stem}.p_value"], method="bh"))
        assert counted["bh_count"] == int((q <= risk["fdr"]).sum())  # BH on its own p-values, every query
        if counted["basis"] == "screened":  # Storey's adaptive BH on the screened queries' conformal p-values
            p, q = frame[f"{stem}.p_value_screened"].to_numpy(), frame[f"{stem}.q_value_screened"].to_numpy()
            tested = np.isfinite(p)
            assert tested.sum() == counted["tested"] and np.array_equal(tested, np.isfinite(q))
            pi0 = min(1.0, (1 + (p[tested] > 0.5).sum()) / (0.5 * tested.sum()))
            by_hand = np.minimum(1.0, pi0 * stats.false_discovery_control(p[tested], method="bh"))
            np.testing.assert_allclose(q[tested], by_hand)
            q = np.where(tested, q, np.inf)
        assert counted["flagged"] == int((q <= risk["fdr"]).sum())
    flagged = frame["at_risk"].to_numpy() == 1
    assert flagged.sum() == risk["count"] and risk["attack"] in risk["by_attack"]
    fdp = risk["realized_fdp"]  # by hand from the member column
    assert fdp["non_members"] == int((flagged & (frame["member"].to_numpy() == 0)).sum())
    assert fdp["value"] == (fdp["non_members"] / flagged.sum() if flagged.sum() else 0.0)
    assert len(pd.read_csv(run / "at_risk.csv")) == risk["count"]
    assert all(set(a["ppv"]) == {"prior_0.01", "prior_0.1", "prior_0.5"} for a in r["attacks"])
    assert (run / "report.md").read_text().splitlines()[2].startswith("**Verdict: ")


@pytest.mark.slow
def test_compare_prints_differences_with_intervals_and_writes_files(two_runs: tuple[Path, Path, str]) -> None:
    _, cmp, output = two_runs
    text = (cmp / "compare.json").read_text()
    c = json.loads(text)
    assert jsonschema.Draft202012Validator(Comparison.json_schema()).is_valid(c)  # the schema `schema compare` prints
    assert Comparison.model_validate(c).to_json() == text  # the typed model, written as is
    assert c["paired"] is True and {row["attack"] for row in c["attacks"]} == {"attack-p", "attack-r (n=2)"}
    for row in c["attacks"]:
        d = row["tpr_at_fpr"]["0.01"]
        assert d["difference"] == pytest.approx(d["b"] - d["a"]) and d["ci"][0] <= d["ci"][1]
        assert row["verdict"] in output
    assert (cmp / "compare.md").exists() and "data:image/png" in (cmp / "compare.html").read_text()


def test_compare_refuses_a_folder_that_is_no_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["compare", str(tmp_path), str(tmp_path)])
    assert result.exit_code == 2 and "not a miaudit run directory" in result.output


@pytest.mark.slow
def test_plan_reports_power_and_time(tmp_path: Path) -> None:
    from conftest import TINY_RUN

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_RUN))
    result = CliRunner().invoke(app, ["plan", str(tmp_path / "tiny.yaml")])
    assert result.exit_code == 0, result.output
    assert "60 members, 60 non-members" in result.output and "smallest TPR called a leak" in result.output
    assert "s per epoch (timed" in result.output


@pytest.mark.slow
def test_plan_shares_worker_trained_time_among_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With two cores auto trains every model of the run in two workers: each timed on one thread, the total
    halved; with models_at_once 1 nothing is shared."""
    import torch
    from conftest import TINY_RUN

    from miaudit import attack_plan, config, forecast
    from miaudit.training import executor

    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    cfg = config.from_dict({**TINY_RUN, "cache_dir": str(tmp_path / "cache")})
    t = forecast.training_time(cfg, attack_plan.build(cfg))
    assert t.workers == 2 and all(m.in_worker for m in t.models)
    assert t.estimated_training_seconds == pytest.approx(sum(m.seconds for m in t.models) / 2)
    planned = forecast.forecast(cfg, attack_plan.build(cfg)).model_copy(update=vars(t))
    assert "in 2 worker processes" in forecast.lines(planned)[-1]
    one = config.from_dict(
        {**TINY_RUN, "cache_dir": str(tmp_path / "cache"), "train": {**TINY_RUN.get("train", {}), "models_at_once": 1}}
    )
    t1 = forecast.training_time(one, attack_plan.build(one))
    assert t1.workers == 1 and not any(m.in_worker for m in t1.models)
    assert t1.estimated_training_seconds == pytest.approx(sum(m.seconds for m in t1.models))
