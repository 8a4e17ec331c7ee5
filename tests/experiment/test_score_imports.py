"""A scores-only audit loads no torch, scikit-learn, pandas or scipy.stats (seconds of imports on every
`miaudit score`), and a second one of the same outputs, whose figures are kept in the store, no matplotlib."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter per test (a subprocess): seconds each

SCRIPT = """
import sys
from miaudit.cli import app
sys.argv = ["miaudit", "score", sys.argv[1], "--out", sys.argv[2]]
try:
    app()
except SystemExit as e:
    assert not e.code, e.code
heavy = ("torch", "sklearn", "laplace", "pandas", "scipy.stats", "matplotlib.pyplot")
heavy = sorted(m for m in heavy if m in sys.modules)
print("MATPLOTLIB", "matplotlib" in sys.modules)
print("HEAVY", heavy)
"""


def test_score_imports_none_of_the_heavy_libraries(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    k, n, c = 4, 60, 3
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    arrays = {
        "labels": rng.integers(0, c, n),
        "target_logits": rng.standard_normal((n, c)).astype(np.float32),
        "reference_logits": rng.standard_normal((k, n, c)).astype(np.float32),
        "reference_keep": rng.random((k, n)).argsort(axis=0) < k // 2,  # every record IN for half of them
        "target_keep": rng.random(n) < 0.5,
    }
    for name, array in arrays.items():
        np.save(outputs / f"{name}.npy", array)
    config = tmp_path / "score.yaml"
    config.write_text(f"outputs: {outputs}\ncalibration: null\nmode: online\nattacks: [lira, bavaria-n]\n")
    env = {**os.environ, "MIAUDIT_CACHE_DIR": str(tmp_path / "cache")}
    for run in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(config), str(tmp_path / run)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "HEAVY []" in done.stdout, done.stdout[-500:]
        assert (tmp_path / run / "scores.parquet").is_file()
    assert "MATPLOTLIB False" in done.stdout  # the second run's figures came from the store
