"""The Python API under the commands: ``miaudit.plan`` and ``miaudit.export`` are what ``miaudit plan`` and
``miaudit export`` run."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import TINY_RUN
from typer.testing import CliRunner

import miaudit
from miaudit.cli import app
from miaudit.config import run as config
from miaudit.errors import ConfigError


@pytest.mark.slow
def test_plan_returns_the_forecast_the_command_prints(tmp_path: Path) -> None:
    from miaudit import forecast as forecasting
    from miaudit.attack_plan import build

    forecast = miaudit.plan(copy.deepcopy(TINY_RUN))
    assert forecast.n_members == 60 and forecast.n_nonmembers == 60
    assert [a.label for a in build(config.from_dict(copy.deepcopy(TINY_RUN))).attacks] == forecast.attacks
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_RUN))
    printed = CliRunner().invoke(app, ["plan", str(tmp_path / "tiny.yaml")])
    assert printed.exit_code == 0, printed.output
    # the same lines but the timing one (one timed epoch: its seconds vary between calls)
    assert printed.output.splitlines()[:-1] == forecasting.lines(forecast)[:-1]


@pytest.mark.slow
def test_export_writes_what_the_command_writes(tmp_path: Path) -> None:
    where = miaudit.export(copy.deepcopy(TINY_RUN), tmp_path / "api")
    assert where == tmp_path / "api.npz"
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_RUN))
    res = CliRunner().invoke(app, ["export", str(tmp_path / "tiny.yaml"), "--out", str(tmp_path / "cli.npz")])
    assert res.exit_code == 0, res.output
    a, b = np.load(where), np.load(tmp_path / "cli.npz")
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key])


def test_export_refuses_an_unknown_layout_and_an_existing_file_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="layout: 'csv' is not npz or lira"):
        miaudit.export(copy.deepcopy(TINY_RUN), tmp_path / "x", layout="csv")
    (tmp_path / "x.npz").write_bytes(b"")
    with pytest.raises(miaudit.errors.OutputDirError):
        miaudit.export({"dataset": "no-such-data"}, tmp_path / "x.npz")


@pytest.mark.parametrize(
    "first",
    ["import miaudit", "from miaudit.attack_plan import Plan", "from miaudit import api", "from miaudit import plan"],
)
def test_miaudit_plan_is_the_api_function_whatever_came_first(first: str) -> None:
    """``miaudit.plan`` is ``api.plan``, a plain function (the Plan of attacks is ``miaudit.attack_plan``), in a fresh
    interpreter whatever was imported first."""
    import subprocess
    import sys

    code = (
        f"{first}\nimport inspect, miaudit\nfrom miaudit import plan\nfrom miaudit.api import plan as api_plan\n"
        "from miaudit.attack_plan import Plan\n"
        "assert plan is miaudit.plan is api_plan and inspect.isfunction(plan) and Plan.__name__ == 'Plan'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
