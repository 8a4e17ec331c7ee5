"""``miaudit init``, ``config``, ``schema`` and ``attacks`` (config_keys/commands.py): the commands that describe
the keys and the attacks; ``--set`` read as the commands read it; a bad override one line, exit 2."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from _cli import invoke

from miaudit.config import run as config


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write(name: str, content: str) -> str:
    Path(name).write_text(content)
    return name


def small(dataset: str, **keys: object) -> dict[str, object]:
    """A quick config: two epochs, no reference model."""
    return {"dataset": dataset, "model": "mlp", "train": {"epochs": 2}, "references": 0, "attacks": ["attack-p"]} | keys


def test_version_init_schema_and_attack_parameters() -> None:
    version = invoke("--version")
    assert version.exit_code == 0 and re.fullmatch(r"miaudit \d+\.\d+\.\d+\s*", version.output)
    assert invoke("init", "mine.yaml").exit_code == 0
    assert config.from_dict(yaml.safe_load(Path("mine.yaml").read_text())) == config.RunConfig()
    assert invoke("init", "mine.yaml").exit_code == 2  # never overwritten without --force
    schema = invoke("config", "--schema")
    assert schema.exit_code == 0
    defs = json.loads(schema.output)["$defs"]
    assert defs["bmia"]["properties"]["samples"]["default"] == 1000
    shown = invoke("attacks", "bmia")
    assert shown.exit_code == 0
    assert re.search(r"samples\s+int\s+1000\s+>= 2\s+posterior draws", shown.output)
    assert "modes: offline" in shown.output and "at least 1, at most 1" in shown.output
    assert invoke("attacks", "bmai").output.strip().endswith("did you mean 'bmia'?")


def test_set_overrides_config_keys() -> None:
    write("c.yaml", yaml.safe_dump(small("digits", attacks=["attack-p", "bmia"], references=1)))
    res = invoke(
        "config", "c.yaml", "--set", "train.epochs=7", "--set", "attacks.1.samples=20", "-s", "dataset.subset=50"
    )
    assert res.exit_code == 0, res.output
    shown = yaml.safe_load(res.output)
    assert shown["train"]["epochs"] == 7 and shown["attacks"][1] == {"name": "bmia", "samples": 20}
    assert shown["dataset"] == {**shown["dataset"], "name": "digits", "subset": 50}
    for bad, message in [("seed", "expected key=value"), ("attacks.5.samples=2", "no item 5"), ("seed=-1", "seed:")]:
        res = invoke("config", "c.yaml", "--set", bad)
        assert res.exit_code == 2 and message in res.output
