"""Reference models obtained together (experiment/together.py): stored one entry each, as one at a time;
an interrupted stack resumes without retraining finished members; the memory bound cuts stacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from miaudit.config.run import from_dict
from miaudit.data import Dataset
from miaudit.experiment import together
from miaudit.experiment.recipes import ModelJob, ModelRecipe, builtin_recipe
from miaudit.experiment.together import chunks, obtain_all
from miaudit.progress import ModelProgress
from miaudit.training import loop, stacked
from miaudit.training.store import Store


def dataset() -> Dataset:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 6)).astype(np.float32)
    return Dataset("generated", x, (x[:, 0] > 0).astype(np.int64), 2)


def job(role: str, seed: int, train_idx: np.ndarray) -> ModelJob:
    """A job as ``build.reference_jobs`` makes it (``obtain_all`` reads its role, seed and records)."""
    return ModelJob(role=role, recipe=recipe(dataset()), ds=dataset(), seed=seed, train_idx=train_idx)


def jobs(n: int) -> list[ModelJob]:
    return [job(f"reference {k + 1}/{n}", 100 + k, np.random.default_rng(k).permutation(120)[:60]) for k in range(n)]


def recipe(ds: Dataset, **train: Any) -> Any:
    cfg = from_dict({"dataset": "digits", "model": "mlp", "train": {"epochs": 2, "batch_size": 16, **train}})
    return builtin_recipe(cfg, ds, "mlp")


def counting(monkeypatch: pytest.MonkeyPatch) -> tuple[list[int], list[int]]:
    """Stack sizes trained together, and models trained alone (their record counts)."""
    stacks: list[int] = []
    singles: list[int] = []
    real_stack, real_train = stacked.train_together, loop.train

    def stack(members: Any, *args: Any, **kwargs: Any) -> Any:
        stacks.append(len(members))
        return real_stack(members, *args, **kwargs)

    def single(model: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
        singles.append(len(x))
        return real_train(model, x, *args, **kwargs)

    monkeypatch.setattr(stacked, "train_together", stack)
    monkeypatch.setattr(loop, "train", single)
    return stacks, singles


def obtained(store: Store, rec: Any, n: int = 4) -> list[Any]:
    with ModelProgress(n) as progress:
        return obtain_all(store, rec, dataset(), jobs(n), progress)


@pytest.mark.slow
def test_stored_apart_under_the_keys_of_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four models in one stack: four entries, which a run training one at a time loads without training."""
    stacks, singles = counting(monkeypatch)
    store = Store(tmp_path)
    first = obtained(store, recipe(dataset(), models_at_once=4))
    assert stacks == [4] and singles == [] and not any(m.cached for m in first)
    assert len(list(tmp_path.glob("models/*/model.safetensors"))) == 4
    again = obtained(store, recipe(dataset(), models_at_once=1))
    assert all(m.cached for m in again) and stacks == [4] and singles == []
    for a, b in zip(first, again, strict=True):
        np.testing.assert_allclose(a.logits, b.logits, rtol=1e-6)  # float32 storage of float64 logits
    assert len({m.train_idx.tobytes() for m in again}) == 4


@pytest.mark.slow
def test_one_at_a_time_trains_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stacks, singles = counting(monkeypatch)
    obtained(Store(tmp_path), recipe(dataset(), models_at_once=1))
    assert stacks == [] and singles == [60] * 4


