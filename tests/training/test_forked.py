"""``executor.forked``: tasks in forked worker processes, each reported here as it finishes; a failure is raised
here; a worker is quiet and has one torch thread."""

from __future__ import annotations

import logging
import os

import pytest

from miaudit.training import executor

pytestmark = pytest.mark.skipif(not executor.can_fork(), reason="forked workers: Linux only")


def test_every_task_reported_once_with_its_result() -> None:
    done: dict[int, tuple[int, int]] = {}
    parent = os.getpid()

    def task(i: int) -> tuple[int, int]:
        return i * i, os.getpid()

    executor.forked(task, 6, 2, lambda i, r: done.__setitem__(i, r))
    assert sorted(done) == list(range(6)) and all(done[i][0] == i * i for i in done)
    pids = {pid for _, pid in done.values()}
    assert parent not in pids and 1 <= len(pids) <= 2


def test_a_closure_over_unpicklable_state_runs() -> None:
    """Nothing but the index is pickled: the task may close over a lambda (a recipe's build)."""
    scale = lambda v: 3 * v  # unpicklable on purpose
    got: list[int] = []
    executor.forked(lambda i: scale(i), 3, 2, lambda i, r: got.append(r))
    assert sorted(got) == [0, 3, 6]


def test_a_failing_task_raises_here() -> None:
    def task(i: int) -> int:
        if i == 1:
            raise ValueError("task 1 failed")
        return i

    with pytest.raises(ValueError, match="task 1 failed"):
        executor.forked(task, 3, 2, lambda i, r: None)


def test_a_worker_is_quiet_with_one_thread() -> None:
    import torch

    got: list[tuple[int, int]] = []
    executor.forked(
        lambda i: (torch.get_num_threads(), logging.getLogger("miaudit").getEffectiveLevel()),
        2,
        2,
        lambda i, r: got.append(r),
    )
    assert got == [(1, logging.WARNING)] * 2


@pytest.mark.slow
def test_a_failure_stops_the_other_workers_at_once() -> None:
    """Task 0 fails while task 1 would run for a minute: the call returns within seconds (the worker is stopped,
    not waited for)."""
    import time

    def task(i: int) -> int:
        if i == 0:
            time.sleep(0.5)  # task 1 has started
            raise RuntimeError("first failed")
        time.sleep(60)
        return i

    start = time.perf_counter()
    with pytest.raises(RuntimeError, match="first failed"):
        executor.forked(task, 2, 2, lambda i, r: None)
    assert time.perf_counter() - start < 30
