"""The keys of a run config that say which records an audit reads and in which roles: the data set
(``dataset``, ``reference_data``, ``nonmember_data``), the membership split, how the queries are read
(``queries``) and the calibration records. Light: no torch."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from ..strict import Strict
from .settings import QueryAugment


class DataConfig(Strict):
    """A built-in data set (``name``) or a user file (``path``: .npz with x, y or .csv)."""

    name: str | None = Field(
        default=None,
        description="built-in data set, e.g. digits (an unknown name gets the list); a bare name is shorthand: "
        "dataset: digits",
    )
    path: Path | None = Field(default=None, description="your data: .npz (arrays x, y), .csv or a folder of images")
    label_column: str = Field(default="y", description=".csv: the column holding the class labels")
    text_column: str | None = Field(
        default=None, description="language models: the .csv/.jsonl column holding the texts"
    )
    num_classes: int | None = Field(
        default=None, ge=2, description="a file's classes, when some have no records (default: its distinct labels)"
    )
    subset: int | None = Field(default=None, ge=20, description="random subset of this many records (seeded)")
    data_dir: Path | None = Field(default=None, description="built-in data files (default: $MIAUDIT_DATA_DIR)")

    @model_validator(mode="after")
    def _one_source(self) -> DataConfig:
        if (self.name is None) == (self.path is None):
            raise ValueError("give exactly one of name (a built-in data set) or path (a .npz/.csv file)")
        if self.num_classes is not None and self.path is None:
            raise ValueError("num_classes is only for a data file (path); a built-in data set knows its classes")
        return self

    @property
    def label(self) -> str:
        if self.name is not None:
            return self.name
        assert self.path is not None  # the validator above gives exactly one of name and path
        return Path(self.path).stem


class SplitConfig(Strict):
    """Fractions of the data set (BMIA paper 4.1: 20/20/40/20)."""

    target_train: float = Field(default=0.2, gt=0, lt=1, description="the target's training records: members")
    target_test: float = Field(default=0.2, gt=0, lt=1, description="records the target never saw: non-members")
    population: float = Field(default=0.4, ge=0, lt=1, description="records the reference models train on")
    validation: float = Field(default=0.2, ge=0, lt=1, description="held-out records (QMIA, calibration)")

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitConfig:
        if self.as_tuple() and sum(self.as_tuple()) > 1 + 1e-9:
            raise ValueError(f"fractions sum to {sum(self.as_tuple()):.3f}, must be at most 1")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.target_train, self.target_test, self.population, self.validation)


class QueriesConfig(Strict):
    """How the audited records are queried. ``queries: FILE`` (or a list of indices) is shorthand for
    ``{indices: ...}``."""

    indices: Path | list[int] | None = Field(
        default=None, description="record indices to audit, membership unknown: a .npy or text file of them, or a list"
    )
    augment: QueryAugment = "none"


def queries_shorthand(v: object) -> object:
    """``queries: FILE`` or ``queries: [indices]`` is shorthand for ``{indices: ...}``; none, every default."""
    return {} if v is None else {"indices": v} if isinstance(v, (str, Path, list)) else v


class CalibrationConfig(Strict):
    """Conformal calibration of every p-value (BMIA paper F.1) on records known not to be members: the
    validation records, or, where there are none, this fraction of the population held out from every
    model's training. ``calibration: none`` turns it off (p-values are then the attacks' raw ones)."""

    fraction: float = Field(default=0.2, gt=0, lt=1, description="population share held out when no validation")
