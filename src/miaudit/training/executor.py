"""Executors: where independent pieces of work (one reference model's training) run.

``local`` (the default) runs them one after another in this process. ``ray`` (``pip install
miaudit[ray]``) runs each as a Ray task: ``address: auto`` joins a running cluster, no address starts
a local one for this run (stopped at the end); an already initialised Ray (``ray.init`` in the
caller's own code) is used as it is. A task that fails (an exception, a worker that dies) is retried by
Ray up to ``max_retries`` times. Tasks return small values: models go through the content-addressed
store (``store.py``: per-entry locks, atomic writes, checksums), so a task that dies half-way leaves
no entry that could be read, and the driver loads what the tasks wrote. The store must be on storage
every worker sees (``cache_dir``).

No scheduler of our own: Ray places the tasks; ``num_workers`` only caps how many are in flight.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigError
from .options import ExecutorConfig

Log = Callable[[str], None]
START_ATTEMPTS = 3


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError('executor: kind ray needs Ray; pip install "miaudit[ray]"') from None
    return ray


def _start(ray: Any, ex: ExecutorConfig) -> str:
    """Join the cluster at ``ex.address``, or start a local one sized by num_workers x cpus_per_task."""
    if ex.address is not None:
        ray.init(address=ex.address, include_dashboard=False, configure_logging=False, log_to_driver=False)
        return f"joined the Ray cluster at {ex.address}"
    cpus = math.ceil(ex.num_workers * ex.cpus_per_task) if ex.num_workers else None
    # Ray runs task workers at niceness 15; on a machine shared with other work that starves the run's own
    # tasks (a posterior task took minutes beside two busy processes). A cluster started for this run
    # does the run's work: its workers get the driver's priority (read by the raylet at start).
    os.environ.setdefault("RAY_worker_niceness", "0")
    for attempt in range(START_ATTEMPTS):  # Ray gives a raylet 30 s to register: a loaded machine can miss it
        try:
            ray.init(
                address="local", num_cpus=cpus, include_dashboard=False, configure_logging=False, log_to_driver=False
            )
            break
        except Exception:
            ray.shutdown()
            if attempt == START_ATTEMPTS - 1:
                raise
    return f"started a local Ray cluster ({int(ray.cluster_resources().get('CPU', 0))} CPUs)"


@contextmanager
def session(ex: ExecutorConfig, log: Log | None = None) -> Iterator[None]:
    """One Ray cluster for a whole run (reference training, then every attack's posterior tasks), instead of
    one per ``run_tasks`` call: a local cluster takes seconds to start. Local executor: nothing."""
    if ex.kind == "local":
        yield
        return
    ray = _ray()
    if ray.is_initialized():  # the caller's own ray.init, or an enclosing session
        yield
        return
    where = _start(ray, ex)
    if log is not None:
        log(f"executor ray: {where}")
    try:
        yield
    finally:
        ray.shutdown()


def run_tasks(
    ex: ExecutorConfig,
    fn: Callable[..., Any],
    shared: Sequence[Any],
    per_task: Sequence[Sequence[Any]],
    log: Log | None = None,
) -> list[Any]:
    """``[fn(*shared, *args) for args in per_task]``, locally or as Ray tasks (``shared`` is put in Ray's
    object store once). Results come back in task order. Outside a ``session`` a Ray cluster is started
    for this call and stopped after it."""
    if ex.kind == "local" or not per_task:
        return [fn(*shared, *args) for args in per_task]
    ray = _ray()
    started = not ray.is_initialized()
    where = _start(ray, ex) if started else "the running Ray session"
    try:
        start = time.perf_counter()
        task = ray.remote(fn).options(
            num_cpus=ex.cpus_per_task, num_gpus=ex.gpus_per_task, max_retries=ex.max_retries, retry_exceptions=True
        )
        shared_refs = [ray.put(s) for s in shared]
        limit = ex.num_workers or len(per_task)
        refs: list[Any] = []
        pending: list[Any] = []
        for args in per_task:
            while len(pending) >= limit:
                _, pending = ray.wait(pending, num_returns=1)
            refs.append(task.remote(*shared_refs, *args))
            pending.append(refs[-1])
        results = ray.get(refs)
        if log is not None:
            log(f"executor ray: {len(per_task)} task(s) on {where} in {time.perf_counter() - start:.1f} s")
        return results
    finally:
        if started:
            ray.shutdown()
