"""Shared fixtures: one torch thread, a private model cache per test, a tiny audit config; and the rule of the
``slow`` marker (``make test-fast`` runs ``-m "not slow"``): a test that trains a model is marked slow, held
here by counting optimizer steps per test."""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

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


# The real data sets (location, cifar10, ag_news, ...): $MIAUDIT_DATA_DIR, else ../shared/data beside the checkout,
# as miaudit finds them. A fresh clone has neither: the tests that need one skip, saying which (`make test` passes).
SHARED_DATA = Path(os.environ.get("MIAUDIT_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")


def require_data(name: str) -> Path:
    """The folder of data set ``name``; the calling test (or fixture) is skipped with the reason where it is absent."""
    folder = SHARED_DATA / name
    if not folder.is_dir():
        pytest.skip(f"needs the {name} data set ($MIAUDIT_DATA_DIR or ../shared/data/{name}); absent here")
    return folder


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


# --- the slow marker: a test not marked slow trains no model -------------------------------------------------------
# Any optimizer step taken while such a test runs (its fixtures included; in worker processes forked from it too,
# which inherit the hook and append to the same file) fails that test, so `make test-fast` stays a loop without
# training. Steps in fresh interpreters (a `miaudit` subprocess, Ray workers) are not seen: such tests are marked
# slow by hand, as is anything else that takes about a second or more on two cores (the docs build, Ray, servers).
_fd, _steps_path = tempfile.mkstemp(prefix="miaudit-test-steps-")
os.close(_fd)
STEPS = Path(_steps_path)  # one line per test that stepped an optimizer without the slow mark
_running: dict[str, Any] = {"id": None, "slow": True}


def _record_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    if not _running["slow"]:
        with STEPS.open("a") as fh:
            fh.write(f"{_running['id']}\n")
        _running["slow"] = True  # once per test (and per process) is enough


register_optimizer_step_pre_hook(_record_step)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _running.update(id=item.nodeid, slow=item.get_closest_marker("slow") is not None)
    yield
    _running.update(id=None, slow=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    STEPS.unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def trains_only_when_slow(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails, at teardown, a test that trained a model (an optimizer stepped) without ``@pytest.mark.slow``."""
    yield
    if request.node.nodeid in STEPS.read_text().splitlines():
        pytest.fail(
            f"{request.node.nodeid} trains a model (an optimizer stepped) but is not marked slow: "
            "add @pytest.mark.slow (or the module's pytestmark) so that `make test-fast` trains nothing",
            pytrace=False,
        )
