"""The typed dataset_inference section: extra keys refused, optional in results.json, a version-1 file still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _results import INFERENCE_SECTION, version_1_results
from pydantic import ValidationError

from miaudit.results import SCHEMA_VERSION, AuditReport, DatasetInference

SECTION = INFERENCE_SECTION


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
    assert SCHEMA_VERSION >= 4  # 4: dataset_inference.at_least (5: unlearning no_claim)
    schema = AuditReport.json_schema()
    assert "dataset_inference" in schema["properties"]
    assert "at_least" in schema["$defs"]["DatasetInference"]["properties"]
    old = version_1_results()
    (tmp_path / "results.json").write_text(json.dumps(old))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert (
        loaded.dataset_inference is None and loaded.schema_version == SCHEMA_VERSION
    )  # a version-1 file reads as the current version
