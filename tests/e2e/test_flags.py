"""One vocabulary of flags across the commands that read a config or write results (docs/cli.md's table):
-s/--set, -q/--quiet, -v/--verbose, -o/--out, -f/--force where a command writes, Ctrl-C as one line."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from miaudit.cli import app
from miaudit.experiment import export as scores_export
from miaudit.experiment.layouts import Outputs

COMMANDS = ("run", "score", "dp-audit", "export", "compare", "plan")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def flags(command: str) -> set[str]:
    text = re.sub(r"\x1b\[[0-9;]*m", "", invoke(command, "--help").output)
    return set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text))


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_shared_flags(command: str) -> None:
    assert {"-s", "--set", "-q", "--quiet", "-v", "--verbose"} <= flags(command)


def test_out_and_force_where_a_command_writes_and_seed_is_bench_s_only_spelling() -> None:
    for command in ("run", "score", "dp-audit", "export"):
        assert {"-o", "--out", "-f", "--force"} <= flags(command), command
    assert {"-o", "--out"} <= flags("compare")
    assert "--seed" in flags("bench") and "-s" not in flags("bench")


def test_compare_set_is_its_settings_an_unknown_key_refused_in_one_line(tmp_path: Path) -> None:
    res = invoke("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--set", "resample=200")
    assert res.exit_code == 2 and "did you mean 'resamples'" in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "target"),
    [
        (("score", "CONFIG"), "miaudit.api.score"),
        (("export", "--out", "OUT/x.npz"), "miaudit.pipeline.prepare"),
        (("compare", "A", "B"), "miaudit.report.compare.compare"),
        (("plan",), "miaudit.forecast.forecast"),
        (("dp-audit", "CONFIG"), "miaudit.dp.output.audit"),
    ],
)
def test_ctrl_c_ends_every_command_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], target: str
) -> None:
    def interrupt(*a: Any, **k: Any) -> None:
        raise KeyboardInterrupt

    module, _, name = target.rpartition(".")
    monkeypatch.setattr(__import__(module, fromlist=[name]), name, interrupt)
    config = tmp_path / "c.yaml"
    config.write_text("outputs: x.npz\n" if args[0] == "score" else "dataset: digits\n")
    for run in ("A", "B"):
        (tmp_path / run).mkdir()
    argv = [str(config) if a == "CONFIG" else str(tmp_path / a) if a in ("A", "B") else a for a in args]
    argv = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    res = invoke(*argv)
    assert res.exit_code == 130, res.output
    assert res.output.strip().startswith("interrupted:") and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _outputs(value: float) -> Outputs:
    return Outputs(
        labels=np.zeros(4, dtype=np.int64),
        target_logits=np.full((4, 2), value, dtype=np.float32),
        reference_logits=[np.zeros((4, 2), dtype=np.float32)],
        reference_keep=np.array([[True, False, True, False]]),
        target_keep=np.array([True, True, False, False]),
    )


@pytest.mark.parametrize("layout", ["npz", "lira"])
def test_export_refuses_an_existing_out_unless_force_then_replaces_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    out = tmp_path / ("o.npz" if layout == "npz" else "o")
    monkeypatch.setattr(scores_export, "from_experiment", lambda exp: _outputs(1.0))
    assert scores_export.export(None, out, layout) == out  # type: ignore[arg-type]
    with pytest.raises(Exception, match="--force"):
        scores_export.destination(out, layout)
    monkeypatch.setattr(scores_export, "from_experiment", lambda exp: _outputs(2.0))
    assert scores_export.export(None, out, layout, force=True) == out  # type: ignore[arg-type]
    if layout == "npz":
        assert np.load(out)["target_logits"][0, 0] == 2.0
    else:
        assert np.load(out / "experiment-1_2" / "logits" / "0000000000.npy")[0, 0, 0, 0] == 2.0
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no staging folder left
