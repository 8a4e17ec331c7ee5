"""The model cache's integrity (checksums verified on load; a damaged entry is named in one line
and retrained) and concurrency (runs sharing a cache train each model once)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import miaudit
from miaudit import pipeline
from miaudit.config import run as config
from miaudit.config.run import RunConfig
from miaudit.models import build_model
from miaudit.training.store import ModelEntry, Store

BUILD = lambda: build_model("mlp", (8,), 3)


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Store, ModelEntry, np.ndarray]:
    """A store holding one small model and its logits."""
    store = Store(tmp_path / "cache")
    entry = store.entry({"what": "a test model"})
    torch.manual_seed(0)
    logits = np.random.default_rng(0).normal(size=(20, 3)).astype(np.float32)
    store.save(entry, BUILD(), {"seconds": 1.0, "train_accuracy": 0.5}, logits)
    return store, entry, logits


def load_damaged(store: Store, entry: ModelEntry, caplog: pytest.LogCaptureFixture) -> str:
    """Load an entry that must be refused; return the one line that reported it."""
    with caplog.at_level(logging.WARNING, logger="miaudit.training.store"):
        assert store.load(entry, BUILD) is None
    [line] = [r.getMessage() for r in caplog.records]
    assert "\n" not in line and not entry.dir.exists()  # removed, so it is trained again
    return line


def test_entry_records_checksums_and_loads(saved: tuple[Store, ModelEntry, np.ndarray]) -> None:
    store, entry, logits = saved
    meta = json.loads(entry.meta_path.read_text())
    assert set(meta["blake3"]) == {"model.safetensors", "logits.npy"}
    got = store.load(entry, BUILD)
    np.testing.assert_array_equal(got.logits, logits)
    assert got.meta["seconds"] == 1.0 and not got.module.training


def test_absent_entry_is_not_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert store.load(store.entry({"never": "saved"}), BUILD) is None
    assert not caplog.records


@pytest.mark.parametrize("damage", ["truncate", "empty"])
def test_truncated_weights_are_named_and_removed(
    saved: tuple[Store, ModelEntry, np.ndarray], caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    store, entry, _ = saved
    blob = entry.weights.read_bytes()
    entry.weights.write_bytes(blob[: len(blob) // 2] if damage == "truncate" else b"")
    line = load_damaged(store, entry, caplog)
    assert line.startswith(f"cache entry {entry.dir} is damaged (model.safetensors")
    assert line.endswith("; retraining")


def test_zeroed_logits_are_not_used(saved: tuple[Store, ModelEntry, np.ndarray], caplog) -> None:
    store, entry, logits = saved
    np.save(entry.logits_path, np.zeros_like(logits))  # well-formed, right shape: only the checksum tells
    assert "logits.npy does not match its checksum" in load_damaged(store, entry, caplog)


@pytest.mark.parametrize("text", ["", '{"seconds": 1.0, "sha', '{"seconds": 1.0, "train_accuracy": 0.5}', "[1]"])
def test_broken_or_unchecksummed_meta_is_damaged(
    saved: tuple[Store, ModelEntry, np.ndarray], caplog: pytest.LogCaptureFixture, text: str
) -> None:
    store, entry, _ = saved
    entry.meta_path.write_text(text)
    assert "meta.json" in load_damaged(store, entry, caplog)


@pytest.mark.slow
def test_pipeline_retrains_a_damaged_model(
    make_config: Callable[..., RunConfig], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = make_config(cache_dir=str(tmp_path), references=1)
    first = pipeline.prepare(cfg)
    [meta] = [p for p in tmp_path.glob("models/*/meta.json") if json.loads(p.read_text())["role"] == "target"]
    weights = meta.with_name("model.safetensors")
    weights.write_bytes(weights.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="miaudit.training.store"):
        again = pipeline.prepare(cfg)
    assert [m.cached for m in (again.target, *again.references)] == [False, True]
    assert [r.getMessage() for r in caplog.records if r.name == "miaudit.training.store"] == [
        f"cache entry {weights.parent} is damaged (model.safetensors does not match its checksum, 100 bytes); "
        "retraining"
    ]
    np.testing.assert_array_equal(again.target.logits, first.target.logits)  # deterministic: the same model
    assert pipeline.prepare(cfg).target.cached  # and cached again


# The other process signals it is ready (imports done), waits for the go file, then prepares the tiny run and
# prints which of its models came from the cache.
WORKER = """
import json, sys, time
from pathlib import Path
import torch
torch.set_num_threads(1)
from miaudit.config import run as config
from miaudit import pipeline
cfg = config.from_dict(json.loads(sys.argv[1]))
Path(sys.argv[2], "ready").touch()
while not Path(sys.argv[2], "go").exists():
    time.sleep(0.005)
exp = pipeline.prepare(cfg)
print(json.dumps([m.cached for m in [exp.target, *exp.references]]))
"""


@pytest.mark.slow
def test_concurrent_runs_train_each_model_once(tiny_raw: dict, tmp_path: Path) -> None:
    """This process and a second one prepare the same run at the same moment (one import, not two: fast)."""
    raw = {**tiny_raw, "cache_dir": str(tmp_path / "cache")}
    cfg = config.from_dict(raw)
    env = {**os.environ, "PYTHONPATH": str(Path(miaudit.__file__).parents[1]), "OMP_NUM_THREADS": "1"}
    other = subprocess.Popen(
        [sys.executable, "-c", WORKER, json.dumps(raw), str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():
        assert other.poll() is None and time.monotonic() < deadline, other.communicate()
        time.sleep(0.005)
    (tmp_path / "go").touch()  # both start at once: without locks both would train the target
    exp = pipeline.prepare(cfg)
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    mine = [m.cached for m in [exp.target, *exp.references]]
    theirs = json.loads(out.strip().splitlines()[-1])
    assert [a or b for a, b in zip(mine, theirs)] == [True] * 3, (mine, theirs)  # none trained twice
    assert sum(mine) + sum(theirs) == 3  # and each trained by one of them
    assert len(list((tmp_path / "cache").glob("models/*/meta.json"))) == 3
