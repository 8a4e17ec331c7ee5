"""The report stage: a complete results.json, headline (calibrated) p-values, notes, names of attack rows."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

import numpy as np
import pytest

from miaudit import audits
from miaudit.config.run import RunConfig
from miaudit.membership import decide, ranking
from miaudit.report.markdown import report_md

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)

ATTACKS = [
    {"name": "attack-p"},
    {"name": "lira", "references": 2},
    {"name": "lira", "references": 2, "center": "median"},
]


@pytest.fixture(scope="module")
def calibrated(make_config: Callable[..., RunConfig]) -> audits.RunResult:
    return audits.run_config(make_config(attacks=ATTACKS))


@pytest.fixture(scope="module")
def uncalibrated(make_config: Callable[..., RunConfig]) -> audits.RunResult:
    return audits.run_config(make_config(attacks=ATTACKS, calibration="none"))


def test_results_json_is_a_complete_record(calibrated: audits.RunResult) -> None:
    results = decide.results_json(calibrated)
    assert datetime.fromisoformat(results["created"]).tzinfo is not None
    assert re.fullmatch(r"[0-9a-f]{64}", results["data_fingerprint"])
    assert {
        "python",
        "torch",
        "numpy",
        "scipy",
        "laplace-torch",
        "miaudit",
        "platform",
        "torch_threads",
        "device",
    } <= set(results["environment"])
    assert results["calibration"] == {"calibrated": True, "records": results["n_validation"]}
    labels = [a["label"] for a in results["attacks"]]
    assert labels == ["attack-p", "lira (n=2, center=mean)", "lira (n=2, center=median)"]
    assert results["attacks"][2]["params"]["center"] == "median" and results["attacks"][1]["params"]["signal"]
    assert all(a["p_values"] == "calibrated" for a in results["attacks"])
    assert "notes" not in results


def test_twin_rows_get_their_own_columns(calibrated: audits.RunResult) -> None:
    frame = decide.decide(calibrated).scores.to_pandas()
    assert {"lira_n_2_center_mean.score", "lira_n_2_center_median.score"} <= set(frame.columns)
    assert [ranking.slug(r) for r in calibrated.attacks][0] == "attack-p_n0"


def test_the_headline_p_value_is_the_calibrated_one(calibrated: audits.RunResult) -> None:
    frame = decide.decide(calibrated).scores.to_pandas()
    run = calibrated.attacks[1]
    by_record = frame.set_index("record").loc[calibrated.experiment.query_idx]
    slug = ranking.slug(run)
    np.testing.assert_allclose(by_record[f"{slug}.p_value"], np.exp(run.result.log_pvalues_calibrated))
    np.testing.assert_allclose(by_record[f"{slug}.p_value_raw"], np.exp(run.result.log_pvalues))
    assert frame["risk_rank"].tolist() == list(range(1, len(frame) + 1))


def test_uncalibrated_runs_say_so_first(uncalibrated: audits.RunResult) -> None:
    results = decide.results_json(uncalibrated)
    assert results["calibration"]["calibrated"] is False
    assert all(a["p_values"] == "raw" for a in results["attacks"])
    assert any("NOT calibrated" in note for note in results["notes"])
    decided = decide.decide(uncalibrated)
    text = report_md(decided.results, decided.scores)
    assert "NOT calibrated" in "\n".join(text.splitlines()[:6])  # right after the verdict (which rests on the ROC)
    frame = decided.scores.to_pandas()
    assert not any(c.endswith("p_value_raw") for c in frame.columns)


def test_risk_order_puts_the_smallest_p_values_first_ties_by_score() -> None:
    from types import SimpleNamespace

    from miaudit.membership.ranking import risk_order

    scores = np.array([0.1, 5.0, 3.0, np.nan, 3.0, 9.0])
    log_p = np.log([0.5, 0.01, 0.01, 0.2, 0.01, 0.9])  # the p-values that named the records at risk
    run = SimpleNamespace(result=SimpleNamespace(scores=scores, log_pvalues=None))
    np.testing.assert_array_equal(risk_order(run, log_p), [1, 2, 4, 3, 0, 5])  # type: ignore[arg-type]
    np.testing.assert_array_equal(risk_order(run), [5, 1, 2, 4, 0, 3])  # type: ignore[arg-type]
