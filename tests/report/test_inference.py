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
    assert inference.explain_lines(d)[0] == d.verdict
    assert "3 fully used suspect records suffice for 80% power" in inference.power_line(d)
    assert "use of 19% or more of these 100 suspects is detected" in inference.power_line(d)
    records = {"record": np.array([1, 2]), "suspect": np.array([1, 0]), "score": np.array([0.5, -0.25])}
    inference.write(r, records, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "results.json").read_text())["dataset_inference"]["used"] is True
    assert (tmp_path / "out" / "scores.csv").read_text().splitlines() == [
        "record,suspect,score", "1,1,0.5", "2,0,-0.25"
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
    guarded = d.model_copy(
        update={"fraction": None, "references_guard": d.references_guard.model_copy(update={"shifted": True})}
    )
    assert "the reference guard" in dict(inference.figure_rows(guarded))["fraction used"]


def test_the_power_line_says_only_what_was_measured() -> None:
    """Issue 54 item 11: without a measured leak (references: 0, or references that trained on some of the records)
    the power line states no power at all, and says why; it never claims the whole set's use was undetectable."""
    d = _results().dataset_inference
    assert d is not None
    for why in ("no reference models to measure how far a used record stands out (at least 2 are needed)",
                "the references trained on some of these records, so they cannot measure how far a used record "
                "stands out"):  # fmt: skip
        power = d.power.model_copy(
            update={
                "basis": "unmeasured",
                "unmeasured_because": why,
                "member_auc": None,
                "smallest_suspect_set": None,
                "detectable_fraction": None,
                "power_if_all_used": None,
            }  # fmt: skip
        )
        line = inference.power_line(d.model_copy(update={"power": power}))
        assert line.startswith(f"Power: not measured: {why}")
        assert "could not have detected" not in line and "no references to measure it on" not in line


def test_a_wide_fraction_interval_says_what_would_narrow_it() -> None:
    d = _results().dataset_inference
    assert d is not None and "wider than half" not in inference.power_line(d)
    wide = d.model_copy(update={"fraction": d.fraction.model_copy(update={"ci": [0.01, 0.98]})})
    line = inference.power_line(wide)
    assert "wider than half" in line and "more suspect records (now 100) or more reference models" in line


def test_miaudit_report_renders_an_inference_run_again_from_its_results_json(tmp_path: Path) -> None:
    from miaudit import report

    r = _results()
    inference.write(r, {"record": np.array([1]), "suspect": np.array([1])}, tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    (tmp_path / "out" / "report.md").unlink()
    (tmp_path / "out" / "report.html").unlink()
    assert report.rebuild(tmp_path / "out") == ["report.md", "report.html"]
    assert (tmp_path / "out" / "report.md").read_text() == md and (tmp_path / "out" / "report.html").is_file()
