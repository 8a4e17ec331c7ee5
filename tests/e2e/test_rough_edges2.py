"""What a new user meets at the command line: empty record files, compare's output folder,
data sets and pairing, plan and progress with cached models, precision without false positives, report.html's
notes, piped tables, the docs' example paths. Scores-only audits on generated outputs keep most of it to
seconds; the tiny run (three small models) covers what needs training."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from _cli import invoke, refused
from markupsafe import escape
from typer.testing import Result

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("COLUMNS", raising=False)  # the width a pipe gets: rich's 80 columns


def outputs(path: str, seed: int = 0, n: int = 600, validation: bool = True) -> str:
    """Generated outputs in the npz layout: 5 classes, 2 references, members 0-149 (the target's training
    records, their true-class logit raised by 3), non-members 150-299, validation 300-449 unless not wanted."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, n)

    def logits(keep: np.ndarray) -> np.ndarray:
        z = rng.normal(size=(n, 5))
        z[np.arange(n), labels] += 1.0 + 3.0 * keep
        return z

    target_keep = np.arange(n) < 150
    ref_keep = rng.random((2, n)) < 0.5
    ref_keep[:, :450] = False  # the references train on the population only (offline)
    sets = {"members": np.arange(150), "nonmembers": np.arange(150, 300)}
    if validation:
        sets["validation"] = np.arange(300, 450)
    np.savez(
        path,
        labels=labels,
        target_logits=logits(target_keep),
        reference_logits=np.stack([logits(k) for k in ref_keep]),
        reference_keep=ref_keep,
        target_keep=target_keep,
        **sets,
    )
    return path


def score_config(name: str, npz: str, **extra: Any) -> str:
    raw = {"outputs": {"layout": "npz", "path": npz}, "attacks": ["lira", "rmia"], "references": 2, **extra}
    Path(name).write_text(yaml.safe_dump(raw))
    return name


def scored(name: str, seed: int = 0, validation: bool = True, **extra: Any) -> Path:
    """A scores-only audit of generated outputs, written to folder ``name``."""
    config = score_config(f"{name}.yaml", outputs(f"{name}.npz", seed, validation=validation), **extra)
    res = invoke("score", config, "--out", name)
    assert res.exit_code == 0, res.output
    return Path(name)


def tiny_run(raw: dict[str, Any], name: str, *options: str) -> Result:
    Path(f"{name}.yaml").write_text(yaml.safe_dump(raw))
    res = invoke("run", f"{name}.yaml", "--out", name, *options)
    assert res.exit_code == 0, res.output
    return res


def test_score_refuses_an_empty_members_npy_in_one_line() -> None:  # row 4
    np.save("empty.npy", np.zeros(0, dtype=np.int64))
    np.save("nonmembers.npy", np.arange(150, 300))
    config = score_config("s.yaml", outputs("o.npz"), members="empty.npy", nonmembers="nonmembers.npy")
    refused(invoke("score", config, "--out", "out"), "members: no records")
    assert not Path("out").exists()


def test_score_refuses_an_empty_members_txt_without_a_numpy_warning() -> None:  # row 15
    Path("empty.txt").write_text("")
    np.savetxt("nonmembers.txt", np.arange(150, 300), fmt="%d")
    config = score_config("s.yaml", outputs("o.npz"), members="empty.txt", nonmembers="nonmembers.txt")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = invoke("score", config, "--out", "out")
    refused(res, "members: no records")
    assert not [w for w in seen if issubclass(w.category, UserWarning)], [str(w.message) for w in seen]


@pytest.mark.slow
def test_compare_refuses_an_out_that_is_a_file_before_any_work() -> None:  # row 5
    a = scored("a")
    Path("afile").write_text("")
    refused(invoke("compare", str(a), str(a), "--out", "afile"), "--out", "afile", "is a file")
    assert Path("afile").read_text() == ""


@pytest.mark.slow
def test_compare_of_two_data_sets_warns_first_naming_both_and_what_it_left_out() -> None:  # row 6
    a, b = scored("digits_like", seed=0), scored("location_like", seed=1, attacks=["lira"])
    res = invoke("compare", str(a), str(b), "--out", "cmp")
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[:2]
    assert "digits_like" in first[0] and "location_like" in first[0] and "different data" in first[0], first
    assert "not compared" in first[1] and "rmia (n=2) (only in A)" in first[1], first
    c = json.loads(Path("cmp/compare.json").read_text())
    assert c["paired"] is False and c["warnings"] == first
    assert first[0] in Path("cmp/compare.md").read_text()


@pytest.mark.slow
def test_compare_lines_name_a_and_b_and_the_sentence_reads_tpr_and_auc() -> None:  # row 15
    a, b = scored("a", seed=0), scored("b", seed=1)
    res = invoke("compare", str(a), str(b), "--out", "cmp")
    assert res.exit_code == 0, res.output
    assert re.search(r"lira \(n=2\) TPR@1%: A \d+\.\d -> B \d+\.\d, B - A [+-]\d+\.\d \[", res.output), res.output
    assert re.search(r"lira \(n=2\) AUC: A 0\.\d{3} -> B 0\.\d{3}, B - A [+-]0\.\d{3} \[", res.output), res.output
    for row in json.loads(Path("cmp/compare.json").read_text())["attacks"]:
        assert "TPR@1% A" in row["verdict"] and "; AUC A" in row["verdict"], row["verdict"]
        assert "A -> B" not in res.output


