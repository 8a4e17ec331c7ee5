"""``miaudit infer-dataset`` end to end on the targets a data owner meets besides the built-in recipe: a model the
user gives (``target: {architecture, checkpoint}``, docs/own-model.md) and the same model behind an endpoint
(``target: {endpoint: URL}``, docs/endpoint.md, served by ``miaudit.endpoint.serve.V2Server`` on 127.0.0.1).

The data owner knows no membership and names none: the suspect and validation records become the queries
(membership unknown) and every other record of the data is population, on which the references train. The model
overfits 300 digits (train accuracy 1.0, test about 0.94); the 100 suspects are all among them, the 100 validation
records not. Each answer must say "used", validate against ``miaudit schema``, and the endpoint must be asked each
record once, then never again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import torch
import yaml
from _cli import invoke
from safetensors.torch import save_file
from sklearn.datasets import load_digits

from miaudit.endpoint.serve import V2Server, module_fn
from miaudit.models import build_model
from miaudit.results import AuditReport, DatasetInference

pytestmark = pytest.mark.slow  # the user's model and the references train

TRAIN = {"epochs": 5, "batch_size": 32, "lr": 0.05}


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """digits as the user's data.npz, an MLP overfit on 300 of its records (safetensors), the suspect (100 of those
    300) and validation (100 others) records, and the config keys every target shares."""
    where = tmp_path_factory.mktemp("owner")
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16).astype(np.float32), y.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    trained, others = np.sort(order[:300]), order[300:]
    torch.manual_seed(0)
    model = build_model("mlp", (64,), 10)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(150):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x[trained])), torch.from_numpy(y[trained]))
        loss.backward()
        opt.step()
    model.eval()
    np.savez(where / "data.npz", x=x, y=y)
    save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(where / "model.safetensors"))
    suspect, validation = trained[:100], np.sort(others[:100])
    np.savetxt(where / "suspect.txt", suspect, fmt="%d")
    raw = {"dataset": {"path": "data.npz"}, "references": 2, "train": TRAIN,
           "suspect": "suspect.txt", "validation": [int(i) for i in validation]}  # fmt: skip
    return {"dir": where, "model": model, "raw": raw, "n": len(y)}


def _infer(owner: dict[str, Any], name: str, target: dict[str, Any], out: Path) -> DatasetInference:
    """``miaudit infer-dataset`` on the owner's config with ``target``; results.json checked against the schema."""
    path = owner["dir"] / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**owner["raw"], "target": target}))
    res = invoke("infer-dataset", str(path), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0].startswith("dataset inference on data: 100 suspect and 100 validation records")
    jsonschema.validate(json.loads((out / "results.json").read_text()), AuditReport.json_schema())
    section = AuditReport.load(out / "results.json").dataset_inference
    assert section is not None and (section.n_suspect, section.n_validation) == (100, 100)
    return section


def _used(d: DatasetInference) -> None:
    assert d.used is True and d.p_value < d.level and d.auc > 0.55
    assert not d.blind.shifted  # the suspects and the validation records are drawn alike


def test_the_users_own_model(owner: dict[str, Any], tmp_path: Path) -> None:
    d = _infer(owner, "own", {"architecture": "mlp", "checkpoint": "model.safetensors"}, tmp_path / "own")
    _used(d)
    assert {"lira", "rmia"} <= set(d.features)  # the references' offline attacks are features


def test_an_endpoint_asked_each_record_once(owner: dict[str, Any], tmp_path: Path) -> None:
    srv = V2Server(module_fn(owner["model"]), name="digits")
    try:
        target = {"endpoint": srv.url, "architecture": "mlp", "batch_size": 256}
        path = owner["dir"] / "endpoint.yaml"
        path.write_text(yaml.safe_dump({**owner["raw"], "target": target}))
        planned = invoke("plan", str(path))  # before: every record to ask (the references' too), nothing asked
        assert planned.exit_code == 0, planned.output
        assert f"{owner['n']} are not in the answer store" in planned.output and srv.rows == 0
        d = _infer(owner, "endpoint", target, tmp_path / "first")
        _used(d)
        assert srv.rows == owner["n"]  # each record of the data once: the suspects, validation and population
        spent = AuditReport.load(tmp_path / "first" / "results.json").endpoint
        assert spent is not None and spent.queries_spent == owner["n"]  # results.json says what the answer cost
        own = _infer(owner, "own", {"architecture": "mlp", "checkpoint": "model.safetensors"}, tmp_path / "own")
        assert d.features == own.features and d.auc == pytest.approx(own.auc, abs=0.01)  # the same model's answers
        again = _infer(owner, "endpoint", target, tmp_path / "again")
        assert srv.rows == owner["n"] and again.p_value == d.p_value  # answered from the store: no query
        rerun = AuditReport.load(tmp_path / "again" / "results.json").endpoint
        assert rerun is not None and rerun.queries_spent == 0
        assert "0 are not in the answer store" in invoke("plan", str(path)).output
    finally:
        srv.stop()


def test_a_causal_language_model(tmp_path: Path) -> None:
    """A gpt-tiny trained by miaudit on texts: the features are its token statistics and the reference attacks,
    the blind guard reads the texts' words, and suspects it trained on many epochs over are found used."""
    import pandas as pd

    from miaudit import config, pipeline

    rng = np.random.default_rng(0)
    words = ["the", "a", "team", "market", "stock", "goal", "season", "price", "oil", "bank", "cup", "win", "rose"]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(6, 12)))) for _ in range(400)]
    pd.DataFrame({"text": texts}).to_csv(tmp_path / "texts.csv", index=False)
    train = {"epochs": 30, "batch_size": 16, "lr": 0.01, "optimizer": "adamw"}
    raw = {"dataset": {"path": str(tmp_path / "texts.csv"), "text_column": "text"},
           "model": "gpt-tiny[max_length=12,width=16]", "seed": 0, "references": 2, "train": train,
           "attacks": ["attack-p"]}  # fmt: skip
    split = pipeline.prepare(config.from_dict(raw)).split
    raw |= {"suspect": [int(i) for i in split.members[:40]], "validation": [int(i) for i in split.nonmembers[:60]]}
    (tmp_path / "lm.yaml").write_text(yaml.safe_dump(raw))
    res = invoke("infer-dataset", str(tmp_path / "lm.yaml"), "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    d = AuditReport.load(tmp_path / "out" / "results.json").dataset_inference
    assert d is not None and d.features[:4] == ["mean_loglik", "zlib", "min_k", "min_k_pp"]
    assert {"lira", "rmia"} <= set(d.features) and d.blind.classifier.startswith("TF-IDF")
    assert d.used is True and d.fraction is not None, (d.p_value, d.auc)
