"""Tracking against a real ``mlflow server`` (sqlite in tmp_path, a free port), read back with MLflow's own client:
one run per audit with its params, metrics, tags and artifacts, results.json naming it; a server that dies before
the logging loses nothing and ``miaudit track DIR`` logs the folder later. Needs MLflow (the tracking extra, in
the lock): skipped, saying so, without it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
import yaml
from _cli import invoke

from miaudit.results import AuditReport
from miaudit.workflow.logged import config_hash, name

pytest.importorskip("mlflow", reason="MLflow is not installed: the tracking extra (pip install -e '.[tracking]')")
from mlflow.tracking import MlflowClient

pytestmark = pytest.mark.slow  # starts a server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(where: Path, port: int) -> subprocess.Popen[bytes]:
    """``mlflow server`` on ``port``, its store in ``where``; returns once /health answers (half a minute on a
    busy 2-core machine: one server serves the module)."""
    mlflow = shutil.which("mlflow", path=str(Path(sys.executable).parent)) or "mlflow"
    command = [mlflow, "server", "--backend-store-uri", f"sqlite:///{where / 'mlflow.db'}", "--default-artifact-root",
               str(where / "artifacts"), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]  # fmt: skip
    log = (where / "server.log").open("ab")
    server = subprocess.Popen(command, cwd=where, stdout=log, stderr=log, start_new_session=True)
    for _ in range(240):
        try:
            if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).ok:
                return server
        except requests.RequestException:
            time.sleep(0.5)
    stop(server)
    pytest.fail(f"mlflow server did not start: {(where / 'server.log').read_text()[-2000:]}")


def stop(server: subprocess.Popen[bytes]) -> None:
    os.killpg(server.pid, signal.SIGTERM)  # the server and its workers (its own session)
    server.wait(timeout=30)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    proc = start(tmp_path_factory.mktemp("mlflow"), port)
    yield f"http://127.0.0.1:{port}"
    stop(proc)


def outputs(path: Path, n: int = 450) -> str:
    """Outputs in the npz layout that leak: members 0-149 (their true-class logit raised), non-members 150-299,
    the population of two references 300-449."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, n)

    def logits(keep: np.ndarray) -> np.ndarray:
        z = rng.normal(size=(n, 5))
        z[np.arange(n), labels] += 1.0 + 3.0 * keep
        return z

    ref_keep = (rng.random((2, n)) < 0.5) & (np.arange(n) >= 300)
    target_keep = np.arange(n) < 150
    np.savez(path, labels=labels, target_logits=logits(target_keep), target_keep=target_keep,
             reference_logits=np.stack([logits(k) for k in ref_keep]), reference_keep=ref_keep,
             members=np.arange(150), nonmembers=np.arange(150, 300))  # fmt: skip
    return str(path)


def score(tmp_path: Path, name: str, *flags: str, **keys: Any) -> tuple[Any, Path]:
    config = tmp_path / f"{name}.yaml"
    raw = {"outputs": {"layout": "npz", "path": outputs(tmp_path / "o.npz")}, "attacks": ["lira", "rmia"], **keys}
    config.write_text(yaml.safe_dump(raw))
    return invoke("score", str(config), "--out", str(tmp_path / name), *flags), tmp_path / name


def artifacts(client: MlflowClient, run_id: str) -> set[str]:
    return {f.path for f in client.list_artifacts(run_id)}


