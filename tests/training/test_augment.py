"""train.augment and queries.augment (miaudit/augment.py): the views, seeded training, per-view logits, and
LiRA/RMIA consuming them as the released LiRA code (a Gaussian per view, log-likelihoods summed)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit import audits
from miaudit.attacks import AttackInputs, RecordSet, calibration, registry
from miaudit.config import run as config
from miaudit.errors import ConfigError, DataError
from miaudit.training import augment
from miaudit.training import loop as training


def test_query_views() -> None:
    assert augment.query_views("none") == (augment.View(False, 0, 0),)
    assert len(augment.query_views("flip")) == 2
    views = augment.query_views("flip-crop")
    assert len(views) == 18 and len(set(views)) == 18 and views[0] == augment.View(False, 0, 0)


def test_fixed_views_mirror_and_shift() -> None:
    x = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    torch.testing.assert_close(augment.view(x, augment.View(True, 0, 0)), x.flip(-1))
    shifted = augment.view(x, augment.View(False, 4, 0))  # the window moves 4 rows down
    torch.testing.assert_close(shifted[..., :4, :], x[..., 4:, :])
    assert shifted.shape == x.shape


def test_random_batches_are_seeded_and_change_images() -> None:
    x = torch.randn(16, 3, 8, 8)
    a = augment.random_batch(x, "flip-crop", torch.Generator().manual_seed(1))
    b = augment.random_batch(x, "flip-crop", torch.Generator().manual_seed(1))
    torch.testing.assert_close(a, b)
    assert a.shape == x.shape and not torch.equal(a, x)
    flipped = augment.random_batch(x, "flip", torch.Generator().manual_seed(2))
    assert all(torch.equal(f, i) or torch.equal(f, i.flip(-1)) for f, i in zip(flipped, x))
    assert augment.random_batch(x, "none", torch.Generator()) is x


def _net() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 4))


def _trained(cfg: config.TrainConfig, x: np.ndarray, y: np.ndarray) -> torch.Tensor:
    model = training.seeded_model(_net, 0)
    training.train(model, x, y, cfg, seed=3)
    return model[1].weight.detach().clone()


@pytest.mark.slow
def test_training_augmentation_is_seeded_and_changes_the_weights() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3, 8, 8)).astype(np.float32), rng.integers(0, 4, 40)
    plain = config.TrainConfig(epochs=2, batch_size=8)
    aug = plain.model_copy(update={"augment": "flip-crop"})
    torch.testing.assert_close(_trained(aug, x, y), _trained(aug, x, y))
    assert not torch.equal(_trained(aug, x, y), _trained(plain, x, y))
    with pytest.raises(DataError, match="train.augment: augmentation needs image data"):
        training.train(nn.Linear(5, 2), x.reshape(40, -1)[:, :5], y % 2, aug, seed=0)


def test_predict_views_first_view_is_the_records() -> None:
    model = training.seeded_model(_net, 0)
    x = np.random.default_rng(1).normal(size=(6, 3, 8, 8)).astype(np.float32)
    logits = training.predict_logits(model, x)
    views = training.predict_views(model, x, logits, "flip")
    assert views.shape == (2, 6, 4)
    np.testing.assert_array_equal(views[0], logits)
    np.testing.assert_allclose(views[1], training.predict_logits(model, x[..., ::-1].copy()), rtol=1e-5)


def test_one_augmentation_vocabulary_the_old_words_read_with_a_warning() -> None:
    """train.augment and queries.augment say none, flip, flip-crop; queries' old mirror words still read."""
    assert config.from_dict({"train": {"augment": "flip"}, "queries": {"augment": "flip"}}).queries.augment == "flip"
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("miaudit").addHandler(handler)
    try:
        cfg = config.from_dict({"queries": {"augment": "mirror-shift"}})
    finally:
        logging.getLogger("miaudit").removeHandler(handler)
    assert cfg.queries.augment == "flip-crop" and len(augment.query_views(cfg.queries.augment)) == 18
    (record,) = [r for r in records if "deprecated" in r.getMessage()]
    assert "queries.augment" in record.getMessage() and "\n" not in record.getMessage()
    with pytest.raises(ConfigError, match="train.augment"):
        config.from_dict({"train": {"augment": "mirror"}})  # never a word of train.augment


def test_queries_config_accepts_a_file_or_a_mapping() -> None:
    assert config.from_dict({}).queries == config.QueriesConfig()
    assert config.from_dict({"queries": {"augment": "flip-crop"}}).queries.augment == "flip-crop"
    with pytest.raises(ConfigError, match="queries.augment"):
        config.from_dict({"queries": {"augment": "rotate"}})
    with pytest.raises(ConfigError, match="train.augment"):
        config.from_dict({"train": {"augment": "mixup"}})
    with pytest.raises(ConfigError, match="queries: index files select records"):
        config.from_dict({"queries": "q.npy"})  # the shorthand is the index file, as before


