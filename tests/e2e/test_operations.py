"""Operations a user relies on: every bad input is one line, exit 2, nothing written; the commands that
describe the config and the attacks; log lines when the output is not a terminal; the documented keys against the
schema."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from typer.testing import CliRunner, Result

from miaudit import data
from miaudit.cli import app
from miaudit.config import describe as configdoc
from miaudit.config_keys import command_keys
from miaudit.errors import DataError
from miaudit.progress import ModelProgress

KEYS_PAGE = Path(__file__).parents[2] / "docs" / "configuration.md"  # its table of every key


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def small(dataset: Any, **keys: Any) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "model": "mlp",
        "train": {"epochs": 2},
        "references": 0,
        "attacks": ["attack-p"],
        **keys,
    }


def npz(name: str, **arrays: Any) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    arrays = {"x": rng.normal(size=(300, 12)).astype(np.float32), "y": rng.integers(0, 3, 300), **arrays}
    np.savez(name, **{k: v for k, v in arrays.items() if v is not None})
    return small({"path": name})


def stray_label() -> dict[str, Any]:
    y = np.random.default_rng(0).integers(0, 3, 300)
    y[7] = 1000
    return npz("stray.npz", y=y)


def truncated() -> dict[str, Any]:
    raw = npz("whole.npz")
    Path("truncated.npz").write_bytes(Path("whole.npz").read_bytes()[:1000])
    return {**raw, "dataset": {"path": "truncated.npz"}}


def write(name: str, content: str | bytes) -> str:
    Path(name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return name


def data_file(name: str, content: str | bytes) -> dict[str, Any]:
    return small({"path": write(name, content)})


# case -> (how to make the config file, what the one line must say)
BAD_INPUTS: dict[str, tuple[Callable[[], dict[str, Any]], str]] = {
    "empty npz": (lambda: data_file("empty.npz", b""), "empty.npz is empty"),
    "truncated npz": (truncated, "truncated.npz is truncated or damaged"),
    "npz without y": (lambda: npz("noy.npz", y=None), "lacks array(s) ['y']"),
    "text named .npz": (lambda: data_file("text.npz", "not an archive\n"), "not an .npz"),
    "object array npz": (lambda: npz("obj.npz", x=np.array([{"a": 1}] * 300, dtype=object)), "Python objects"),
    "empty csv": (lambda: data_file("empty.csv", ""), "empty.csv is empty"),
    "header-only csv": (lambda: data_file("h.csv", "a,b,y\n"), "a header but no records"),
    "stray label 1000": (stray_label, "found 1000"),
    "missing label classes": (lambda: npz("gap.npz", y=np.arange(300) % 2 * 2), "labels must be 0..1"),
    "device banana": (lambda: small("digits", device="banana"), "device: unknown device 'banana'"),
    "unknown key epoch": (
        lambda: small("digits", train={"epoch": 2}),
        "train.epoch: unknown key; did you mean 'epochs'",
    ),
    "unknown attack key": (lambda: small("digits", attacks=[{"name": "bmia", "sample": 2}]), "did you mean 'samples'"),
    "num_classes on a built-in": (lambda: small({"name": "digits", "num_classes": 12}), "only for a data file"),
}
RAW_FILES: dict[str, tuple[str | bytes, str]] = {
    "binary config": (bytes(range(128, 256)) * 8, "not a text file"),
    "yaml syntax error": ("dataset: digits\ntrain: {epochs: 2\nreferences: 0\n", "line 3, column 11"),
    "empty config": ("", "is empty"),
    "config not a mapping": ("- digits\n", "expected a mapping"),
}
if not torch.cuda.is_available():
    BAD_INPUTS["device cuda without a GPU"] = (lambda: small("digits", device="cuda"), "this machine has no CUDA GPU")


@pytest.mark.parametrize("case", [*BAD_INPUTS, *RAW_FILES])
def test_every_bad_input_is_one_line_exit_2_nothing_written(case: str) -> None:
    if case in RAW_FILES:
        content, expected = RAW_FILES[case]
        path = write("bad.yaml", content)
    else:
        make, expected = BAD_INPUTS[case]
        path = write("bad.yaml", yaml.safe_dump(make()))
    res = invoke("run", path, "--out", "out")
    lines = res.output.strip().splitlines()
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert expected in lines[0] and "allow_pickle" not in lines[0]
    assert not Path("out").exists()


def test_num_classes_allows_unused_classes() -> None:
    x = np.zeros((40, 3), dtype=np.float32)
    np.savez("gap.npz", x=x, y=np.arange(40) % 2 * 2)  # labels 0 and 2
    with pytest.raises(DataError, match=r"labels must be 0..1 \(2 distinct labels\), found 2; .*num_classes"):
        data.load(path="gap.npz")
    assert data.load(path="gap.npz", num_classes=3).n_classes == 3


def test_time_left_from_measured_model_times() -> None:
    progress = ModelProgress(4)
    assert progress.seconds_left() is None
    progress.finished("target", 2.0, cached=False)
    progress.finished("reference 1/3", 9.0, cached=True)  # loaded: not a measured training time
    assert progress.seconds_left() == pytest.approx(4.0)  # 2 models left at 2 s each


def documented_keys() -> dict[str, str]:
    """docs/configuration.md's table of every key: key -> default as written."""
    rows = re.findall(r"^\| `([a-z_.]+)` \|([^|]*)\|", KEYS_PAGE.read_text(), flags=re.M)
    return {key: default.strip() for key, default in rows}


def test_docs_document_every_key_and_its_default() -> None:
    documented = documented_keys()
    keys = list(configdoc.keys(configdoc.keys_schema(command_keys())))  # unlearn's and infer-dataset's keys too
    assert sorted(documented) == sorted(k.path for k in keys)
    for key in keys:
        if not (key.section and key.default is not None):
            expected = "required" if key.default is configdoc.REQUIRED else configdoc.yaml_value(key.default)
            assert documented[key.path] == expected, key.path


@pytest.mark.slow
def test_importing_laplace_warns_nothing() -> None:
    """laplace-torch's dependencies call torch.jit.script on import: torch's FutureWarning is filtered there."""
    code = "from miaudit.posteriors.laplace import import_laplace; import_laplace()"
    res = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True)
    assert res.stderr == ""


@pytest.mark.slow
def test_log_lines_per_model_and_attack_when_not_a_terminal(tiny_raw: dict[str, Any]) -> None:
    write("run.yaml", yaml.safe_dump(tiny_raw))
    first = invoke("run", "run.yaml", "--out", "a")
    assert first.exit_code == 0, first.output
    for line in ("target: trained in", "reference 1/2: trained in", "reference 2/2: trained in", "attack attack-p: "):
        assert line in first.output
    again = invoke("run", "run.yaml", "--out", "b", "--quiet")
    assert again.exit_code == 0 and again.output == ""
    verbose = invoke("run", "run.yaml", "--out", "c", "--verbose")
    assert "reference 2/2: loaded from cache" in verbose.output and "data digits: 300 records" in verbose.output
    assert "cache: " in verbose.output  # the cache folder, as docs/running.md's --verbose promises
