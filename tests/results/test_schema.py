"""The published JSON Schema of results.json: what `miaudit schema` prints, the docs' copy, draft 2020-12."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from miaudit.cli import app
from miaudit.config import describe
from miaudit.config_keys import command_keys
from miaudit.results import SCHEMA_VERSION, AuditPlan, AuditReport, Comparison

DOCS_COPY = Path(__file__).resolve().parents[2] / "docs" / "_generated" / "results-schema.json"


def test_miaudit_schema_prints_the_models_schema_and_the_docs_publish_it() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    printed = json.loads(result.output)
    assert printed == AuditReport.json_schema() == json.loads(DOCS_COPY.read_text())
    jsonschema.Draft202012Validator.check_schema(printed)
    assert printed["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "schema_version" in printed["properties"] and SCHEMA_VERSION == 5


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


@pytest.mark.parametrize(
    ("name", "schema"),
    [
        ("compare", Comparison.json_schema()),
        ("plan", AuditPlan.json_schema()),
        ("config", describe.schema(command_keys())),
    ],
)
def test_miaudit_schema_prints_each_output_by_name(name: str, schema: dict[str, object]) -> None:
    """One command for every schema: results (the default), a config, compare.json and plan's answer."""
    result = CliRunner().invoke(app, ["schema", name])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == schema
    jsonschema.Draft202012Validator.check_schema(printed)
    assert json.loads(CliRunner().invoke(app, ["schema", "results"]).output) == AuditReport.json_schema()


def test_an_unknown_schema_name_is_refused_in_one_line() -> None:
    result = CliRunner().invoke(app, ["schema", "resuls"])
    assert result.exit_code == 2
    assert "did you mean 'results'?" in result.output and len(result.output.strip().splitlines()) == 1


def test_compare_and_plan_sections_forbid_unknown_keys() -> None:
    """Their sections refuse what they do not declare, as results.json's do."""
    for schema in (Comparison.json_schema(), AuditPlan.json_schema()):
        assert schema["additionalProperties"] is False
        assert all(d.get("additionalProperties") is False for d in schema["$defs"].values())
