"""The documentation: a page for every attack `miaudit attacks` lists, generated pages up to date,
and `mkdocs build --strict` passing (skipped where mkdocs is not installed; the lock installs it)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from miaudit.attacks import registry
from miaudit.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_attack_pages", DOCS / "gen_attack_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def listed_attacks() -> list[str]:
    """The names `miaudit attacks` prints, first word of each line."""
    result = CliRunner().invoke(app, ["attacks"])
    assert result.exit_code == 0, result.output
    return [line.split()[0] for line in result.stdout.splitlines() if line.strip()]


def test_cli_lists_exactly_the_registry() -> None:
    assert sorted(listed_attacks()) == registry.names()


@pytest.mark.parametrize("name", registry.names())
def test_every_attack_has_its_page(name: str) -> None:
    page = DOCS / "attacks" / f"{name}.md"
    assert page.exists(), f"no documentation page for attack {name}: write docs/_attack_notes/{name}.md, make docs"
    text = page.read_text()
    assert re.search(rf"^# .*`{re.escape(name)}`", text, re.MULTILINE), f"{page.name}: no H1 naming {name}"
    for section in ("## What it computes", "## Formula", "## When to use it", "## Parameters", "## Measured"):
        assert section in text, f"{page.name}: missing section {section!r}"


@pytest.mark.parametrize("name", registry.names())
def test_parameter_table_lists_every_field(name: str) -> None:
    text = (DOCS / "attacks" / f"{name}.md").read_text()
    for field in registry.get(name).params.model_fields:
        assert f"| `{field}` |" in text, f"{name}.md: parameter {field} missing from its table"


def test_attack_pages_are_not_stale() -> None:
    problems = _generator().stale_pages()
    assert not problems, "; ".join(problems) + ": run `make docs` and commit docs/attacks/"


def test_nav_pages_exist() -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    for entry in nav:
        for target in entry.values():
            assert (DOCS / target).exists(), f"mkdocs.yml nav: {target} does not exist"


def test_conventions_page_holds_the_contracts() -> None:
    text = (DOCS / "conventions.md").read_text()
    for heading in ("## Score direction", "## p-values", "## TPR at FPR", "## The data split", "## results.json"):
        assert heading in text


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -r requirements.lock)")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in registry.names():
        assert (tmp_path / "site" / "attacks" / name / "index.html").exists()


@pytest.mark.slow
def test_own_model_page_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python example of docs/own-model.md runs as written."""
    import miaudit

    monkeypatch.chdir(tmp_path)
    text = (DOCS / "own-model.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(snippet, "docs/own-model.md", "exec"), namespace)
    assert isinstance(namespace["result"], miaudit.AuditResult)
    assert (tmp_path / "my-audit" / "results.json").exists()


def test_generated_reference_is_current() -> None:
    """docs/_generated/ (the files of a run, the columns of scores.csv) is what the code says."""
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.stale_pages() == [], "run `python docs/gen_reference.py` and commit docs/_generated/"


def test_the_pages_agree_that_train_fn_references_are_not_cached() -> None:
    """Issue 49, item 7: a train_fn's references are never cached (``experiment.own_model.with_train_fn`` drops the
    cache spec: miaudit cannot hash user code), and every page that speaks of them says so."""
    for page in ("own-model.md", "endpoint.md"):
        text = " ".join((DOCS / page).read_text().split())
        assert "train_fn" in text and re.search(r"(?:are|such models are) not cached", text), page
        assert not re.search(r"train_fn`?\. They are cached like any reference", text), page
