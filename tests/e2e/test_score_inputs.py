"""`miaudit score` on damaged precomputed outputs: NaN or inf logits and incomplete LiRA model folders are
refused in one line naming the model and the record or file, never scored nor skipped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner, Result

from miaudit.cli import app

N, C, K = 120, 3, 4


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def score(outputs: dict, *flags: str) -> Result:
    Path("s.yaml").write_text(yaml.safe_dump({"outputs": outputs, "attacks": ["lira", "rmia"]}))
    return CliRunner().invoke(app, ["score", "s.yaml", "--out", "o", *flags])


def one_line(res: Result, *words: str) -> None:
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "Traceback" not in res.output, res.output
    assert all(w in lines[0] for w in words), lines[0]
    assert not Path("o").exists()


def arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """K + 1 models' logits on N records; each record in half of the models, the last model the target;
    30 of its members and 30 non-members queried, the rest population."""
    rng = np.random.default_rng(seed)
    in_half = (np.argsort(rng.random((N, K)), axis=1) < K // 2).T  # every record IN for half the references
    keep = np.vstack([in_half, rng.random(N) < 0.5])
    labels = rng.integers(0, C, N)
    logits = rng.normal(size=(K + 1, N, C)) + 2.0 * keep[..., None] * np.eye(C)[labels]
    sets = {"members": np.flatnonzero(keep[-1])[:30], "nonmembers": np.flatnonzero(~keep[-1])[:30]}
    return {"labels": labels, "logits": logits, "keep": keep, **sets}


def write_npz(a: dict[str, np.ndarray], path: str = "out.npz") -> str:
    np.savez(path, labels=a["labels"], target_logits=a["logits"][-1], reference_logits=a["logits"][:-1],
             reference_keep=a["keep"][:-1], target_keep=a["keep"][-1], members=a["members"],
             nonmembers=a["nonmembers"])  # fmt: skip
    return path


def write_lira(a: dict[str, np.ndarray], root: Path = Path("lira")) -> Path:
    root.mkdir()
    for name in ("members", "nonmembers"):
        np.save(root / f"{name}.npy", a[name])
    np.save(root / "y_train.npy", a["labels"])
    for k in range(K + 1):
        (root / f"experiment-{k}" / "logits").mkdir(parents=True)
        np.save(root / f"experiment-{k}" / "keep.npy", a["keep"][k])
        np.save(root / f"experiment-{k}" / "logits" / "0.npy", a["logits"][k][:, None, None, :])
    return root


@pytest.mark.slow
def test_intact_outputs_score_quietly_or_verbosely() -> None:
    a = arrays()
    res = score({"layout": "npz", "path": write_npz(a)}, "--quiet")
    assert res.exit_code == 0 and res.output == "", res.output
    res = CliRunner().invoke(app, ["score", "s.yaml", "--out", "o2", "--verbose"])
    assert res.exit_code == 0 and "attack lira" in res.output, res.output


@pytest.mark.parametrize(("model", "value"), [(-1, np.nan), (0, np.inf)])
def test_non_finite_logits_are_refused_naming_model_and_record(model: int, value: float) -> None:
    a = arrays()
    a["logits"][model, 17, 1] = value
    who = "the target" if model == -1 else "reference 0"
    one_line(score({"layout": "npz", "path": write_npz(a)}), who, "non-finite", str(value), "record 17")


def test_lira_folder_missing_keep_or_logits_is_refused_not_dropped() -> None:
    root = write_lira(arrays())
    (root / "experiment-1" / "keep.npy").unlink()
    one_line(score({"layout": "lira", "path": str(root)}), "experiment-1", "keep.npy")
    np.save(root / "experiment-1" / "keep.npy", arrays()["keep"][1])
    for f in (root / "experiment-2" / "logits").iterdir():
        f.unlink()
    (root / "experiment-2" / "logits").rmdir()
    one_line(score({"layout": "lira", "path": str(root)}), "experiment-2", "logits/")


def test_non_finite_lira_logits_name_the_folder() -> None:
    a = arrays()
    a["logits"][2, 5, 0] = np.nan
    one_line(score({"layout": "lira", "path": str(write_lira(a))}), "reference 2 (experiment-2)", "record 5")