@pytest.mark.slow
def test_a_run_and_its_own_export_then_score_compare_paired(tiny_raw: dict[str, Any]) -> None:  # row 15
    tiny_run(tiny_raw, "run")
    assert invoke("export", "run.yaml", "--out", "outputs.npz").exit_code == 0
    Path("s.yaml").write_text(
        yaml.safe_dump({"outputs": {"layout": "npz", "path": "outputs.npz"}, "attacks": ["attack-p"]})
    )
    assert invoke("score", "s.yaml", "--out", "scored").exit_code == 0
    res = invoke("compare", "run", "scored", "--out", "cmp")
    assert res.exit_code == 0, res.output
    c = json.loads(Path("cmp/compare.json").read_text())
    assert c["paired"] is True and "original_record" in c["pairing"], c["pairing"]
    (row,) = c["attacks"]  # the same scores on the same records: no difference, and an interval of width 0
    assert row["auc"]["difference"] == 0 and row["auc"]["ci"] == [0, 0]


@pytest.mark.slow
def test_plan_and_the_progress_count_cached_models_as_cached(tiny_raw: dict[str, Any]) -> None:  # rows 7, 15
    Path("run.yaml").write_text(yaml.safe_dump(tiny_raw))
    before = invoke("plan", "run.yaml")
    assert before.exit_code == 0 and "for 3 model(s) to train" in before.output, before.output
    tiny_run(tiny_raw, "run")
    after = invoke("plan", "run.yaml")
    assert "all 3 models in the cache, nothing to train" in after.output, after.output
    # a DP target with the references already in the cache: no training promised once only they remain
    dp = tiny_run(tiny_raw, "dp", "--set", "train.dp.epsilon=8")
    target = next(line for line in dp.output.splitlines() if line.startswith("target:"))
    assert "trained in" in target and "left" not in target, dp.output
    assert "reference 1/2: loaded from cache" in dp.output, dp.output


@pytest.mark.slow
def test_plan_times_a_dp_target_apart_from_its_references() -> None:  # row 7
    raw = {
        "dataset": {"name": "digits", "subset": 300},
        "model": "mlp",
        "train": {"epochs": 2, "batch_size": 16, "dp": {"epsilon": 4, "delta": 1.0e-5, "max_grad_norm": 1.0}},
        "references": 1,
        "attacks": [{"name": "rmia", "references": 1}],
        "canaries": {"count": 20, "kind": "crafted"},
    }
    Path("dp.yaml").write_text(yaml.safe_dump(raw))
    res = invoke("plan", "dp.yaml")
    assert res.exit_code == 0, res.output
    line = next(s for s in res.output.splitlines() if s.startswith("training"))
    assert "(dp-audit (one run))" in line and "for 2 model(s) to train" in line, line
    target, reference = (float(x) for x in re.findall(r"(\d+\.\d+) s per epoch", line))
    assert target > reference, line  # DP-SGD's per-sample gradients cost more than the references' plain steps
    assert invoke("dp-audit", "dp.yaml", "--out", "dp").exit_code == 0
    assert "all 2 models in the cache" in invoke("plan", "dp.yaml").output


@pytest.mark.slow
def test_precision_gives_no_point_estimate_from_zero_flagged_nonmembers() -> None:  # row 9
    run = scored("a")
    r = json.loads((run / "results.json").read_text())
    undefined = [
        (a["label"], level) for a in r["attacks"] for level, at in a["ppv"]["prior_0.5"].items() if at["ppv"] is None
    ]
    assert undefined, "no operating point without false positives: the test exercises nothing"
    html = (run / "report.html").read_text()
    precision = html[html.index("PPV in percent") :]  # the precision table (a TPR of 100.0 elsewhere is fine)
    precision = precision[: precision.index("</table>")]
    assert not re.search(r">100\.0 \[", precision) and ">undefined [" in precision
    assert "undefined: no non-member flagged" in (run / "report.md").read_text()


@pytest.mark.slow
def test_report_html_shows_the_notes_report_md_shows() -> None:  # row 15
    run = scored("a", validation=False, calibration=None)
    notes = json.loads((run / "results.json").read_text())["notes"]
    assert any("NOT calibrated" in n for n in notes)
    html = (run / "report.html").read_text()
    assert all(str(escape(n)) in html for n in notes), notes


@pytest.mark.slow
def test_piped_console_tables_are_not_cut() -> None:  # row 10
    long = [{"name": "lira", "label": "lira with two references, offline, fixed variance"}, "rmia"]
    run = scored("a", attacks=long)  # a table wider than 80 columns
    res = invoke("score", "a.yaml", "--out", "again")
    assert res.exit_code == 0 and "\u2026" not in res.output, res.output
    for a in json.loads((run / "results.json").read_text())["attacks"]:
        assert f"{a['auc']:.3f}" in res.output and a["label"] in res.output


def test_the_docs_cite_only_examples_paths_that_exist() -> None:  # row 14
    cited = {
        (m.group(0).rstrip(".,:;/-"), str(p.relative_to(ROOT)))
        for p in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
        for m in re.finditer(r"(?<![\w/.-])examples/[\w./-]*", p.read_text(encoding="utf-8"))
    }
    assert cited and all((ROOT / path).exists() for path, _ in cited), [c for c in cited if not (ROOT / c[0]).exists()]
