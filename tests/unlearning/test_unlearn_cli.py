"""``miaudit unlearn`` on the command line: the shared flags, bad input in one line with nothing written, Ctrl-C."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from miaudit.cli import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_the_shared_flags() -> None:
    text = re.sub(r"\x1b\[[0-9;]*m", "", invoke("unlearn", "--help").output)
    assert {"-s", "--set", "-q", "--quiet", "-v", "--verbose", "-o", "--out", "-f", "--force"} <= set(
        re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text)
    )


@pytest.mark.parametrize(
    ("forget", "message"),
    [
        ("[0, 1, 1000000]", "index 1000000 is outside"),
        ("nonmember", "is not among the original model's training records"),
        ("0", "unlearning.forget"),
    ],
)
def test_bad_forget_refused_in_one_line_nothing_written(tmp_path: Path, forget: str, message: str) -> None:
    if forget.startswith("["):
        np.save(tmp_path / "f.npy", np.array(json.loads(forget)))
        forget = str(tmp_path / "f.npy")
    elif forget == "nonmember":
        from miaudit import data
        from miaudit.config.run import from_dict
        from miaudit.experiment import datasets

        cfg = from_dict({"dataset": "digits", "seed": 2})
        members = data.split_indices(len(datasets.load(cfg)), 2, cfg.split.as_tuple()).members
        outside = next(i for i in range(10**6) if i not in set(members.tolist()))
        np.save(tmp_path / "f.npy", np.array([int(members[0]), outside]))
        forget = str(tmp_path / "f.npy")
    config = tmp_path / "u.yaml"
    config.write_text(f"dataset: digits\nseed: 2\nunlearning: {{forget: {forget}, method: retrain}}\n")
    res = invoke("unlearn", str(config), "--out", str(tmp_path / "out"))
    assert res.exit_code == 2, res.output
    assert message in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_ctrl_c_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    import miaudit.unlearning.output as output

    monkeypatch.setattr(output, "run", interrupt)
    config = tmp_path / "u.yaml"
    config.write_text("dataset: digits\nunlearning: {forget: 10, method: noop}\n")
    res = invoke("unlearn", str(config), "--out", str(tmp_path / "out"))
    assert res.exit_code == 130 and res.output.strip().startswith("interrupted:")
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_plan_counts_the_models_of_an_unlearning_audit(tmp_path: Path) -> None:
    """``miaudit plan`` of an unlearning config: the original, the exact retrain and the 3 retrained models."""
    config = tmp_path / "u.yaml"
    config.write_text(
        f"dataset: digits\nreferences: 3\ntrain: {{epochs: 2}}\ncache_dir: {tmp_path / 'cache'}\n"
        "unlearning: {forget: 20, method: retrain}\n"
    )
    res = invoke("plan", str(config))
    assert res.exit_code == 0, res.output
    assert "5 models (target, unlearned (retrain), retrained 1/3" in res.output
    assert "for 5 model(s) to train" in res.output
