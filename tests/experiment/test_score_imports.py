"""A scores-only audit loads no torch and no scikit-learn: seconds of imports on every `miaudit score`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = """
import sys
from miaudit.cli import app
sys.argv = ["miaudit", "score", sys.argv[1], "--out", sys.argv[2]]
try:
    app()
except SystemExit as e:
    assert not e.code, e.code
heavy = sorted(m for m in ("torch", "sklearn", "laplace") if m in sys.modules)
print("HEAVY", heavy)
"""


def test_score_imports_neither_torch_nor_sklearn(tmp_path: Path) -> None:
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
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(config), str(tmp_path / "out")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "HEAVY []" in done.stdout, done.stdout[-500:]
    assert (tmp_path / "out" / "scores.parquet").is_file()
