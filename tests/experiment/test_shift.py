"""The robustness scenarios (BMIA paper 4.4): config keys, the built-in noisy sets, the data rearrangement."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit import data
from miaudit.config import run as config
from miaudit.data import Dataset, Split
from miaudit.errors import ConfigError, DataError
from miaudit.experiment import datasets as shift


def test_shift_keys_parse_names_paths_and_mappings(tmp_path) -> None:
    cfg = config.from_dict({"reference_data": "digits-noise", "nonmember_data": str(tmp_path / "x.npz")})
    assert cfg.reference_data.name == "digits-noise" and cfg.nonmember_data.path == tmp_path / "x.npz"
    assert config.from_dict({"nonmember_data": {"path": "y.npz"}}).nonmember_data.path.name == "y.npz"
    with pytest.raises(ConfigError, match="reference_data: online references train on the queries"):
        config.from_dict({"reference_data": "digits-noise", "mode": "online", "references": 2})


def test_noisy_digits_is_a_fixed_shifted_copy() -> None:
    base, noisy = data.load("digits"), data.load("digits-noise")
    assert noisy.x.shape == base.x.shape and np.array_equal(noisy.y, base.y)
    diff = (noisy.x - base.x).ravel()
    assert abs(diff.std() - 0.5) < 0.01 and abs(diff.mean()) < 0.01
    np.testing.assert_array_equal(data.load("digits-noise").x, noisy.x)


def _ds(n: int, offset: float, name: str) -> Dataset:
    return Dataset(name=name, x=np.full((n, 3), offset, np.float32), y=np.arange(n) % 2, n_classes=2)


def test_ood_nonmembers_and_reference_pool_append_the_other_records() -> None:
    ds, other = _ds(20, 0.0, "a"), _ds(30, 1.0, "b")
    split = Split(
        members=np.arange(4), nonmembers=np.arange(4, 8), population=np.arange(8, 16), validation=np.arange(16, 20)
    )
    joined, idx = shift.appended(ds, other, len(split.nonmembers), seed=0, tag=1)
    assert len(joined) == 24 and np.all(joined.x[idx] == 1.0) and np.all(joined.x[:20] == 0.0)
    with pytest.raises(DataError, match="needs 40"):
        shift.appended(ds, other, 40, seed=0, tag=1)


def test_other_data_must_match_features_and_classes() -> None:
    cfg = config.from_dict({"nonmember_data": "iris"})
    with pytest.raises(DataError, match="nonmember_data: iris has records of shape"):
        shift.load_other(cfg, cfg.nonmember_data, "nonmember_data", data.load("digits"))


def test_other_data_is_read_as_the_audited_data(tmp_path) -> None:
    """One translation of a data config into a loader: a file's num_classes holds for reference_data too."""
    rng = np.random.default_rng(0)
    for name in ("own", "other"):
        np.savez(tmp_path / f"{name}.npz", x=rng.normal(size=(40, 3)), y=np.arange(40) % 3)
    own = {"path": str(tmp_path / "own.npz"), "num_classes": 5}
    cfg = config.from_dict({"dataset": own, "reference_data": {**own, "path": str(tmp_path / "other.npz")}})
    audited = shift.load(cfg)
    assert audited.n_classes == 5 and shift.load(cfg, cfg.reference_data).n_classes == 5
    assert shift.load_other(cfg, cfg.reference_data, "reference_data", audited).n_classes == 5


@pytest.mark.slow
def test_reference_data_trains_the_references_on_the_other_population(make_config, tmp_path) -> None:
    """End to end: with reference_data the references train on the other data set's records (appended after
    the target's), so their logits and the attacks' scores change; the target is the same model."""
    from miaudit import audits

    attacks = [{"name": "lira", "references": 1}]
    plain = audits.run_config(make_config(attacks=attacks, references=1, cache_dir=str(tmp_path)))
    shifted = audits.run_config(
        make_config(attacks=attacks, references=1, cache_dir=str(tmp_path), reference_data="digits-noise")
    )
    n = len(plain.experiment.dataset)
    assert (shifted.experiment.references[0].train_idx >= n).all()  # the other population's records only
    np.testing.assert_array_equal(plain.experiment.target.logits, shifted.experiment.target.logits)
    assert not np.allclose(plain.attacks[0].result.scores, shifted.attacks[0].result.scores)
