"""The published JSON Schema of results.json: what `miaudit schema` prints, the docs' copy, draft 2020-12."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from miaudit.cli import app
from miaudit.results import SCHEMA_VERSION, AuditReport

DOCS_COPY = Path(__file__).resolve().parents[2] / "docs" / "_generated" / "results-schema.json"


def test_miaudit_schema_prints_the_models_schema_and_the_docs_publish_it() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    printed = json.loads(result.output)
    assert printed == AuditReport.json_schema() == json.loads(DOCS_COPY.read_text())
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "schema_version" in printed["properties"] and SCHEMA_VERSION == 2


def test_the_schema_refuses_what_results_json_never_holds() -> None:
    """The schema checks something: a kind outside test/ranking, a missing section, an unknown top-level key."""
    validator = jsonschema.Draft202012Validator(AuditReport.json_schema())
    assert not validator.is_valid({})
    rows = AuditReport.json_schema()["$defs"]["AttackRow"]
    kind = rows["properties"]["kind"]
    assert (kind["enum"], kind["type"]) == (["test", "ranking"], "string")
    assert AuditReport.json_schema()["additionalProperties"] is False


def test_every_key_of_the_schema_says_what_it_holds() -> None:
    """Each field's docstring is its description (``use_attribute_docstrings``): no key of any section goes
    undescribed, an aliased key included."""
    schema = AuditReport.json_schema()
    sections = {"AuditReport": schema, **schema["$defs"]}
    undescribed = [
        f"{name}.{key}"
        for name, section in sections.items()
        for key, prop in section.get("properties", {}).items()
        if not prop.get("description", "").strip()
    ]
    assert not undescribed
    assert sections["AttackRow"]["properties"]["auc"]["description"].startswith("area under the ROC curve")
    assert sections["Environment"]["properties"]["laplace-torch"]["description"] == "laplace-torch's version"
