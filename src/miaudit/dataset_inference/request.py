"""An ``infer-dataset`` config: a run config (the data, the target, the references: the same models as ``miaudit run``
on it) plus the record sets of the question, ``suspect:`` and ``validation:``, and the test's ``inference:`` options.

A record set is a list of record indices (positions in the data set, the ``record`` column of a run's scores.csv) or
a file of them: ``.npy`` (integers, read without pickle) or a text file (whitespace- or comma-separated integers).
Every index is checked against the data before any model loads: one line naming the key, exit 2, nothing written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..config.files import validated
from ..config.run import AUDITED, RunConfig, from_dict
from ..errors import ConfigError

MIN_RECORDS = 4  # per set: two per half of the blind guard's cross-fitting


class InferenceOptions(BaseModel):
    """``inference:``: the test's options."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    level: float = Field(default=0.05, gt=0, lt=1, description="the p-value below which the verdict is 'used'")
    permutations: int = Field(default=999, ge=99, le=100_000, description="label permutations of the null")


def schema_keys() -> dict[str, dict]:
    """The keys an ``infer-dataset`` config adds to a run config's, as their JSON schemas (``miaudit schema config``,
    ``init``)."""
    indices = [
        {"type": "array", "items": {"type": "integer", "minimum": 0}, "description": "record indices"},
        {"type": "string", "format": "path", "description": "a .npy or text file of record indices"},
    ]
    return {
        "suspect": {"anyOf": indices, "description": "the records whose use in training is in question"},
        "validation": {"anyOf": indices, "description": "records known not to have been used, drawn as the suspects"},
        "inference": {**InferenceOptions.model_json_schema(), "description": "the test's options"},
    }


@dataclass(frozen=True)
class Request:
    """What ``infer-dataset`` was asked: the run config, the two record sets (unchecked until ``checked``), options."""

    cfg: RunConfig
    suspect: np.ndarray
    validation: np.ndarray
    options: InferenceOptions


def as_config(req: Request) -> dict[str, Any]:
    """The request as a config's keys, files read into their indices: results.json's ``config`` and what
    ``miaudit config`` prints (the question recorded with the answer)."""
    return {
        **req.cfg.model_dump(mode="json"),
        "suspect": req.suspect.tolist(),
        "validation": req.validation.tolist(),
        "inference": req.options.model_dump(mode="json"),
    }


def record_set(spec: Any, key: str, folder: Path | None) -> np.ndarray:
    """A record set from a list of indices or a file of them (module docstring)."""
    if isinstance(spec, str | Path):
        path = Path(spec)
        if not path.is_absolute() and folder is not None:
            path = folder / path
        if not path.is_file():
            raise ConfigError(f"{key}: file {path} not found (expected record indices: a list, a .npy or a .txt file)")
        try:
            if path.suffix == ".npy":
                values = np.load(path, allow_pickle=False)
            else:
                values = np.array(path.read_text(encoding="utf-8").replace(",", " ").split(), dtype=np.float64)
        except (ValueError, OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{key}: {path} does not hold record indices ({type(e).__name__}: {e})") from None
    elif isinstance(spec, list | tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in spec):
        values = np.asarray(spec, dtype=np.int64)
    else:
        raise ConfigError(f"{key}: expected a list of record indices or a .npy/.txt file of them, got {spec!r}")
    values = np.asarray(values).reshape(-1)
    if values.dtype.kind == "f":
        if not np.all(np.isfinite(values)) or np.any(values != np.round(values)):
            raise ConfigError(f"{key}: record indices must be whole numbers")
        values = values.astype(np.int64)
    elif values.dtype.kind not in "iu":
        raise ConfigError(f"{key}: record indices must be integers, the file holds {values.dtype}")
    return values.astype(np.int64)


def checked(req: Request, n_records: int, dataset: str) -> Request:
    """The request with both record sets checked against a data set of ``n_records`` records."""
    for key, idx in (("suspect", req.suspect), ("validation", req.validation)):
        outside = idx[(idx < 0) | (idx >= n_records)]
        if len(outside):
            raise ConfigError(
                f"{key}: record {int(outside[0])} is outside the data ({dataset} has {n_records} records, "
                f"indices 0 to {n_records - 1})"
            )
        values, counts = np.unique(idx, return_counts=True)
        if (counts > 1).any():  # the record itself (the first repeated one), never the array indexed by it
            raise ConfigError(f"{key}: record {int(values[counts > 1][0])} is listed more than once")
        if len(idx) < MIN_RECORDS:
            raise ConfigError(f"{key}: {len(idx)} record(s); the test needs at least {MIN_RECORDS}")
    both = np.intersect1d(req.suspect, req.validation)
    if len(both):
        raise ConfigError(
            f"validation: record {int(both[0])} is also a suspect; validation records must be known not to be used"
        )
    return req


def from_mapping(raw: Mapping[str, Any], folder: Path | None = None) -> Request:
    """A request from a config's keys (``folder``: where relative files are read from). A file is read by
    ``config.files.load_config`` with this as its ``build``."""
    raw = dict(raw)
    for key in ("suspect", "validation"):
        if key not in raw:
            raise ConfigError(f"{key}: required (record indices, or a .npy/.txt file of them)")
    suspect = record_set(raw.pop("suspect"), "suspect", folder)
    validation = record_set(raw.pop("validation"), "validation", folder)
    options = validated(InferenceOptions, raw.pop("inference", None) or {}, "inference", within="inference")
    if raw.get("target") is not None and not any(raw.get(k) for k in AUDITED):
        # a data owner knows no membership: the suspect and validation records are the queries (membership
        # unknown), every other record population
        raw["queries"] = sorted(set(suspect.tolist()) | set(validation.tolist()))
    return Request(from_dict(raw), suspect, validation, options)
