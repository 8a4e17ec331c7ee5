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

``forked`` is the local executor's way to use a machine's cores for independent models (``train.models_at_once:
auto`` on a CPU): worker processes forked from this one, one torch thread each, so nothing is pickled but the
task's index and its small result.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import multiprocessing
import os
import signal
import sys
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any, TypeVar, cast

from ..errors import ConfigError
from .options import ExecutorConfig

Log = Callable[[str], None]
START_ATTEMPTS = 3
PR_SET_PDEATHSIG = 1  # linux/prctl.h
T = TypeVar("T")


def _ray() -> types.ModuleType:
    try:
        import ray
    except ImportError:
        raise ConfigError('executor: kind ray needs Ray; pip install "miaudit[ray]"') from None
    return ray


def _start(ray: types.ModuleType, ex: ExecutorConfig) -> str:
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


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def can_fork() -> bool:
    """Whether ``forked`` may run: Linux only (macOS's system libraries are not fork-safe after threads ran)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


_FORKED: dict[str, Any] = {}  # what a forked worker runs, set before the fork: inherited, never pickled


def _worker_start(threads: int) -> None:
    import torch

    # SIGTERM kills a worker (the parent's handler, inherited by the fork, would raise inside a task and the
    # worker would take the next one), and the worker gets it when its parent dies, however it dies: no orphan
    # trains on or idles (Linux's PR_SET_PDEATHSIG; the pool forks its workers from the main thread).
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != _FORKED.get("parent"):  # the parent died before the request took
            os._exit(1)

    torch.set_num_threads(threads)
    # A worker is quiet: the parent reports each task as it finishes (a live display from a child would draw
    # over the parent's). Its warnings go to a plain handler: the parent's rich one shares a console lock that
    # the parent's display thread may have held at the fork.
    logger = logging.getLogger("miaudit")
    logger.handlers = [logging.StreamHandler()]
    logger.setLevel(logging.WARNING)


def _worker_task(i: int) -> object:
    return _FORKED["task"](i)


def forked(task: Callable[[int], T], n: int, workers: int, done: Callable[[int, T], None]) -> None:
    """``task(i)`` for i in range(n) in ``workers`` processes forked from this one, each with one torch thread;
    ``done(i, result)`` is called here as each finishes (in the order they finish). ``task`` is inherited by
    the fork, so it may be a closure over models and data; its result is pickled back, so keep it small.
    The first failure (or Ctrl-C) cancels the tasks not started and is raised here; tasks that finished
    have been reported to ``done``.

    Fork rather than spawn: a spawned worker would re-import the caller's main script (a user's script
    without a ``__main__`` guard would run again) and pay torch's import; a fork after torch ran is what
    torch's own DataLoader workers do, and one thread per worker keeps torch's thread pools out of the child."""
    _FORKED["task"], _FORKED["parent"] = task, os.getpid()
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_start, initargs=(1,)
    )
    try:
        futures = {pool.submit(_worker_task, i): i for i in range(n)}
        for future in as_completed(futures):
            done(futures[future], cast(T, future.result()))  # task's result; its exception is raised here
    except BaseException:
        # Stop the workers now (a failure, Ctrl-C): shutdown alone would let each finish the task it holds and
        # start the one queued for it. Python 3.14's terminate_workers does this; before it, only the private
        # process table can.
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _FORKED.clear()
