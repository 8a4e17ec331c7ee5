"""What a new user tripped over, round four (issue 54): the config commands and the keys of unlearn and
infer-dataset, compare of two unlearning runs, output files others can read, the question an infer-dataset run
records, a plan that writes nothing, results-schema.md's parts. (Item 1, GLS on a causal LM: tests/test_plan.py;
item 0, tests that need ../shared/data skip without it: tests/conftest.py's ``require_data``.)"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from _cli import invoke

from miaudit import data
from miaudit.config import run as config
from miaudit.data import location
from miaudit.results import AuditReport, Comparison
from tests.conftest import TINY_RUN

ROOT = Path(__file__).resolve().parents[2]
NEW_KEYS = ("unlearning", "suspect", "validation", "inference")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def unreadable(folder: Path) -> list[str]:
    """The files under ``folder`` others cannot read."""
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and not p.stat().st_mode & stat.S_IROTH)


def write(name: str, raw: dict[str, Any]) -> str:
    Path(name).write_text(yaml.safe_dump(raw))
    return name


# --- item 5: config, schema config and init know the keys of unlearn and infer-dataset ----------------------------


def test_config_prints_an_unlearn_and_an_infer_dataset_config_with_their_own_keys() -> None:
    np.save("validation.npy", np.arange(20, 30))
    unlearn = write("u.yaml", {"dataset": "digits", "unlearning": {"forget": 50, "method": "noop"}})
    infer = write("i.yaml", {"dataset": "digits", "suspect": [3, 5, 7, 11, 13], "validation": "validation.npy"})
    shown = invoke("config", unlearn)
    assert shown.exit_code == 0, shown.output
    read = yaml.safe_load(shown.output)
    assert read["unlearning"]["forget"] == 50 and read["unlearning"]["method"]["name"] == "noop"
    assert read["dataset"]["name"] == "digits" and read["references"] == 4  # the run's keys, defaults filled in
    shown = invoke("config", infer, "--set", "inference.permutations=199")
    assert shown.exit_code == 0, shown.output
    read = yaml.safe_load(shown.output)
    assert read["suspect"] == [3, 5, 7, 11, 13] and read["validation"] == list(range(20, 30))  # the file, read
    assert read["inference"] == {"level": 0.05, "permutations": 199}
    assert "suspect: [3, 5, 7, 11, 13]" in shown.output  # a record set on one line
    bad = invoke("config", write("b.yaml", {"dataset": "digits", "unlearning": {"forget": 50, "metod": "noop"}}))
    assert bad.exit_code == 2 and "unlearning.metod" in bad.output and len(bad.output.strip().splitlines()) == 1


def test_schema_config_names_the_new_keys_and_takes_every_documented_config() -> None:
    printed = invoke("schema", "config")
    assert printed.exit_code == 0
    schema = json.loads(printed.output)
    assert set(NEW_KEYS) <= set(schema["properties"])
    assert json.loads(invoke("config", "--schema").output) == schema
    validator = jsonschema.Draft202012Validator(schema)
    configs = {p.name: yaml.safe_load(p.read_text()) for p in (ROOT / "examples" / "configs").glob("*.yaml")}
    configs |= {
        "shorthands": {"dataset": "digits", "queries": "q.npy", "executor": "local", "calibration": "none"},
        "unlearn": {"dataset": "digits", "unlearning": {"forget": 50, "method": "retrain"}},
        "unlearn method": {"dataset": "location", "unlearning": {"forget": 100, "method": {"name": "finetune"}}},
        "infer": {"dataset": "digits", "suspect": [1, 2, 3, 4], "validation": "v.npy", "inference": {"level": 0.01}},
    }
    for name, raw in configs.items():
        assert not [e.message for e in validator.iter_errors(raw)], name
    for wrong in ({"unlearning": {"forget": 5, "methd": "noop"}}, {"suspect": "x", "inference": {"lvl": 1}}):
        assert not validator.is_valid(wrong)  # still strict where the commands are


def test_init_lists_the_new_keys_commented_out_and_its_file_still_reads_as_the_default_audit() -> None:
    assert invoke("init", "mine.yaml").exit_code == 0
    text = Path("mine.yaml").read_text()
    for key in NEW_KEYS:
        assert re.search(rf"^# {key}: null +# .*`miaudit (unlearn|infer-dataset)`", text, flags=re.M), key
    assert re.search(r"^  # level: 0.05 ", text, flags=re.M)  # a hidden section's keys stay hidden
    assert config.from_dict(yaml.safe_load(text)) == config.RunConfig()


# --- item 8: results.json takes the umask's mode, as every other output file ---------------------------------------


def test_results_json_is_written_with_the_umasks_mode(umask_022: None) -> None:
    report = AuditReport.load(ROOT / "tests" / "results" / "fixtures" / "results_v1_digits_tiny.json")
    report.write("results.json")
    assert stat.S_IMODE(Path("results.json").stat().st_mode) == 0o644
    os.umask(0o077)
    report.write("private.json")  # the user's umask decides, as for the files written beside it
    assert stat.S_IMODE(Path("private.json").stat().st_mode) == 0o600
    assert AuditReport.load("results.json") == report and not list(Path().glob(".results.json*"))


# --- item 13: plan writes nothing into the cache ------------------------------------------------------------------


def fake_location(folder: Path, monkeypatch: pytest.MonkeyPatch, n: int = 300) -> Path:
    """A location archive in the real format (``n`` records, 446 binary features, 30 classes), its checksum off."""
    rng = np.random.default_rng(0)
    rows = "".join(f'"{1 + i % 30}",' + ",".join(map(str, rng.integers(0, 2, 446))) + "\n" for i in range(n)).encode()
    archive = folder / location.LOCATION_FILE
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("bangkok")
        info.size = len(rows)
        tar.addfile(info, io.BytesIO(rows))
    monkeypatch.setattr(location, "LOCATION_SHA256", None)
    return folder


def test_reading_a_data_set_inside_cache_untouched_decodes_it_without_keeping_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = fake_location(tmp_path / "data", monkeypatch)
    with data.cache_untouched():
        plain = data.load("location", data_dir=where, cache_dir=tmp_path / "cache")
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    kept = data.load("location", data_dir=where, cache_dir=tmp_path / "cache")  # a run keeps it
    np.testing.assert_array_equal(kept.x, plain.x)
    monkeypatch.setattr(location, "_parse", lambda path: pytest.fail("decoded again"))
    with data.cache_untouched():  # and plan reads what a run kept
        np.testing.assert_array_equal(data.load("location", data_dir=where, cache_dir=tmp_path / "cache").x, plain.x)


@pytest.mark.slow  # plan times one epoch of training
def test_plan_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_cache: Path) -> None:
    where = fake_location(tmp_path / "data", monkeypatch)
    raw = {"dataset": {"name": "location", "data_dir": str(where)}, "model": "mlp", "references": 2}
    said = invoke("plan", write("p.yaml", raw))
    assert said.exit_code == 0, said.output
    assert "training (run)" in said.output
    assert not [p for p in isolated_cache.rglob("*") if p.is_file()]  # the decoded data set stayed out


# --- item 14: results-schema.md has a row for every part and says when the verdict is null --------------------------


def test_results_schema_page_names_every_top_level_key_and_the_null_verdict() -> None:
    page = (ROOT / "docs" / "results-schema.md").read_text()
    parts = page.split("## The parts", 1)[1].split("## The JSON Schema", 1)[0]
    named = set(re.findall(r"`([a-z_*]+)`", parts))
    keys = set(AuditReport.json_schema()["properties"])
    n_keys = {k for k in keys if k.startswith("n_")}
    assert keys - n_keys - named == set()  # n_members, n_nonmembers, ...: the row's `n_*`
    verdict_row = next(line for line in parts.splitlines() if line.startswith("| `verdict` |"))
    assert "`null`" in verdict_row and "miaudit unlearn" in verdict_row and "miaudit infer-dataset" in verdict_row
    assert "| `dataset_inference` |" in parts


# --- items 7 and 8: two unlearning runs compared, every file readable by others ------------------------------------


def unlearn_raw(method: str) -> dict[str, Any]:
    tiny = copy.deepcopy(TINY_RUN)
    return {**{k: tiny[k] for k in ("dataset", "model", "seed", "train")}, "references": 3,
            "unlearning": {"forget": 20, "method": method}}  # fmt: skip


@pytest.fixture(scope="module")
def unlearned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two unlearning runs of the tiny digits audit (noop, retrain), written under umask 022."""
    where = tmp_path_factory.mktemp("unlearn")
    old = os.umask(0o022)
    try:
        with pytest.MonkeyPatch.context() as mp:  # a module's fixture runs before the per-test cache is set
            mp.setenv("MIAUDIT_CACHE_DIR", str(where / "cache"))
            for method in ("noop", "retrain"):
                (where / f"{method}.yaml").write_text(yaml.safe_dump(unlearn_raw(method)))
                res = invoke("unlearn", str(where / f"{method}.yaml"), "--out", str(where / method))
                assert res.exit_code == 0, res.output
    finally:
        os.umask(old)
    return where


