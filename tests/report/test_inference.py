"""infer-dataset's report: the verdict first in report.md, report.html and the console; the power line's wording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from miaudit.report import inference
from miaudit.report.records import environment
from miaudit.results import AuditReport

SECTION: dict[str, Any] = {
    "verdict": "Used: ...",
    "used": True,
    "p_value": 0.001,
    "level": 0.05,
    "auc": 0.9,
    "permutations": 999,
    "n_suspect": 100,
    "n_validation": 300,
    "features": ["margin"],
    "fraction": {"estimate": 0.9, "ci": [0.8, 1.0], "member_auc": 0.93, "suspect_auc": 0.9},
    "blind": {"auc": 0.5, "ci": [0.43, 0.57], "shifted": False, "classifier": "lr"},
    "power": {
        "basis": "references",
        "member_auc": 0.93,
        "power": 0.8,
        "smallest_suspect_set": 3,
        "detectable_fraction": 0.19,
        "power_if_all_used": 1.0,
    },
    "assumptions": ["exchangeable"],
}


def _results() -> AuditReport:
    return AuditReport.model_validate({
        "miaudit_version": "0", "created": "2026-01-01T00:00:00+00:00", "dataset": "digits",
        "data_fingerprint": "x", "n_records": 10, "model": "mlp", "seed": 0, "references": 4,
        "target": {"source": "trained"}, "calibration": {"calibrated": False, "records": 0}, "verdict": None,
        "attacks": [],
        "config": {"dataset": "digits"}, "environment": environment("cpu"), "dataset_inference": SECTION,
    })  # fmt: skip


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
