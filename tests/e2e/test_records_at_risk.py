"""Records at risk from `miaudit score`: the sentence names the attack whose count it gives and whether its
p-values are calibrated, and with no leak and no calibration records nothing is flagged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from miaudit.cli import app

pytestmark = pytest.mark.slow  # scores-only audits end to end: about a second each

N, C, K = 400, 5, 4


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def write_npz(leak: float, seed: int = 0) -> str:
    """K references (each IN for half of the records) and a target whose logits shift by ``leak`` on members."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, C, N)
    profile = rng.normal(size=(N, C))
    keep = np.argsort(rng.random((N, K)), axis=1).T < K // 2
    target_keep = rng.permutation(N) < N // 2

    def model(member: np.ndarray) -> np.ndarray:
        z = profile + 0.5 * rng.normal(size=(N, C))
        z[np.arange(N), y] += 3.0 + rng.normal(size=N) + leak * member
        return z.astype(np.float32)

    np.savez("out.npz", labels=y, target_logits=model(target_keep), target_keep=target_keep,
             reference_keep=keep, reference_logits=np.stack([model(keep[k]) for k in range(K)]))  # fmt: skip
    return "out.npz"


def test_scores_only_without_calibration_says_whose_count_and_that_p_values_are_raw() -> None:
    Path("s.yaml").write_text(yaml.safe_dump({
        "outputs": {"layout": "npz", "path": write_npz(leak=0.0)},
        "mode": "offline",
        "attacks": ["lira", "attack-r"],
    }))  # fmt: skip
    res = CliRunner().invoke(app, ["score", "s.yaml", "--out", "o"])
    assert res.exit_code == 0, res.output
    risk = json.loads(Path("o/results.json").read_text())["records_at_risk"]
    note = risk["note"]
    assert note.startswith(f"{risk['count']} of {N} records flagged at FDR 0.05 by {risk['attack']} (")
    assert "raw p-values, NOT calibrated" in note and "calibrated p-values" not in note.replace("NOT calibrated", "")
    assert risk["p_values"] == "raw (not calibrated)" and risk["count"] == 0  # no leak: nothing flagged
    console = " ".join(res.output.split())
    assert f"by {risk['attack']}" in console and "NOT calibrated" in console
