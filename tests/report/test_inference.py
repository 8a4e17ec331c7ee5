"""infer-dataset's report: the verdict first in report.md, report.html and the console; the power line's wording."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from _results import INFERENCE_SECTION, version_1_results

from miaudit.report import inference
from miaudit.results import AuditReport

SECTION = INFERENCE_SECTION


def _results() -> AuditReport:
    data = version_1_results(references=4, verdict=None, config={"dataset": "digits"}, dataset_inference=SECTION)
    return AuditReport.model_validate({k: v for k, v in data.items() if k != "schema_version"})


def test_the_verdict_leads_every_output(tmp_path: Path) -> None:
    r = _results()
    d = r.dataset_inference
    assert d is not None
    md = inference.report_md(r).splitlines()
    assert md[2] == f"**{d.verdict}**" and md[4].startswith("Power (per-record effect AUC 0.93")
    html = inference.render_html(r)
    assert html.index(d.verdict) < html.index("Power (") < html.index("What the test assumes")
    assert inference.console_lines(d)[0] == d.verdict
    assert "3 fully used suspect records suffice for 80% power" in inference.power_line(d)
    assert "use of 19% or more of these 100 suspects is detected" in inference.power_line(d)
    records = {"record": np.array([1, 2]), "suspect": np.array([1, 0]), "combined_score": np.array([0.5, -0.25])}
    inference.write(r, records, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "results.json").read_text())["dataset_inference"]["used"] is True
    assert (tmp_path / "out" / "scores.csv").read_text().splitlines() == [
        "record,suspect,combined_score", "1,1,0.5", "2,0,-0.25"
    ]  # fmt: skip


def test_the_fraction_row_says_why_it_is_missing() -> None:
    d = _results().dataset_inference
    assert d is not None
    rows = dict(inference.figure_rows(d))
    assert rows["fraction used"].startswith("0.90 [0.80, 1.00]")
    shifted = d.model_copy(update={"fraction": None, "blind": d.blind.model_copy(update={"shifted": True})})
    assert "the blind guard" in dict(inference.figure_rows(shifted))["fraction used"]
    alone = d.model_copy(update={"fraction": None})
    assert "no references" in dict(inference.figure_rows(alone))["fraction used"]


def test_miaudit_report_renders_an_inference_run_again_from_its_results_json(tmp_path: Path) -> None:
    from miaudit import report

    r = _results()
    inference.write(r, {"record": np.array([1]), "suspect": np.array([1])}, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    (tmp_path / "out" / "report.md").unlink()
    (tmp_path / "out" / "report.html").unlink()
    assert report.rebuild(tmp_path / "out") == ["report.md", "report.html"]
    assert (tmp_path / "out" / "report.md").read_text() == md and (tmp_path / "out" / "report.html").is_file()
