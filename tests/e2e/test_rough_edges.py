"""What a new user meets at the command line: logs, record IDs, config paths, late checks, the cache,
the output directory, progress and interrupts, silent coercions."""

from __future__ import annotations

import io
import json
import logging
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner, Result

from miaudit import api, storage
from miaudit.cli import app
from miaudit.report import outdir
from miaudit.report.ranking import ATTACK_COLUMNS, RECORD_COLUMNS
from miaudit.training import store as store_mod


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def write(path: str, raw: dict[str, Any]) -> str:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(yaml.safe_dump(raw))
    return path


def refused(res: Result, *words: str) -> str:
    """Exit 2 with one line naming every word; returns the line."""
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def models_in(cache: Path) -> int:
    return len(list(cache.rglob("*.safetensors")))


class Tables(HTMLParser):
    """The cells of every table of an HTML page, per row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


@pytest.mark.slow
def test_a_run_from_elsewhere(tiny_raw: dict[str, Any], isolated_cache: Path) -> None:
    """One tiny run covers: a relative dataset.path beside the config, no log line printed twice although the
    root logger has a handler (as laplace-torch gives it), a start line and the whole run's model count, integer
    record IDs in report.html, a column for min_fpr, the references' recipe, and a stale staging folder removed."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 1500)
    config = write("sub/c.yaml", {**tiny_raw, "dataset": {"path": "d.npz"}, "min_fpr": 0.004})
    np.savez("sub/d.npz", x=rng.normal(size=(1500, 6)) + y[:, None], y=y)
    stale, users = Path(".out.abcd_123"), Path(".out.mine")  # a killed run's staging folder; a user's folder
    for folder in (stale, users):
        folder.mkdir()
        (folder / "results.json").write_text("{}")
    root = io.StringIO()
    logging.getLogger().addHandler(handler := logging.StreamHandler(root))
    try:
        res = invoke("run", config, "--out", "out")
    finally:
        logging.getLogger().removeHandler(handler)
    assert res.exit_code == 0, res.output
    assert "miaudit" not in root.getvalue() and "trained" not in root.getvalue()
    lines = res.output.splitlines()
    assert lines[0].startswith("auditing d, 1500 records (300 members, 300 non-members queried)")
    assert "the target (mlp, 3 epochs) and 2 reference model(s)" in lines[0] and "attack-p, attack-r" in lines[0]
    assert any(re.match(r"target: trained in .* \[1/3 models, about \d+ s of training left\]", x) for x in lines)
    assert any(x.startswith("reference 2/2: trained in") and "[3/3 models]" in x for x in lines)
    assert "TPR@0.4%" in res.output  # min_fpr has its column in the console
    results = json.loads(Path("out/results.json").read_text())
    assert results["reference_training"].startswith("miaudit's loop (sgd, 3 epochs, lr 0.05, batch 16")
    assert "| TPR@0.4% |" in Path("out/report.md").read_text()
    page = Tables()
    page.feed(Path("out/report.html").read_text())
    head = next(r for r in page.rows if "risk_rank" in r)  # the most exposed records (the records at risk: above)
    start = page.rows.index(head)
    ids = [r[head.index("record")] for r in page.rows[start + 1 : start + 21] if len(r) == len(head)]
    assert len(ids) == 20 and all(i.isdigit() for i in ids) and any(int(i) >= 1000 for i in ids), ids
    assert not stale.exists() and users.exists()
    docs_name_only(Path("out/scores.csv").read_text().splitlines()[0].split(","))


ROOT = Path(__file__).resolve().parents[2]
# A column as docs write it: `<name>_n<K>.p_value`, `bmia_n1.log_p`, `<attack>.score`, or a bare `p_value_raw`.
DOTTED = re.compile(r"^(?:[\w-]*<[^<>`]+>[\w<>-]*|[A-Za-z][\w-]*_n(?:\d+|<\w+>))\.([a-z][a-z0-9_]*)$")
BARE = re.compile(r"^\.?((?:log_)?p_value(?:_[a-z0-9_]+)?|log_p(?:_[a-z0-9_]+)?)$")


def docs_name_only(columns: list[str]) -> None:
    """Every column a run wrote is in the code's list (which the docs' table is generated from), and every
    column name the docs and README write exists."""
    suffixes = {c.rsplit(".", 1)[1] for c in columns if "." in c}
    assert {c for c in columns if "." not in c} <= set(RECORD_COLUMNS) and suffixes <= set(ATTACK_COLUMNS)
    named = []
    for page in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for span in re.findall(r"`([^`\n]+)`", page.read_text(encoding="utf-8")):
            match = DOTTED.match(span.strip()) or BARE.match(span.strip())
            if match and match.group(1) not in suffixes:
                named.append(f"{span} in {page.relative_to(ROOT)}")
    assert not named, f"the docs name columns no scores.csv has: {named}"


