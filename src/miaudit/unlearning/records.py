"""The records of an unlearning audit by role: the original model's training records, the forget set drawn or
read among them, the records retrained on, and the unseen records that calibrate every test; each checked before
any model trains (one-line errors naming ``unlearning.forget`` or ``members``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import data
from ..data import Dataset
from ..data.files import load_indices
from ..errors import ConfigError, DataError
from .config import UnlearnConfig

FORGET_TAG = 0xF0E7  # the seed of the forget set's draw


@dataclass(frozen=True)
class Records:
    """The records of an unlearning audit, by role (indices into ``dataset``)."""

    dataset: Dataset
    members: np.ndarray  # the original model's training records
    forget: np.ndarray
    retain: np.ndarray
    unseen: np.ndarray  # records no model trained on
    test: np.ndarray  # the target's test records (accuracy)


def forget_set(spec: int | Path | tuple[int, ...], members: np.ndarray, n_records: int, seed: int) -> np.ndarray:
    """The forgotten records: ``spec`` of the members drawn with the seed, or an index file's or a list's
    records, each of them a member; at least 2 records must be left to retrain on. Refused in one line otherwise."""
    if isinstance(spec, int):
        if spec > len(members) - 2:
            raise ConfigError(
                f"unlearning.forget: {spec} records asked, the original model trained on {len(members)}; "
                f"give at most {len(members) - 2}"
            )
        rng = np.random.default_rng(np.random.SeedSequence([seed, FORGET_TAG]))
        return np.sort(rng.choice(members, size=spec, replace=False))
    if isinstance(spec, tuple):
        forget = np.asarray(spec, dtype=np.int64)
        if forget.max() >= n_records:
            raise DataError(f"unlearning.forget: record {int(forget.max())} is outside the data ({n_records} records)")
    else:
        forget = load_indices(spec, "unlearning.forget", n_records)
        if not len(forget):
            raise DataError(f"unlearning.forget: {Path(spec).name} lists no records")
    outside = np.setdiff1d(forget, members)
    if len(outside):
        raise DataError(
            f"unlearning.forget: record {int(outside[0])} is not among the original model's training records "
            f"({len(outside)} such); the forget set must be a subset of them"
        )
    if len(members) - len(forget) < 2:
        raise DataError("unlearning.forget: fewer than 2 training records would be left to retrain on")
    return np.sort(forget)


def records(u: UnlearnConfig, ds: Dataset) -> Records:
    """The roles: members from the config's split (or the ``members`` file), the forget set among them."""
    n = len(ds)
    if u.members is not None:
        members = np.sort(load_indices(u.members, "members", n))
        if len(members) < 3:
            raise DataError(f"members: {len(members)} record(s); an unlearning audit needs at least 3")
        unseen = np.setdiff1d(np.arange(n), members)
        test = unseen
    else:
        split = data.split_indices(n, u.cfg.seed, u.cfg.split.as_tuple())
        members = np.sort(split.members)
        unseen = np.setdiff1d(np.arange(n), members)
        test = np.sort(split.nonmembers)
    if len(unseen) < 2:
        raise DataError("members: no records are left outside the training records to calibrate the tests on")
    forget = forget_set(u.unlearning.forget, members, n, u.cfg.seed)
    if not np.isin(ds.y[forget], ds.y[unseen]).any():  # each record is compared with unseen ones of its label
        raise DataError(
            "unlearning.forget: no record outside the training records has a label of the forgotten ones; "
            "nothing to compare them with"
        )
    retain = np.setdiff1d(members, forget)
    return Records(ds, members, forget, retain, unseen, test)
