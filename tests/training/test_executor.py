"""The executor: Ray tasks train the reference models into the store, and fit and sample BMIA's posteriors,
and give a local run's numbers; a task that fails once is retried. Skipped without Ray
(``pip install miaudit[ray]``); one small local cluster (1 CPU) serves the module."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from miaudit import audits
from miaudit.config.run import ExecutorConfig, RunConfig
from miaudit.errors import ConfigError
from miaudit.training import executor

pytestmark = pytest.mark.slow  # Ray: a local cluster started and stopped, seconds each

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install miaudit[ray]")

RAY = ExecutorConfig(kind="ray", max_retries=2)


@pytest.fixture(scope="module", autouse=True)
def local_cluster() -> Iterator[None]:
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import the tests
    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_run_equals_local_run(make_config: Callable[..., RunConfig], tmp_path: Path) -> None:
    attacks = [{"name": "lira"}, {"name": "rmia"}, {"name": "attack-r"}]
    local = audits.run_config(make_config(attacks=attacks, cache_dir=str(tmp_path / "local")))
    remote = audits.run_config(make_config(attacks=attacks, cache_dir=str(tmp_path / "ray"), executor={"kind": "ray"}))
    assert list((tmp_path / "ray" / "models").glob("*/meta.json"))  # the tasks wrote into the store
    for a, b in zip(local.experiment.references, remote.experiment.references):
        np.testing.assert_array_equal(a.logits, b.logits)
    for a, b in zip(local.attacks, remote.attacks):
        np.testing.assert_array_equal(a.result.scores, b.result.scores)
        assert a.metrics.to_json() == b.metrics.to_json()


def test_posterior_tasks_on_ray_equal_local(make_config: Callable[..., RunConfig], tmp_path: Path) -> None:
    """BMIA / MR-BMIA: each reference's posterior fit and sampling as a Ray task gives the local numbers."""
    attacks = [
        {"name": "bmia", "samples": 50, "hessian": "diag"},
        {"name": "mr-bmia", "references": 2, "samples": 50, "hessian": "diag"},
        {"name": "bmia", "posterior": "swag", "swag_snapshots": 4, "swag_rank": 2, "samples": 20},
    ]
    cache = str(tmp_path / "store")  # the models once; the posteriors are what differs
    local = audits.run_config(make_config(attacks=attacks, references=2, cache_dir=cache))
    remote = audits.run_config(make_config(attacks=attacks, references=2, cache_dir=cache, executor={"kind": "ray"}))
    assert remote.experiment.attack_inputs().models.executor.kind == "ray"
    for a, b in zip(local.attacks, remote.attacks):
        np.testing.assert_array_equal(a.result.scores, b.result.scores)
        assert a.metrics.to_json() == b.metrics.to_json()


def test_a_session_starts_ray_once_and_stops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """One cluster per run: a session starts Ray once, nested sessions and calls inside reuse it, and the
    session stops it at the end (a stand-in Ray: the module's real cluster stays untouched)."""

    class StandIn:
        up, calls = False, []

        def is_initialized(self) -> bool:
            return self.up

        def shutdown(self) -> None:
            self.calls.append("shutdown")
            self.up = False

    fake = StandIn()

    def start(_ray: object, _ex: ExecutorConfig) -> str:
        fake.calls.append("start")
        fake.up = True
        return "started"

    monkeypatch.setattr(executor, "_ray", lambda: fake)
    monkeypatch.setattr(executor, "_start", start)
    with executor.session(RAY), executor.session(RAY):
        assert fake.up
    assert fake.calls == ["start", "shutdown"]


def fails_once(marker: str, value: int) -> int:
    """Raise on the first call (no marker yet), succeed on the retry."""
    path = Path(marker)
    if not path.exists():
        path.write_text("failed once")
        raise RuntimeError("injected failure")
    return value * 2


def test_a_task_that_fails_once_is_retried(tmp_path: Path) -> None:
    marker = str(tmp_path / "failed")
    assert executor.run_tasks(RAY, fails_once, (marker,), [(3,)]) == [6]
    assert Path(marker).read_text() == "failed once"


def test_no_retry_left_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="injected failure"):
        executor.run_tasks(RAY.model_copy(update={"max_retries": 0}), fails_once, (str(tmp_path / "m"),), [(1,)])


def test_local_executor_needs_nothing() -> None:
    assert executor.run_tasks(ExecutorConfig(), lambda a, b: a + b, (1,), [(2,), (3,)]) == [3, 4]


def test_ray_absent_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"miaudit\[ray\]"):
        executor.run_tasks(RAY, fails_once, ("x",), [(1,)])
