"""What a new user tripped over, round three (issue 49): a reference-free audit, malformed endpoint URLs, a
many-run DP audit of a config without DP, SIGTERM with training workers, the records ranked by the test that
flags them, one TPR at FPR, ``plan --runs``, quiet DP logs, the schema's required fields."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from _cli import invoke, refused
from typer.testing import CliRunner

from miaudit.cli import app
from tests.conftest import require_data

pytestmark = pytest.mark.slow  # every test here trains a model (or steps an optimizer)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(name: str, raw: dict[str, Any]) -> str:
    Path(name).write_text(yaml.safe_dump(raw))
    return name


def test_a_reference_free_gls_only_audit_finishes_with_its_report(tiny_raw: dict[str, Any]) -> None:  # item 0
    res = invoke("run", write("gls.yaml", {**tiny_raw, "references": 0, "attacks": [{"name": "gls"}]}), "--out", "o")
    assert res.exit_code == 0, res.output
    report = Path("o/report.md").read_text()
    assert "Risk ranking: GLS" in report and "most vulnerable records beside the average" not in report
    assert "worst_case" not in json.loads(Path("o/results.json").read_text())
    assert Path("o/report.html").is_file()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:99999/v2/models/x/infer", "Port out of range"),
        ("http://exa mple/x", "host 'exa mple'"),
        ("http://127.0.0.1:8080:9/x", "8080:9"),
        ("http://127.0.0.1:abc/x", "abc"),
    ],
)
def test_an_endpoint_url_with_a_bad_port_or_host_is_refused_in_one_line(url: str, why: str) -> None:  # item 0
    np.save("m.npy", np.arange(100))
    np.save("n.npy", np.arange(100, 200))
    raw = {"dataset": "digits", "references": 1, "train": {"epochs": 1}, "members": "m.npy", "nonmembers": "n.npy",
           "target": {"endpoint": url, "protocol": "v2", "output": "logits", "architecture": "mlp"}}  # fmt: skip
    refused(invoke("run", write("bad.yaml", raw), "--out", "o"), "target.endpoint", why)
    assert not Path("o").exists()


def test_a_many_run_dp_audit_without_train_dp_is_refused_before_the_power_line() -> None:  # item 0
    line = refused(invoke("dp-audit", write("nodp.yaml", {"dataset": "digits", "model": "mlp"}), "--runs", "5",
                          "--out", "o"), "train.dp")  # fmt: skip
    assert "power" not in line and not Path("o").exists()


def session_processes(sid: int) -> list[int]:
    """The processes of a session (a run started with ``start_new_session``: itself and its workers)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # the session id; a zombie has ended
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists() or not hasattr(signal, "SIGTERM"), reason="Linux /proc")
@pytest.mark.parametrize("via_timeout", [False, True])
def test_sigterm_ends_the_run_and_its_training_workers_as_ctrl_c_does(
    tiny_raw: dict[str, Any], isolated_cache: Path, via_timeout: bool
) -> None:  # item 1
    # full digits, 80 epochs, 6 references: each model trains for seconds, in two worker processes (two torch
    # threads), so the run lasts well past the timeout's 10 s even on an idle machine
    raw = {**tiny_raw, "dataset": "digits", "references": 6, "train": {**tiny_raw["train"], "epochs": 80}}
    write("term.yaml", raw)
    env = {k: v for k, v in os.environ.items() if k != "MKL_NUM_THREADS"}
    env |= {"OMP_NUM_THREADS": "2", "MIAUDIT_CACHE_DIR": str(isolated_cache), "COLUMNS": "200"}
    command = [sys.executable, "-m", "miaudit.cli", "run", "term.yaml", "--out", "term"]
    if via_timeout:  # `timeout` sends SIGTERM to its child at the deadline
        command = ["timeout", "10", *command]
    log = open("term.log", "w")  # noqa: SIM115 - read while the run writes it
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while "worker processes," not in Path("term.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        while not via_timeout and "trained in" not in Path("term.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, Path("term.log").read_text()
        assert len(session_processes(proc.pid)) >= 3 - via_timeout  # the run and its two workers
        if not via_timeout:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        deadline = time.monotonic() + 15
        while session_processes(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert session_processes(proc.pid) == []
    finally:
        for pid in session_processes(proc.pid):
            os.kill(pid, signal.SIGKILL)
        log.close()
    text = Path("term.log").read_text()
    assert rc == (124 if via_timeout else 143), text
    assert not Path("term").exists() and "Traceback" not in text
    last = text.strip().splitlines()[-1]
    assert last.startswith("terminated (SIGTERM): ") and "nothing was written to term" in last, text
    if via_timeout:
        return
    kept = int(last.split(": ", 1)[1].split()[0])
    assert "kept in the cache" in last and kept >= 1 and len(list(isolated_cache.rglob("*.safetensors"))) >= kept
    res = invoke("run", "term.yaml", "--out", "term")  # the same command then finishes, loading what was kept
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def leaky_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Location (2,500 records), 4 references, GLS among the attacks: records to rank, worst cases to count."""
    require_data("location")
    where = tmp_path_factory.mktemp("leaky")
    raw = {"dataset": {"name": "location", "subset": 2500}, "model": "mlp", "seed": 3, "references": 4,
           "attacks": [{"name": "gls"}, {"name": "attack-p"}, {"name": "lira"}, {"name": "rmia"}]}  # fmt: skip
    (where / "leaky.yaml").write_text(yaml.safe_dump(raw))
    with pytest.MonkeyPatch.context() as mp:  # a module's fixture runs before the per-test cache is set
        mp.setenv("MIAUDIT_CACHE_DIR", str(where / "cache"))
        res = invoke("run", str(where / "leaky.yaml"), "--out", str(where / "out"))
    assert res.exit_code == 0, res.output
    return where / "out"


def test_the_most_exposed_records_are_ranked_by_the_test_that_flags_the_records_at_risk(leaky_run: Path) -> None:
    # item 3: GLS ran (it used to rank the records first); the ranking follows the attack records_at_risk names,
    # on the p-values that flag them, so the records it flags are the top ranks
    import pandas as pd

    results = json.loads((leaky_run / "results.json").read_text())
    named = results["records_at_risk"]["attack"]
    assert named is not None and named != "gls"
    table = pd.read_csv(leaky_run / "scores.csv")
    assert table["risk_rank"].tolist() == list(range(1, len(table) + 1))  # most exposed first
    slug = named.replace(" (n=", "_n").rstrip(")")
    column = f"{slug}.p_value_screened" if f"{slug}.p_value_screened" in table else f"{slug}.p_value"
    p = table[column].to_numpy()
    tested = p[~np.isnan(p)]  # the screen's records (issue 45) first, ranked by the p-values that name them
    assert (np.diff(tested) >= 0).all() and np.isnan(p[len(tested) :]).all()
    flagged = table["risk_rank"][table["at_risk"] == 1]
    assert sorted(flagged) == list(range(1, len(flagged) + 1))  # the flagged records are the top ranks
    report = (leaky_run / "report.md").read_text()
    assert (
        f"## Most exposed records (ranked by {named}: smallest p-value, the test that names the records at risk)"
        in report
    )
    assert f"Ranked by {named}, the test that names the records at risk" in (leaky_run / "report.html").read_text()
    for text in (report, (leaky_run / "report.html").read_text()):  # item 10: a flag in plain words
        assert "What a flag means for one record:" in text and "It is not proof that this record was trained on" in text


def test_worst_case_all_members_is_the_tables_tpr_at_one_percent_fpr(leaky_run: Path) -> None:  # item 4
    results = json.loads((leaky_run / "results.json").read_text())
    by_attack = results["worst_case"]["by_attack"]
    tests = [a for a in results["attacks"] if a["label"] in by_attack]
    assert len(tests) == 3 and any(a["tpr_at_fpr"]["0.01"] > 0 for a in tests)
    for a in tests:
        assert by_attack[a["label"]]["average"]["tpr"] == a["tpr_at_fpr"]["0.01"]
        assert by_attack[a["label"]]["average"]["ci"] == a["tpr_at_fpr_ci"]["0.01"]


DP = {"epsilon": 4.0, "delta": 1e-5, "max_grad_norm": 1.0}


def test_plan_runs_plans_the_many_run_dp_audit_and_that_audit_is_quiet(tiny_raw: dict[str, Any]) -> None:
    # items 8 and 9: plan --runs names the runs, the power line and a time, before any training; the audit's
    # log is a few lines however many runs (one per stack of models)
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    path = write("m.yaml", {**tiny_raw, "train": {**tiny_raw["train"], "epochs": 2, "dp": DP}})
    res = invoke("plan", path, "--runs", "30")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("many-run DP audit (miaudit dp-audit --runs 30): 60 runs (2 x 30) of DP-SGD")
    assert lines[1].startswith("power: 60 runs x 16 canaries per run (960 slots) can show at most epsilon")
    assert re.fullmatch(r"training: about \d+ s for 60 models \(one epoch of a stack [\d.]+ s, timed on this machine\)",
                        lines[2])  # fmt: skip
    refused(invoke("plan", path, "--runs", "1"), "--runs", "at least 2")
    refused(invoke("plan", write("nodp.yaml", tiny_raw), "--runs", "5"), "train.dp")
    res = CliRunner().invoke(app, ["dp-audit", path, "--runs", "60", "--out", "m"])
    assert res.exit_code == 0, res.output
    stderr = [x for x in res.output.splitlines() if x.strip() and x not in res.stdout.splitlines()]
    assert 1 <= len(stderr) <= 5, stderr  # the power line and one line per stack of 50 models (120 models)


def test_dp_audit_reports_speak_of_canaries_not_a_users_calibration(tiny_raw: dict[str, Any]) -> None:  # item 9
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    from miaudit.report import load_results, sections

    raw = {**tiny_raw, "train": {**tiny_raw["train"], "dp": DP}, "canaries": {"count": 40, "kind": "crafted"}}
    res = invoke("dp-audit", write("c.yaml", raw), "--out", "o")
    assert res.exit_code == 0, res.output
    results = load_results("o/results.json")
    notes = " ".join(results.notes or [])
    assert "calibration: none" not in notes and "BMIA" not in notes and "canaries' p-values are raw" in notes
    assert "calibration: none" not in Path("o/report.md").read_text()
    # a canary leak beside "no violation": the sentence that DP at that epsilon permits it
    assert results.verdict is not None and results.dp_audit is not None
    leak = results.model_copy(
        update={
            "verdict": results.verdict.model_copy(update={"leaks": True}),
            "dp_audit": results.dp_audit.model_copy(update={"violated": False}),
        }  # fmt: skip
    )
    canaries = next(line for line in sections.verdict_lines(leak) if line.startswith("Canaries: "))
    eps = results.dp_audit.compared_with.epsilon if results.dp_audit.compared_with else None
    assert eps is not None and f"a leak this size is one DP at epsilon {eps:.3g} permits" in canaries
    violated = leak.model_copy(update={"dp_audit": results.dp_audit.model_copy(update={"violated": True})})
    assert "permits" not in " ".join(sections.verdict_lines(violated))


def test_plan_of_an_endpoint_plans_the_files_sizes_the_cached_references_and_the_query_cost(
    tiny_raw: dict[str, Any],
) -> None:  # item 8: no server is asked anything by plan
    np.save("m.npy", np.arange(100))
    np.save("n.npy", np.arange(100, 200))
    raw = {"dataset": {"name": "digits", "subset": 300}, "references": 2, "train": tiny_raw["train"],
           "members": "m.npy", "nonmembers": "n.npy", "attacks": [{"name": "attack-r"}],
           "target": {"endpoint": "http://127.0.0.1:9/v2/models/x/infer", "protocol": "v2", "output": "logits",
                      "architecture": "mlp"}}  # fmt: skip
    res = invoke("plan", write("ep.yaml", raw))
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("digits: 100 members, 100 non-members, ")  # the files' sets, not the default split
    assert re.search(r"training \(run, your target\): about \d+ s for 2 model\(s\) to train; reference", res.output)
    assert "endpoint: the audit reads the answers for 300 records; 300 are not in the answer store: 300 queries " \
        "in 2 requests of up to 256" in res.output  # fmt: skip
    # models of the references' recipe trained on this machine: their measured times plan the endpoint's
    ours = {
        **tiny_raw,
        "dataset": {"name": "digits", "subset": 300},
        "references": 2,
        "attacks": [{"name": "attack-r"}],
    }
    assert invoke("run", write("ours.yaml", ours), "--out", "ours").exit_code == 0
    assert "all 3 models in the cache, nothing to train" in invoke("plan", "ours.yaml").output
    res = invoke("plan", "ep.yaml")  # the endpoint's references: not cached, but models of their recipe are
    assert re.search(r"reference [\d.]+ s per model \(measured on this machine: [23] such model", res.output), (
        res.output
    )


def test_a_rerun_with_every_model_cached_says_nothing_of_how_models_train(tiny_raw: dict[str, Any]) -> None:
    # item 11b: "models trained one at a time" is about models to train; a rerun trains none
    path = write("tiny.yaml", {**tiny_raw, "references": 4, "attacks": [{"name": "lira"}]})
    first = invoke("run", path, "--out", "a")
    assert first.exit_code == 0 and "models trained one at a time" in first.output, first.output
    again = invoke("run", path, "--out", "b")
    assert again.exit_code == 0 and "loaded from cache" in again.output, again.output
    assert "trained one at a time" not in again.output and "worker process" not in again.output


def test_compare_of_a_many_run_dp_audit_says_what_it_is(tiny_raw: dict[str, Any]) -> None:  # item 11b
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    path = write("m.yaml", {**tiny_raw, "train": {**tiny_raw["train"], "epochs": 1, "dp": DP}})
    assert invoke("dp-audit", path, "--runs", "4", "--out", "m").exit_code == 0
    line = refused(invoke("compare", "m", "m", "--out", "c"), "multi-run DP audit", "no attack table")
    assert "unknown membership" not in line


def test_a_one_run_dp_audit_says_its_power_before_training_and_plan_says_it_too(tiny_raw: dict[str, Any]) -> None:
    # item 8: the power the audit reports after training (max_attainable) is said first, by dp-audit and by plan
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    raw = {**tiny_raw, "train": {**tiny_raw["train"], "dp": DP}, "canaries": {"count": 40, "kind": "crafted"}}
    path = write("c.yaml", raw)
    planned = [x for x in invoke("plan", path).output.splitlines() if x.startswith("dp-audit (one run): power: ")]
    res = invoke("dp-audit", path, "--out", "o")
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[0]
    found = json.loads(Path("o/results.json").read_text())["dp_audit"]
    assert first.startswith("power: 40 canaries, 2 observer(s): the bound can show at most epsilon")
    assert f"at most epsilon {found['max_attainable']:.3f}" in first and planned == [f"dp-audit (one run): {first}"]
    assert "too little power to detect any violation of the declared epsilon 4" in first


def test_an_adapter_module_is_found_beside_the_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # item 6: like every path in a config, a module it names resolves in the config's folder (cwd elsewhere)
    from miaudit.config.run import load

    beside = tmp_path / "conf"
    beside.mkdir()
    (beside / "my_adapter_49.py").write_text(
        "class Wire:\n    def body(self, x):\n        return {}\n    def parse(self, payload, n):\n        return []\n"
    )
    np.save(beside / "m.npy", np.arange(50))
    np.save(beside / "n.npy", np.arange(50, 100))
    (beside / "a.yaml").write_text(yaml.safe_dump(
        {"dataset": "digits", "members": "m.npy", "nonmembers": "n.npy",
         "target": {"endpoint": "http://127.0.0.1:9/x", "adapter": "my_adapter_49:Wire", "architecture": "mlp"}}
    ))  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(sys, "path", list(sys.path))
    cfg = load(beside / "a.yaml")
    assert cfg.target is not None and cfg.target.adapter == "my_adapter_49:Wire"
    from miaudit.endpoint.protocols import wire_format

    assert wire_format(cfg.target.protocol, cfg.target.adapter).body(np.zeros((1, 2))) == {}  # imported from conf/
