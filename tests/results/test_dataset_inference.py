"""The typed dataset_inference section: extra keys refused, optional in results.json, a version-1 file still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from miaudit.report.records import environment
from miaudit.results import SCHEMA_VERSION, AuditReport, DatasetInference

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


def test_the_section_is_strict() -> None:
    d = DatasetInference.model_validate(SECTION)
    assert d.used is True and d.fraction is not None and d.fraction.ci == [0.8, 1.0]
    for where, bad in [((), {"surprise": 1}), (("blind",), {"extra": 1}), (("fraction",), {"x": 1})]:
        doc = json.loads(json.dumps(SECTION))
        target = doc
        for key in where:
            target = target[key]
        target.update(bad)
        with pytest.raises(ValidationError):
            DatasetInference.model_validate(doc)
    assert DatasetInference.model_validate({**SECTION, "used": None, "fraction": None}).used is None


def test_schema_shows_the_section_and_a_version_1_file_still_loads(tmp_path: Path) -> None:
    assert SCHEMA_VERSION == 3
    schema = AuditReport.json_schema()
    assert "dataset_inference" in schema["properties"]
    old = {
        "schema_version": 1,
        "miaudit_version": "0",
        "created": "2026-01-01T00:00:00+00:00",
        "dataset": "digits",
        "data_fingerprint": "x",
        "n_records": 10,
        "model": "mlp",
        "seed": 0,
        "target": {"source": "trained"},
        "calibration": {"calibrated": False, "records": 0},
        "attacks": [],
        "config": {},
        "environment": environment("cpu").model_dump(),
    }
    (tmp_path / "results.json").write_text(json.dumps(old))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert (
        loaded.dataset_inference is None and loaded.schema_version == SCHEMA_VERSION
    )  # a version-1 file reads as the current version
