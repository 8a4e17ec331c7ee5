"""Endpoint audits end to end on a served model: the same scores as from its weights, what each output mode
runs, refusals before any query, and the Python API's ``miaudit.Endpoint``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from _v2_server import FaultyServer
from safetensors.torch import save_file
from sklearn.datasets import make_classification

import miaudit
from miaudit.endpoint.client import EndpointError
from miaudit.endpoint.serve import module_fn
from miaudit.errors import AttackRequirementError
from miaudit.models import build_model

TRAIN = {"epochs": 3, "batch_size": 16, "lr": 0.05}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A small mlp overfit on 60 of 240 records, its checkpoint and index files, served as logits and labels."""
    out = tmp_path_factory.mktemp("endpoint")
    x, y = make_classification(n_samples=240, n_features=8, n_informative=6, n_classes=3, random_state=0)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    members, nonmembers = np.arange(60), np.arange(60, 120)
    torch.manual_seed(0)
    model = build_model("mlp", (8,), 3)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(100):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(torch.from_numpy(x[members])), torch.from_numpy(y[members])).backward()
        opt.step()
    model.eval()
    np.savez(out / "data.npz", x=x, y=y)
    np.save(out / "members.npy", members)
    np.save(out / "nonmembers.npy", nonmembers)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(out / "model.safetensors"))
    servers = {o: FaultyServer(module_fn(model), name=f"m-{o}", output=o) for o in ("logits", "label")}
    yield {"dir": out, "model": model, "x": x, "y": y, "servers": servers}
    for s in servers.values():
        s.stop()


def config(served: dict, target: dict, attacks) -> dict:
    d: Path = served["dir"]
    return {
        "dataset": {"path": str(d / "data.npz")},
        "target": target,
        "members": str(d / "members.npy"),
        "nonmembers": str(d / "nonmembers.npy"),
        "references": 2,
        "train": TRAIN,
        "attacks": attacks,
    }


def lira_scores(result: miaudit.AuditResult) -> np.ndarray:
    run = next(r for r in result.run.attacks if r.attack.name == "lira")
    order = np.argsort(result.run.experiment.query_idx)
    return run.result.scores[order]


@pytest.mark.slow
def test_logits_over_an_endpoint_score_as_the_weights_do(served):
    srv = served["servers"]["logits"]
    attacks = [{"name": "lira", "references": 2}, "attack-p"]
    rows_before = srv.rows
    endpoint = miaudit.run(config(served, {"endpoint": srv.url, "architecture": "mlp", "batch_size": 64}, attacks))
    weights = miaudit.run(
        config(served, {"architecture": "mlp", "checkpoint": str(served["dir"] / "model.safetensors")}, attacks)
    )
    np.testing.assert_allclose(lira_scores(endpoint), lira_scores(weights), rtol=1e-4, atol=1e-4)
    usage = endpoint.run.experiment.oracle.usage()
    assert usage["queries_spent"] == srv.rows - rows_before == 240  # queries, population, validation
    assert usage["output"] == "logits" and usage["requests"] == 4


@pytest.mark.slow
def test_label_output_runs_the_label_only_attacks(served):
    srv = served["servers"]["label"]
    target = {"endpoint": srv.url, "output": "label", "architecture": "mlp"}
    result = miaudit.run(config(served, target, "auto"))
    ran = {r.attack.name for r in result.run.attacks}
    assert ran == {"label-gap", "label-lira", "label-dist"}
    usage = result.run.experiment.oracle.usage()
    robust = next(r for r in result.run.attacks if r.attack.name == "label-lira")
    scored = len(robust.result.scores) + result.run.experiment.split.validation.size  # calibration records too
    assert usage["queries_by_stage"]["label-lira"] == 32 * scored
    assert 0 < usage["queries_by_stage"]["label-dist"] <= 8 * 6 * scored  # correctly labelled records only
    # the rerun asks nothing: the perturbed copies are seeded, their answers in the store
    again = miaudit.run(config(served, target, "auto"))
    assert again.run.experiment.oracle.usage()["queries_spent"] == 0


@pytest.mark.slow
def test_an_attack_the_output_cannot_feed_is_refused_before_any_query(served):
    srv = served["servers"]["label"]
    before = srv.requests
    target = {"endpoint": srv.url, "output": "label", "architecture": "mlp"}
    with pytest.raises(AttackRequirementError, match=r"attacks\.0: lira: reads the target's logits.*output: label"):
        miaudit.run(config(served, target, [{"name": "lira", "references": 2}]))
    with pytest.raises(AttackRequirementError, match="gls: needs models"):  # no weights behind an endpoint
        miaudit.run(config(served, {**target, "output": "logits"}, ["gls"]))
    assert srv.requests == before


@pytest.mark.slow
def test_the_python_api_audits_an_endpoint(served):
    x, y, srv = served["x"], served["y"], served["servers"]["logits"]
    result = miaudit.audit(
        miaudit.Endpoint(srv.url, architecture="mlp"),
        members=(x[:60], y[:60]),
        nonmembers=(x[60:120], y[60:120]),
        population=(x[120:], y[120:]),
        attacks=["attack-p", {"name": "lira", "references": 2}],
        train=TRAIN,
    )
    assert result.metrics["attack-p"]["auc"] > 0.5
    assert result.run.experiment.target.source.startswith("endpoint http://127.0.0.1")


def test_endpoint_options_are_checked_in_one_line():
    with pytest.raises(ValueError, match=r"Endpoint.output: Input should be 'logits'"):
        miaudit.Endpoint("http://127.0.0.1:1/v2/models/m/infer", architecture="mlp", output="scores")
    with pytest.raises(ValueError, match="credentials do not go in the URL"):
        miaudit.Endpoint("http://user:pw@127.0.0.1:1/v2/models/m/infer", architecture="mlp")
    with pytest.raises(ValueError, match="architecture: an endpoint's references"):
        miaudit.Endpoint("http://127.0.0.1:1/v2/models/m/infer")


@pytest.mark.slow
def test_a_server_down_at_the_start_fails_before_any_reference_trains(served, isolated_cache):
    dead = FaultyServer(lambda x: x, name="gone")
    url = dead.url
    dead.stop()
    target = {"endpoint": url, "architecture": "mlp", "retries": 1, "backoff": 0.01}
    with pytest.raises(EndpointError, match="cannot connect .*nothing was asked yet"):
        miaudit.run(config(served, target, [{"name": "lira", "references": 2}]))
    assert not list((isolated_cache / "models").glob("*/meta.json"))  # no reference trained
