"""docs/workflow.md and its CI examples (examples/ci/) as written: every miaudit command in the GitHub Actions
workflow and the GitLab job parses (its flags known to the command, its conditions the command's), the page's
table names every condition of the gate's registry, and its tracking config validates."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer.main
import yaml

from miaudit.cli import app
from miaudit.workflow.conditions import METRICS, VERDICTS
from miaudit.workflow.gate import parse_all
from miaudit.workflow.keys import TrackingConfig

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "workflow.md").read_text()


def scripts() -> list[str]:
    """The shell lines of both CI files: GitHub's steps' ``run:`` and GitLab's ``script:``."""
    github = yaml.safe_load((ROOT / "examples/ci/github-actions.yml").read_text())
    gitlab = yaml.safe_load((ROOT / "examples/ci/gitlab-ci.yml").read_text())
    lines = [step["run"] for job in github["jobs"].values() for step in job["steps"] if "run" in step]
    lines += [line for job in gitlab.values() if isinstance(job, dict) for line in job.get("script", [])]
    return lines


def miaudit_commands() -> list[list[str]]:
    """Each miaudit invocation, its shell variables expanded as on a CI run with no tracker and the default audit."""
    found = []
    for script in scripts():
        text = script.replace("\\\n", " ")
        text = re.sub(r"\$\{MLFLOW_TRACKING_URI:\+[^}]*\}", "", text).replace("$AUDIT_CONFIG", "")
        for line in text.splitlines():
            words = shlex.split(line)
            if words and words[0].endswith("miaudit"):
                found.append(words[1:])
    return found


def test_both_ci_files_run_a_gated_audit() -> None:
    commands = miaudit_commands()
    assert len(commands) == 2 and all(c[0] == "run" and "--fail-on" in c for c in commands)
    group = typer.main.get_command(app)  # typer's click group (its own click in recent typer)
    for words in commands:
        run = group.commands[words[0]]  # type: ignore[attr-defined]
        ctx = run.make_context("run", list(words[1:]))  # click refuses an unknown flag or a missing value
        conditions = parse_all(ctx.params["fail_on"], "--fail-on", "run")
        assert {c.text for c in conditions} == {"leaks", "tpr@1%>=5%", "at_risk>0"}
        assert ctx.params["out"] == Path("audit")


def test_the_ci_files_track_only_when_a_tracking_uri_is_set() -> None:
    for script in scripts():
        if "miaudit run" in script:
            assert '${MLFLOW_TRACKING_URI:+--track "$MLFLOW_TRACKING_URI"}' in script


@pytest.mark.parametrize("name", [*VERDICTS, *METRICS])
def test_the_page_lists_every_condition(name: str) -> None:
    form = f"{name}@LEVEL" if name in METRICS and METRICS[name].levels else name
    row = next((line for line in PAGE.splitlines() if line.startswith(f"| `{form}` |")), None)
    assert row is not None, f"docs/workflow.md: no table row for {form}"
    entry = VERDICTS.get(name) or METRICS[name]
    cells = [c.strip() for c in row.split("|")[2:5]]  # as the registry says: its commands, what it reads, its unit
    unit = "verdict" if name in VERDICTS else METRICS[name].unit.name
    assert cells == [", ".join(entry.commands), entry.about, unit]


def test_the_pages_tracking_config_validates() -> None:
    block = PAGE.split("```yaml\ntracking:")[1].split("```")[0]
    raw = yaml.safe_load("tracking:" + block)["tracking"]
    assert TrackingConfig.model_validate(raw).experiment == "release-audits"
