"""The model cache (never retrain a finished model, resume an interrupted run), the
threat-model split inside the pipeline, and run-to-run determinism."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from miaudit import audits, pipeline
from miaudit.config.run import RunConfig
from miaudit.membership import decide
from miaudit.training import loop as training_loop
from miaudit.training import stacked
from miaudit.training.loop import predict_logits

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)

TIMING_KEYS = {"seconds", "training_seconds", "cache_dir", "created"}  # wall-clock numbers and the folder differ


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory, make_config: Callable[..., RunConfig]) -> audits.RunResult:
    """The tiny audit, run once from an empty cache that tests copy before changing."""
    return audits.run_config(make_config(cache_dir=str(tmp_path_factory.mktemp("first_cache"))))


def copy_cache(res: audits.RunResult, dest: Path) -> Path:
    shutil.copytree(res.experiment.cfg.cache_dir, dest)
    return dest


def count_training(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap the pipeline's training calls (one at a time, and together); the list grows by the training-set
    size per model trained."""
    calls: list[int] = []
    real, real_together = training_loop.train, stacked.train_together

    def counted(module, x, *args, **kwargs):
        calls.append(len(x))
        return real(module, x, *args, **kwargs)

    def counted_together(members, *args, **kwargs):
        calls.extend(len(m.x) for m in members)
        return real_together(members, *args, **kwargs)

    monkeypatch.setattr(training_loop, "train", counted)
    monkeypatch.setattr(stacked, "train_together", counted_together)
    return calls


def without_timing(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: without_timing(v) for k, v in tree.items() if k not in TIMING_KEYS}
    if isinstance(tree, list):
        return [without_timing(v) for v in tree]
    return tree


def test_first_run_trains_every_model(first_run: audits.RunResult) -> None:
    exp = first_run.experiment
    assert [m.cached for m in [exp.target, *exp.references]] == [False, False, False]
    assert len(list(Path(exp.cfg.cache_dir, "models").glob("*/meta.json"))) == 3


def test_second_run_trains_nothing(first_run: audits.RunResult, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a cached model was trained again")

    monkeypatch.setattr(training_loop, "train", refuse)
    monkeypatch.setattr(stacked, "train_together", refuse)
    again = audits.run_config(first_run.experiment.cfg)
    exp = again.experiment
    assert all(m.cached for m in [exp.target, *exp.references])
    assert not exp.target.module.training  # loaded weights are evaluated in eval mode
    # float32 storage loses nothing: the model computes in float32.
    np.testing.assert_array_equal(exp.target.logits, first_run.experiment.target.logits)
    np.testing.assert_array_equal(predict_logits(exp.target.module, exp.dataset.x), exp.target.logits)
    np.testing.assert_array_equal(again.attacks[0].result.scores, first_run.attacks[0].result.scores)


def test_interrupted_run_retrains_only_the_unfinished_model(
    first_run: audits.RunResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = copy_cache(first_run, tmp_path / "cache")
    [unfinished] = [m for m in cache.glob("models/*/meta.json") if json.loads(m.read_text())["role"] == "reference 2/2"]
    unfinished.unlink()  # weights and logits on disk, meta.json (written last) missing: an interrupted save
    calls = count_training(monkeypatch)
    exp = pipeline.prepare(first_run.experiment.cfg.model_copy(update={"cache_dir": cache}))
    assert [m.cached for m in [exp.target, *exp.references]] == [True, True, False]
    assert calls == [len(exp.references[1].train_idx)]
    # Training is deterministic: the retrained model is the one that was lost.
    np.testing.assert_array_equal(exp.references[1].logits, first_run.experiment.references[1].logits)
    assert unfinished.is_file()


def test_more_references_reuse_the_cached_ones(
    first_run: audits.RunResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = copy_cache(first_run, tmp_path / "cache")
    calls = count_training(monkeypatch)
    exp = pipeline.prepare(first_run.experiment.cfg.model_copy(update={"cache_dir": cache, "references": 3}))
    assert [m.cached for m in exp.references] == [True, True, False] and len(calls) == 1


def test_offline_threat_model(first_run: audits.RunResult) -> None:
    exp = first_run.experiment
    s = exp.split
    np.testing.assert_array_equal(exp.target.train_idx, s.members)
    for ref in exp.references:  # references sample the population only (BMIA paper 4.1)
        assert np.isin(ref.train_idx, s.population).all()
        assert len(ref.train_idx) == len(s.population) // 2
    np.testing.assert_array_equal(np.sort(exp.query_idx), np.sort(np.concatenate([s.members, s.nonmembers])))
    np.testing.assert_array_equal(exp.is_member, np.isin(exp.query_idx, s.members))
    inputs = exp.attack_inputs()
    assert not inputs.queries.ref_in.any()  # no reference saw a query
    np.testing.assert_array_equal(inputs.population.ref_in, exp.ref_masks)
    assert inputs.validation.x.shape == (len(s.validation), 1, 8, 8)
    assert inputs.queries.ref_logits.shape == (2, len(exp.query_idx), 10)


def test_online_each_query_in_for_half_the_references(make_config: Callable[..., RunConfig]) -> None:
    exp = pipeline.prepare(make_config(mode="online"))
    ref_in = exp.attack_inputs().queries.ref_in
    assert ref_in.shape == (2, len(exp.query_idx)) and (ref_in.sum(axis=0) == 1).all()
    assert not np.isin(exp.split.validation, np.concatenate([r.train_idx for r in exp.references])).any()


def test_same_seed_fresh_cache_same_results(first_run: audits.RunResult, tmp_path: Path) -> None:
    again = audits.run_config(first_run.experiment.cfg.model_copy(update={"cache_dir": tmp_path}))
    assert not again.experiment.target.cached
    assert without_timing(decide.results_json(again)) == without_timing(decide.results_json(first_run))
    np.testing.assert_array_equal(again.attacks[0].result.scores, first_run.attacks[0].result.scores)


def test_other_seed_other_split(first_run: audits.RunResult, make_config: Callable[..., RunConfig]) -> None:
    exp = pipeline.prepare(make_config(seed=1))
    assert not np.array_equal(exp.split.members, first_run.experiment.split.members)
    assert not np.array_equal(exp.dataset.x, first_run.experiment.dataset.x)  # another digits subset too