def test_checks_that_ran_late_now_run_before_any_model(tiny_raw: dict[str, Any], isolated_cache: Path) -> None:
    refused(invoke("run", write("a.yaml", {**tiny_raw, "min_fpr": 0.001}), "--out", "a"), "min_fpr: 0.001", "60")
    np.savez("wide.npz", x=np.zeros((100, 12), np.float32), y=np.arange(100) % 10)
    raw = {**tiny_raw, "reference_data": {"path": "wide.npz"}}
    refused(invoke("run", write("b.yaml", raw), "--out", "b"), "reference_data:", "(12,)")
    assert models_in(isolated_cache) == 0 and not Path("a").exists() and not Path("b").exists()


@pytest.mark.slow
def test_unwritable_cache_is_one_line_and_a_read_only_one_serves_its_models(
    tiny_raw: dict[str, Any], isolated_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Permission bits do not stop root: the probe's answer is what is replaced here."""
    config, probe = write("c.yaml", tiny_raw), store_mod.unwritable
    monkeypatch.setattr(store_mod, "unwritable", lambda *where: "Permission denied")
    refused(invoke("run", config, "--out", "a"), "cache_dir:", "not writable (Permission denied)")
    monkeypatch.setattr(store_mod, "unwritable", probe)
    assert invoke("run", config, "--out", "b").exit_code == 0
    monkeypatch.setattr(store_mod, "unwritable", lambda *where: "Read-only file system")
    monkeypatch.setattr(storage.store, "FileLock", None)  # a read-only cache takes no lock: this would fail
    res = invoke("run", config, "--out", "c")
    assert res.exit_code == 0, res.output
    assert "reference 2/2: loaded from cache" in res.output
    assert not re.search(r"^(target|reference \d/\d): trained", res.output, flags=re.M)
    other = write("d.yaml", {**tiny_raw, "seed": 1})  # a model the cache does not hold
    res = invoke("run", other, "--out", "d")
    assert res.exit_code == 2 and "error: cache_dir:" in res.output.strip().splitlines()[-1]
    assert "read-only and holds no target model" in res.output and "Traceback" not in res.output


def test_a_held_out_directory_is_refused_at_once(tiny_raw: dict[str, Any]) -> None:
    with outdir.reserved(Path("held")):
        line = refused(invoke("run", write("c.yaml", tiny_raw), "--out", "held"), "held", "in use by another")
    assert "force" not in line
    Path("full").mkdir()
    (Path("full") / "results.json").write_text("{}")
    refused(invoke("run", "c.yaml", "--out", "full"), "--force")


def test_interrupt_says_what_was_kept(tiny_raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(cfg: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "run", interrupted)
    res = invoke("run", write("c.yaml", tiny_raw), "--out", "o")
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 130 and len(lines) == 1 and lines[0].startswith("interrupted:"), res.output
    assert "nothing was written to o" in lines[0] and not Path("o").exists()


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("train.epochs=true", ("train.epochs:", "expected a number, got true")),
        ("references=false", ("references:", "got false")),
        ("dataset.subset=100000", ("dataset.subset: 100000", "digits has 1797")),
        ("model=hf:/nonexistent", ("model: hf:/nonexistent",)),
        ("device=mps", ("device: mps", "not available")),
    ],
)
def test_silent_coercions_are_refused(tiny_raw: dict[str, Any], override: str, words: tuple[str, ...]) -> None:
    line = refused(invoke("run", write("c.yaml", tiny_raw), "--set", override, "--out", "o"), *words)
    assert "model: model:" not in line and "CUDA" not in line


@pytest.mark.slow
def test_csv_labels_named_otherwise_or_written_as_text(tiny_raw: dict[str, Any], isolated_cache: Path) -> None:
    rng = np.random.default_rng(0)
    names = [f"f{i}" for i in range(13)]
    rows = [",".join([*map(str, rng.normal(size=13).round(3)), ["cat", "dog", "emu"][i % 3]]) for i in range(300)]
    Path("d.csv").write_text(",".join([*names, "label"]) + "\n" + "\n".join(rows) + "\n")
    raw = {**tiny_raw, "dataset": {"path": "d.csv"}, "references": 0, "attacks": ["attack-p"]}
    line = refused(invoke("run", write("c.yaml", raw), "--out", "o"), "its 14 columns", "f12", "e.g. label")
    assert "dataset.label_column" in line
    raw["dataset"]["label_column"] = "label"
    res = invoke("run", write("c.yaml", raw), "--out", "o")
    assert res.exit_code == 0, res.output
    assert "text labels; classes numbered in sorted order: cat=0, dog=1, emu=2" in res.output
