"""Shared fixtures: one torch thread, a private model cache per test, a tiny audit config."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from miaudit.config import run as config

# Several pytest workers and engineers share two cores: more threads only contend.
torch.set_num_threads(1)

# A run that trains three small models in about a second: 300 digits
# (60 members, 60 non-members, 120 population, 60 validation), 3 epochs of 4 steps.
TINY_RUN: dict[str, Any] = {
    "dataset": {"name": "digits", "subset": 300},
    "model": "mlp",
    "seed": 0,
    "train": {"epochs": 3, "batch_size": 16, "lr": 0.05},
    "references": 2,
    "attacks": [{"name": "attack-p"}, {"name": "attack-r"}],  # attack-r uses both references, so both train
}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the default cache at a fresh folder so no test reads or writes ~/.cache."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("MIAUDIT_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def tiny_raw() -> dict[str, Any]:
    """The tiny run as the mapping a user's YAML holds (a fresh copy: tests may edit it)."""
    return copy.deepcopy(TINY_RUN)


@pytest.fixture(scope="session")
def tiny_config() -> config.RunConfig:
    """The tiny run, validated (frozen, so one instance serves the session)."""
    return config.from_dict(copy.deepcopy(TINY_RUN))


@pytest.fixture(scope="session")
def make_config() -> Callable[..., config.RunConfig]:
    """Factory: the tiny run with top-level keys overridden, validated like user input."""

    def make(**overrides: Any) -> config.RunConfig:
        return config.from_dict({**copy.deepcopy(TINY_RUN), **overrides})

    return make