@pytest.mark.slow
def test_interrupted_stack_resumes_without_retraining_finished_members(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stacks of 2: the run stops in the second stack; the rerun loads the first two, trains the rest."""
    stacks, _ = counting(monkeypatch)
    real = stacked.train_together

    def interrupted(members: Any, *args: Any, **kwargs: Any) -> Any:
        if len(stacks) == 1:  # the first stack finished: stop in the second
            raise KeyboardInterrupt
        return real(members, *args, **kwargs)

    monkeypatch.setattr(stacked, "train_together", interrupted)
    store = Store(tmp_path)
    rec = recipe(dataset(), models_at_once=2)
    with pytest.raises(KeyboardInterrupt):
        obtained(store, rec)
    assert len(list(tmp_path.glob("models/*/meta.json"))) == 2
    stacks.clear()
    resumed = obtained(store, rec)
    assert [m.cached for m in resumed] == [True, True, False, False] and stacks == [2]
    assert len(list(tmp_path.glob("models/*/meta.json"))) == 4


@pytest.mark.slow
def test_memory_bound_cuts_stacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget holding two members: five models train in stacks of at most two."""
    stacks, _ = counting(monkeypatch)
    rec = recipe(dataset(), models_at_once=5)
    per = stacked.bytes_per_member(rec.build(), dataset().x[:60], rec.together)
    budget = 2.5 * per / stacked.MB
    monkeypatch.setattr(stacked, "memory_budget", lambda cfg, device: int(budget * stacked.MB))
    models = obtained(Store(tmp_path), rec, n=5)
    assert max(stacks) == 2 and sum(stacks) == 5 and len(models) == 5


def test_chunks_are_even_and_ordered() -> None:
    assert chunks(list(range(16)), 12) == [list(range(8)), list(range(8, 16))]
    assert chunks([3, 1, 2], 1) == [[3], [1], [2]]
    assert chunks([], 4) == []
    assert [len(c) for c in chunks(list(range(5)), 2)] == [2, 1, 2]


def test_dp_and_user_code_train_one_at_a_time() -> None:
    ds = dataset()
    cfg = from_dict({"dataset": "digits", "model": "mlp", "train": {"dp": {"noise_multiplier": 1.0}}})
    dp_recipe = builtin_recipe(cfg, ds, "mlp", dp=cfg.train.dp)
    assert together.stack_size(dp_recipe, ds, jobs(4), "cpu") == 1
    user_code = ModelRecipe(architecture="x", build=recipe(ds).build, fit=lambda *a: None)  # not cached
    assert together.stack_size(user_code, ds, jobs(4), "cpu") == 1


def test_progress_counts_models_per_minute() -> None:
    progress = ModelProgress(3)
    assert progress.models_per_minute() is None
    progress.training("r", 1)
    progress.finished("r", 1.0, cached=False, together=2)
    progress.finished("s", 1.0, cached=False, together=2)
    rate = progress.models_per_minute()
    assert rate is not None and rate > 0


def test_auto_trains_one_at_a_time_on_a_cpu() -> None:
    """auto stacks only on an accelerator (no faster than alone on a CPU, CNNs and MLPs); a number stacks anyway."""
    rng = np.random.default_rng(0)
    ds = Dataset("images", rng.normal(size=(40, 3, 8, 8)).astype(np.float32), rng.integers(0, 2, 40), 2)
    image_jobs = [job(f"reference {k + 1}/4", k, np.arange(20) + k) for k in range(4)]

    def cnn(at_once: int | str) -> Any:
        cfg = from_dict({"dataset": "digits", "model": "cnn", "train": {"epochs": 1, "models_at_once": at_once}})
        return builtin_recipe(cfg, ds, "cnn")

    assert together.stack_size(cnn("auto"), ds, image_jobs, "cpu") == 1
    assert together.stack_size(cnn(4), ds, image_jobs, "cpu") == 4
    assert together.stack_size(recipe(dataset()), dataset(), jobs(4), "cpu") == 1
    assert together.stack_size(recipe(dataset(), models_at_once=4), dataset(), jobs(4), "cpu") == 4


def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process may use two cores with two torch threads (CI's machine; a one-core runner is made one)."""
    import torch

    from miaudit.training import executor

    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)


@pytest.mark.slow
def test_auto_on_a_cpu_trains_in_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """auto with two cores: four models trained by two forked workers (one thread each), stored one entry each,
    counted as trained (not loaded), and equal to the same models trained one at a time in this process."""
    import torch

    two_cores(monkeypatch)
    assert together.worker_processes(recipe(dataset()), 4, "cpu") == 2
    store = Store(tmp_path / "auto")
    with ModelProgress(4) as progress:
        auto = obtain_all(store, recipe(dataset()), dataset(), jobs(4), progress)
    assert progress.trained == 4 and progress.cached == 0 and not any(m.cached for m in auto)
    assert len(list((tmp_path / "auto").glob("models/*/model.safetensors"))) == 4
    monkeypatch.undo()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' thread count: the same kernels, so the same sums
    try:
        alone = obtained(Store(tmp_path / "alone"), recipe(dataset(), models_at_once=1))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(auto, alone, strict=True):
        assert a.role == b.role
        np.testing.assert_allclose(a.logits, b.logits, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_workers_resume_and_leave_finished_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two of four models in the store (an interrupted run): the workers train the other two only."""
    two_cores(monkeypatch)
    store = Store(tmp_path)
    first = jobs(4)[:2]
    with ModelProgress(2) as progress:
        obtain_all(store, recipe(dataset(), models_at_once=1), dataset(), first, progress)
    with ModelProgress(4) as progress:
        models = obtain_all(store, recipe(dataset()), dataset(), jobs(4), progress)
    assert [m.cached for m in models] == [True, True, False, False]
    assert progress.trained == 2 and progress.cached == 2


def test_who_trains_in_worker_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers: auto, a CPU, a cached recipe, two or more models and threads; else this process."""
    two_cores(monkeypatch)
    ds = dataset()
    assert together.worker_processes(recipe(ds), 3, "cpu") == 2
    assert together.worker_processes(recipe(ds), 1, "cpu") == 1
    assert together.worker_processes(recipe(ds, models_at_once=1), 4, "cpu") == 1
    assert together.worker_processes(recipe(ds, models_at_once=4), 4, "cpu") == 1  # a number: stacks
    assert together.worker_processes(recipe(ds), 4, "cuda") == 1  # an accelerator: stacks
    user_code = ModelRecipe(architecture="x", build=recipe(ds).build, fit=lambda *a: None)  # not cached
    assert together.worker_processes(user_code, 4, "cpu") == 1
    import torch

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # OMP_NUM_THREADS=1: one core
    assert together.worker_processes(recipe(ds), 4, "cpu") == 1


def test_progress_in_workers_counts_each_models_share() -> None:
    """Two workers: a model's own time is half of the run's, so the time left halves."""
    progress = ModelProgress(4)
    progress.in_workers(2)
    progress.finished("r", 4.0, cached=False, workers=2)
    assert progress.train_seconds == [2.0] and progress.seconds_left() == pytest.approx(6.0)
    assert progress.models_per_minute() is not None