def _records(rng: np.random.Generator, views: int | None, k: int = 4, n: int = 30) -> RecordSet:
    labels = rng.integers(0, 3, n)
    target, refs = rng.normal(size=(n, 3)), rng.normal(size=(k, n, 3))
    ref_in = rng.random((k, n)) < 0.5
    ref_in[0], ref_in[1] = True, False  # every record has an IN and an OUT reference
    rs = RecordSet(labels=labels, target_logits=target, ref_logits=refs, ref_in=ref_in)
    if views is None:
        return rs
    return replace(rs, target_views=np.stack([target] * views), ref_views=np.stack([refs] * views))


@pytest.mark.parametrize("name", ["lira", "bavaria-n", "bavaria-t"])
@pytest.mark.parametrize("mode", ["offline", "online"])
def test_identical_views_sum_log_likelihoods(name: str, mode: str) -> None:
    plain, viewed = _records(np.random.default_rng(0), None), _records(np.random.default_rng(0), 3)
    one = registry.score(name, AttackInputs(queries=plain, population=plain, mode=mode), references=4)
    three = registry.score(name, AttackInputs(queries=viewed, population=viewed, mode=mode), references=4)
    np.testing.assert_allclose(three.scores, 3 * one.scores, rtol=1e-10, atol=1e-12)
    if mode == "offline":  # the mean standardised statistic of identical views is the view's own
        np.testing.assert_allclose(three.log_pvalues, one.log_pvalues, rtol=1e-9, atol=1e-12)


def test_distinct_views_change_lira_and_rmia() -> None:
    rs = _records(np.random.default_rng(0), 2)
    other = replace(rs, target_views=rs.target_views + np.random.default_rng(1).normal(size=rs.target_views.shape))
    for name in ("lira", "rmia", "bavaria-n"):
        same = registry.score(name, AttackInputs(queries=rs, population=rs), references=4)
        moved = registry.score(name, AttackInputs(queries=other, population=rs), references=4)
        assert not np.allclose(same.scores, moved.scores), name


def test_rmia_identical_views_equal_no_views() -> None:
    plain = _records(np.random.default_rng(0), None)
    viewed = _records(np.random.default_rng(0), 3)
    a = registry.score("rmia", AttackInputs(queries=plain, population=plain), references=4)
    b = registry.score("rmia", AttackInputs(queries=viewed, population=viewed), references=4)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-12)


def test_calibration_joins_views_with_the_records() -> None:
    q, v = _records(np.random.default_rng(0), 2, n=5), _records(np.random.default_rng(1), 2, n=3)
    joined = calibration.with_calibration_queries(AttackInputs(queries=q, validation=v)).queries
    assert joined.target_views.shape == (2, 8, 3) and joined.ref_views.shape == (2, 4, 8, 3)
    assert joined.first(2).ref_views.shape == (2, 2, 8, 3)


def _image_run(tmp_path: Path, train_augment: str, query_augment: str) -> audits.RunResult:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 120)
    x = (rng.normal(size=(4, 3, 8, 8))[y] + rng.normal(scale=2.0, size=(120, 3, 8, 8))).astype(np.float32)
    np.savez(tmp_path / "images.npz", x=x, y=y)
    cfg = config.from_dict(
        {
            "dataset": {"path": str(tmp_path / "images.npz")},
            "model": "cnn",
            "train": {"epochs": 3, "batch_size": 16, "lr": 0.05, "augment": train_augment},
            "queries": {"augment": query_augment},
            "references": 2,
            "attacks": [
                {"name": "lira", "references": 2},
                {"name": "rmia", "references": 2},
                {"name": "bmia", "samples": 50, "hessian": "diag"},
            ],
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    return audits.run_config(cfg)


@pytest.mark.slow
def test_augmentation_changes_an_audit(tmp_path: Path) -> None:
    scores = {
        (t, q): [run.result.scores for run in _image_run(tmp_path, t, q).attacks]
        for t, q in [("none", "none"), ("flip-crop", "none"), ("none", "flip")]
    }
    base = scores[("none", "none")]
    for key in [("flip-crop", "none"), ("none", "flip")]:
        assert all(not np.allclose(a, b) for a, b in zip(scores[key], base)), key


def test_crops_in_one_gather_equal_a_slice_per_image() -> None:
    """The accelerators' gathered crops copy exactly the windows a slice per image takes (the CPU's way)."""
    gen = torch.Generator().manual_seed(3)
    padded = torch.randn(7, 3, 16, 18, generator=gen)
    dy, dx = torch.randint(0, 9, (2, 7), generator=gen)
    expected = torch.stack([padded[i, :, dy[i] : dy[i] + 8, dx[i] : dx[i] + 10] for i in range(7)])
    assert torch.equal(augment.crops(padded, dy, dx, 8, 10), expected)
    assert torch.equal(augment.gathered(padded, dy, dx, 8, 10), expected)
