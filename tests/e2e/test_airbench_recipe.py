"""The fast CIFAR-10 recipe end to end at small scale: ``model: airbench`` with its training options, the
references trained together in a stack, BMIA's last-layer posterior and LiRA reading them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from miaudit import audits
from miaudit.config import run as config

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)


def test_the_airbench_recipe_audits_with_stacked_references(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 100)
    x = (rng.normal(size=(3, 3, 16, 16))[y] + rng.normal(scale=2.0, size=(100, 3, 16, 16))).astype(np.float32)
    np.savez(tmp_path / "images.npz", x=x, y=y)
    cfg = config.from_dict(
        {
            "dataset": {"path": str(tmp_path / "images.npz")},
            "model": "airbench",
            "train": {
                "epochs": 1,
                "batch_size": 8,
                "lr": 0.01,
                "momentum": 0.85,
                "weight_decay": 0.00133,
                "label_smoothing": 0.2,
                "schedule": "triangle",
                "augment": "flip-crop",
                "models_at_once": 2,
            },
            "references": 2,
            "attacks": [{"name": "lira", "references": 2}, {"name": "bmia", "samples": 20, "hessian": "diag"}],
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    res = audits.run_config(cfg)
    assert len(list((tmp_path / "cache").glob("models/*/model.safetensors"))) == 3  # target + 2, stored apart
    for run in res.attacks:
        assert np.isfinite(run.result.scores).all(), run