@pytest.mark.slow
def test_compare_sets_two_unlearning_runs_side_by_side(unlearned: Path) -> None:
    a, b = json.loads((unlearned / "noop" / "results.json").read_text()), (unlearned / "retrain")
    res = invoke("compare", str(unlearned / "noop"), str(b), "--out", "cmp")
    assert res.exit_code == 0, res.output
    out = json.loads(Path("cmp/compare.json").read_text())
    assert jsonschema.Draft202012Validator(Comparison.json_schema()).is_valid(out)
    u = out["unlearning"]
    assert u["a"]["method"] == "noop" and u["b"]["method"] == "retrain" and u["same_forget"] is True
    assert u["a"]["verdict"] == a["unlearning"]["verdict"] and u["a"]["p_value"] == a["unlearning"]["p_value"]
    assert u["a"]["per_example_auc"] == a["unlearning"]["per_example_auc"]
    assert "no test of B against A is made" in u["reading"] and out["attacks"] == []
    lines = res.output.splitlines()
    row = next(line for line in lines if line.startswith("per-example AUC"))
    assert row.count("|") == 1 and f"{a['unlearning']['per_example_auc']['value']:.3f}" in row
    verdicts = f"| verdict | {a['unlearning']['verdict']} | {u['b']['verdict']} |"
    assert verdicts in Path("cmp/compare.md").read_text()
    assert "<img" not in Path("cmp/compare.html").read_text()  # no ROC: no attack table
    mixed = invoke("compare", str(unlearned / "noop"), str(ROOT / "tests"), "--out", "cmp2")  # not a run at all
    assert mixed.exit_code == 2 and "is an unlearning run" in mixed.output


