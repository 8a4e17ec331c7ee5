"""The records the Python API is given (``miaudit.audit``): each set read from arrays, tensors or a torch
``Dataset``, checked alone and against the others, then assembled into one data set and the audit's records,
each record remembering the set it came from and its row there."""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..config.run import RunConfig
from ..data import Dataset, Split
from ..data.base import validate_arrays, validate_features
from ..errors import DataError
from .base import AuditRecords
from .build import shuffled_queries, with_calibration_records

if TYPE_CHECKING:  # torch loads when records are read: importing this module stays light
    import torch.nn as nn

    from .own_lm import TextSets

# What ``miaudit.audit`` takes as a set of records: a pair (x, y) of arrays or tensors, a torch ``Dataset`` of
# (x, y) items, or a sequence of texts (a causal LM's target); checked when read (``read_records``, ``TextSets``).
Records = object

SETS = ("members", "nonmembers", "queries", "population", "validation")


def as_numpy(value: object) -> np.ndarray:
    import torch

    return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)


def read_records(value: Records, field: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) arrays from a pair of arrays/tensors or a torch Dataset of (x, y) items."""
    import torch

    try:
        if isinstance(value, torch.utils.data.Dataset):
            items = [value[i] for i in range(len(cast(Sized, value)))]  # a map-style Dataset has a length
            return np.stack([as_numpy(x) for x, _ in items]), np.array([as_numpy(y) for _, y in items])
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return as_numpy(value[0]), as_numpy(value[1])
    except (TypeError, ValueError) as e:  # ragged rows, items that are not (x, y) pairs ...
        raise DataError(f"{field}: cannot read the records ({str(e).splitlines()[0][:120]})") from None
    raise DataError(
        f"{field}: expected a pair (x, y) of arrays or tensors, or a torch Dataset of (x, y) items, "
        f"got {type(value).__name__}"
    )


def checked_sets(target: nn.Module, given: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, Dataset]:
    """Every set checked alone (finite numbers, labels in the target's classes) and against the first's shape."""
    from . import validate

    first = next(iter(given))
    x0 = validate_features(first, given[first][0])
    n_classes = validate.model_classes(target, x0, "target")
    sets = {name: validate_arrays(name, x, y, n_classes) for name, (x, y) in given.items()}
    for name, ds in sets.items():
        if ds.input_shape != sets[first].input_shape:
            raise DataError(f"{name}: records have shape {ds.input_shape}, {first} records {sets[first].input_shape}")
    return sets


def given_sets(membership: dict[str, Any], extra: dict[str, Any], read: Callable = read_records) -> dict[str, tuple]:
    members, nonmembers, queries = (membership[k] for k in ("members", "nonmembers", "queries"))
    if queries is not None and (members is not None or nonmembers is not None):
        raise DataError("queries: give either queries (membership unknown) or members and nonmembers, not both")
    if queries is None and (members is None or nonmembers is None):
        raise DataError(
            f"{'members' if members is None else 'nonmembers'}: give members and nonmembers "
            "(membership known), or queries (unknown)"
        )
    given = {name: read(v, name) for name, v in {**membership, **extra}.items() if v is not None}
    for name in ("members", "nonmembers", "queries"):
        if name in given and not len(given[name][1]):
            raise DataError(f"{name}: no records; the audit needs at least one")
    return given


def assembled(sets: dict[str, Dataset], name: str) -> tuple[Dataset, dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """One data set of every record (sets in SETS order), each set's record indices, and per record the
    set it came from and its row there."""
    order = [s for s in SETS if s in sets]
    sizes = [len(sets[s]) for s in order]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    idx = {s: np.arange(starts[i], starts[i + 1]) for i, s in enumerate(order)}
    ds = Dataset(
        name,
        np.concatenate([sets[s].x for s in order]),
        np.concatenate([sets[s].y for s in order]),
        sets[order[0]].n_classes,
    )
    origin = np.repeat(np.array(order, dtype=object), sizes)
    position = np.concatenate([np.arange(n) for n in sizes])
    return ds, idx, origin, position


def audit_records(
    cfg: RunConfig, sets: dict[str, Dataset], lm: TextSets | None = None
) -> tuple[AuditRecords, Any, Any]:
    """The checked sets as one data set and the audit's records (``lm``: with a causal LM's texts); per record
    the set it came from and its row there."""
    from . import validate

    if "members" in sets:
        m, n = sets["members"], sets["nonmembers"]
        validate.check_disjoint_rows((m.x, m.y, np.arange(len(m))), (n.x, n.y, np.arange(len(n))))
    ds, idx, origin, position = assembled(sets, cfg.dataset.label)
    ds = lm.dataset(ds, origin, position) if lm else ds
    empty = np.zeros(0, dtype=np.int64)
    given_split = Split(
        **{role: idx.get(role, empty) for role in ("members", "nonmembers", "population", "validation")}
    )
    split = with_calibration_records(given_split, cfg)
    query_idx, is_member = (idx["queries"], None) if "queries" in idx else shuffled_queries(split, cfg.seed)
    query_info = {"set": origin[query_idx], "position": position[query_idx]}
    records = AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member, query_info=query_info)
    return records, origin, position