def test_an_audit_is_one_run_read_back_by_mlflows_client(server: str, tmp_path: Path) -> None:
    client = MlflowClient(server)
    parent = client.create_run(client.create_experiment("training"), run_name="train").info.run_id
    tracking = {"mlflow": server, "experiment": "audits", "run_name": "release-1", "tags": {"team": "privacy"},
                "parent_run_id": parent}  # fmt: skip
    res, out = score(tmp_path, "a", "--fail-on", "leaks", tracking=tracking)
    assert res.exit_code == 1, res.output  # the outputs leak: the gate fails, after the logging
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert lines[-1].startswith("gate failed (exit 1): leaks holds") and lines[-2].startswith("tracked: MLflow run")
    saved = json.loads((out / "results.json").read_text())
    exp = client.get_experiment_by_name("audits")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    assert saved["tracking"] == {"tracker": "mlflow", "host": server.removeprefix("http://"), "experiment": "audits",
                                 "experiment_id": exp.experiment_id, "run_id": run.info.run_id}  # fmt: skip
    p, m, t = run.data.params, run.data.metrics, run.data.tags
    assert (
        p["command"] == "score"
        and p["dataset"] == saved["dataset"]
        and p["attacks"] == ", ".join(a["label"] for a in saved["attacks"])
    )
    assert len(p["config_hash"]) == 16 and p["seed"] == "0"
    for a in saved["attacks"]:  # every attack's numbers, as results.json holds them
        label = name(a["label"])
        assert label == a["label"].split(" ")[0] + "_n_2"  # lira (n=2): lira_n_2
        assert m[f"{label}.auc"] == pytest.approx(a["auc"])
        assert m[f"{label}.auc_lo"] == pytest.approx(a["auc_ci"][0])
        assert m[f"{label}.tpr_at_fpr_0.01"] == pytest.approx(a["tpr_at_fpr"]["0.01"])
        assert m[f"{label}.tpr_at_fpr_0.01_hi"] == pytest.approx(a["tpr_at_fpr_ci"]["0.01"][1])
    assert m["verdict.leaks"] == 1 and m["verdict.adjusted_p_value"] == pytest.approx(
        saved["verdict"]["adjusted_p_value"]
    )
    assert m["headline.auc"] == pytest.approx(max(a["auc"] for a in saved["attacks"]))
    assert t["miaudit.verdict"] == "leaks" and t["miaudit.command"] == "score" and t["team"] == "privacy"
    assert t["mlflow.parentRunId"] == parent and run.info.run_name == "release-1"
    assert run.info.status == "FINISHED"
    assert artifacts(client, run.info.run_id) == {"results.json", "report.md", "report.html", "roc.png"}
    logged = json.loads(Path(client.download_artifacts(run.info.run_id, "results.json", str(tmp_path))).read_text())
    assert logged["tracking"]["run_id"] == run.info.run_id  # the logged copy names its run too
    # the same audit, tracked or not, has one config hash
    res, plain = score(tmp_path, "b", "--quiet")
    assert res.exit_code == 0 and res.output == ""
    assert config_hash(AuditReport.load(plain / "results.json")) == p["config_hash"]


def test_a_server_gone_loses_nothing_and_track_logs_it_later(server: str, tmp_path: Path) -> None:
    """The server answers the check, then is gone when the audit is logged (its port closed: connection refused,
    as a server that died); then ``miaudit track DIR`` logs the folder to the server back."""
    import miaudit.workflow.tracking as tracking

    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    real_log = tracking.log

    def after_it_died(out: Path, t: Any, command: Any) -> Any:
        return real_log(out, t.revised(mlflow=gone), command)

    tracking.log = after_it_died  # type: ignore[assignment]
    try:
        res, out = score(tmp_path, "d", "--track", server, "--fail-on", "tpr@1%>=100%")
    finally:
        tracking.log = real_log  # type: ignore[assignment]
    assert res.exit_code == 0, res.output  # the gate decides the exit code; the lost log is its own line
    (warning,) = [line for line in res.output.splitlines() if line.startswith("warning: tracking:")]
    assert "params, metrics and artifacts not logged" in warning and f"miaudit track {out}" in warning
    saved = json.loads((out / "results.json").read_text())
    assert "tracking" not in saved and (out / "report.html").is_file()  # the folder complete, no run named
    refused = invoke("track", str(out), "--track", gone)
    assert refused.exit_code == 2 and "no MLflow tracking server answers" in refused.output
    res = invoke("track", str(out), "--track", server)
    assert res.exit_code == 0 and res.output.startswith(f"tracked: {out}/ as MLflow run"), res.output
    run_id = json.loads((out / "results.json").read_text())["tracking"]["run_id"]
    run = MlflowClient(server).get_run(run_id)
    assert run.data.tags["miaudit.command"] == "score" and run.info.status == "FINISHED"
    assert run.data.metrics["verdict.leaks"] == 1 and "results.json" in artifacts(MlflowClient(server), run_id)
    assert MlflowClient(server).get_experiment(run.info.experiment_id).name == "miaudit"  # --track's default
    again = invoke("track", str(out), "--track", server)
    assert again.exit_code == 2 and f"already logged as MLflow run {run_id}" in again.output
