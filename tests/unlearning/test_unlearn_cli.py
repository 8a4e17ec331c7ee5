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
from miaudit.config.run import from_dict


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
        ("[0, 1, 1000000]inline", "record 1000000 is outside the data"),
        ("[0, x]inline", "unlearning.forget: expected a positive count, an index file or a list of record indices"),
        ("[]inline", "got an empty list"),
        ("[3, 3]inline", "unlearning.forget: record 3 is listed twice"),
        ("{a: 1}inline", "unlearning.forget: expected a positive count"),
    ],
)
def test_bad_forget_refused_in_one_line_nothing_written(tmp_path: Path, forget: str, message: str) -> None:
    if forget.endswith("inline"):  # written into the config as it is
        forget = forget.removesuffix("inline")
    elif forget.startswith("["):
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


@pytest.mark.slow
def test_plan_times_unlearn_models_as_run_plan_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The unlearn plan of a config and the run plan of the same models: the same time per model (one timed epoch
    per record, scaled, shared among the same workers), so the same total for the same models. Timing is faked
    (1 ms per record per epoch) so that the test reads the arithmetic, not the machine."""
    from miaudit import api, forecast

    monkeypatch.setattr(forecast, "_epoch_seconds", lambda recipe, job, seed: 0.001 * len(job.train_idx))
    monkeypatch.setattr(forecast, "measured_seconds", lambda store, job: [])
    base = f"dataset: digits\nseed: 2\nreferences: 4\ntrain: {{epochs: 30}}\ncache_dir: {tmp_path / 'cache'}\n"
    config = tmp_path / "u.yaml"
    config.write_text(base + "unlearning: {forget: 50, method: retrain}\n")
    lines = [forecast.unlearning_lines(config, []) for _ in range(2)]
    assert lines[0] == lines[1]  # consistent: the same config, the same plan
    seconds = float(re.search(r"about (\d+) s for 6 model\(s\)", lines[0][1]).group(1))  # type: ignore[union-attr]
    run = api.plan(from_dict({"dataset": "digits", "seed": 2, "references": 4, "cache_dir": str(tmp_path / "c2")}))
    target = run.models[0]  # the same model as the unlearn audit's original: the same records and recipe
    workers = run.workers or 1
    assert target.seconds == pytest.approx(0.001 * 359 * 30)
    # 6 models: the original (359 records) and 5 on the 309 retained records, shared among the same workers
    assert seconds == pytest.approx((359 + 5 * 309) * 0.001 * 30 / workers, abs=1)