@pytest.mark.slow
def test_every_file_of_an_unlearning_run_is_readable_by_others(unlearned: Path) -> None:
    assert (unlearned / "retrain" / "unlearned.safetensors").is_file()
    assert unreadable(unlearned / "noop") == unreadable(unlearned / "retrain") == []


# --- item 10: the infer-dataset run records its question ----------------------------------------------------------


@pytest.mark.slow
def test_an_infer_dataset_run_records_its_suspect_and_validation_records_and_options() -> None:
    np.save("validation.npy", np.arange(100, 140))
    raw = {**copy.deepcopy(TINY_RUN), "suspect": list(range(40, 60)), "validation": "validation.npy",
           "inference": {"permutations": 199}}  # fmt: skip
    res = invoke("infer-dataset", write("i.yaml", raw), "--out", "o")
    assert res.exit_code == 0, res.output
    recorded = json.loads(Path("o/results.json").read_text())["config"]
    assert recorded["suspect"] == list(range(40, 60)) and recorded["validation"] == list(range(100, 140))
    assert recorded["inference"] == {"level": 0.05, "permutations": 199}
    assert config.from_dict({k: v for k, v in recorded.items() if k not in NEW_KEYS})  # the rest, a run config
    report = Path("o/report.md").read_text()
    assert "Asked about suspect records 40, 41, 42, 43, 44, 45, 46, 47, ... (20 in all)" in report
    assert "validation records 100, 101" in report and "suspect: [40, 41" in Path("o/report.html").read_text()
