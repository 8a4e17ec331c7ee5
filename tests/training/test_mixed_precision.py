"""train.precision: mixed precision trains, and the default (fp32) keeps the cache keys of earlier runs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from miaudit import data
from miaudit.config.run import RunConfig, TrainConfig
from miaudit.experiment.recipes import builtin_recipe
from miaudit.models import build_model
from miaudit.training.loop import seeded_model, train


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_trains_on_cpu(precision: str) -> None:
    x = np.random.default_rng(0).normal(size=(32, 6)).astype(np.float32)
    model = seeded_model(lambda: build_model("mlp", (6,), 2), 0)
    report = train(model, x, np.arange(32) % 2, TrainConfig(epochs=1, batch_size=16, precision=precision), 0)
    assert 0 <= report.train_accuracy <= 1


def test_fp32_cache_spec_has_no_precision_key(make_config: Callable[..., RunConfig]) -> None:
    ds = data.Dataset("toy", np.zeros((4, 3), np.float32), np.arange(4) % 2, 2)
    default = builtin_recipe(make_config(), ds, "mlp").cache_spec
    bf16 = builtin_recipe(make_config(train={"precision": "bf16"}), ds, "mlp").cache_spec
    assert "precision" not in default["train"] and bf16["train"]["precision"] == "bf16"
