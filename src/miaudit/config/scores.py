"""The config of a scores-only audit (``miaudit score CONFIG``): precomputed model outputs in, no models.

    outputs: {layout: lira, path: exp/cifar10}   # or layout: npz, path: outputs.npz (see scores_layouts)
    members: members.npy                          # optional index files: positions among the layout's records
    nonmembers: nonmembers.npy
    attacks: [lira, rmia]

Validated once, like ``RunConfig``; light (no torch, no attack imports). It answers the few
questions the report asks of a run's config (``dataset.label``, ``model``, ``device`` ...) so the
same report code serves both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from .options import Strict as _Strict
from .paths import anchored
from .run import _attack_entries, _calibration, one_line

PRECOMPUTED = "precomputed"  # the architecture name reports give models miaudit never saw


class OutputsConfig(_Strict):
    """Where the precomputed outputs are and how they are laid out."""

    path: Path
    layout: Literal["npz", "lira"] | None = Field(
        default=None, description="npz: our arrays (a .npz file or a folder of .npy); lira: the LiRA code's folders"
    )
    target: str | None = Field(default=None, description="lira layout: the target model's folder (default: the last)")
    augmentation: int | Literal["mean"] = Field(
        default=0, description="lira layout: which augmentation's logits (0: the record as is), or their mean"
    )

    @property
    def resolved_layout(self) -> str:
        if self.layout is not None:
            return self.layout
        return "lira" if (Path(self.path) / "y_train.npy").is_file() else "npz"


class ScoreCalibration(_Strict):
    """Calibrate on the validation records (an index file, or the layout's); with ``fraction`` and none
    given, hold out that share of the population (which then changes population-based attacks' inputs)."""

    fraction: float | None = Field(default=None, gt=0, lt=1)


class _Label(BaseModel):
    label: str


class ScoreConfig(_Strict):
    outputs: OutputsConfig
    name: str | None = Field(default=None, description="what reports call the data (default: the path's name)")
    seed: int = Field(default=0, ge=0)
    mode: Literal["offline", "online"] = "offline"
    references: int | None = Field(default=None, ge=0, description="use the first k reference models (default: all)")
    attacks: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "lira"}, {"name": "attack-r"}, {"name": "bavaria-n"}], min_length=1
    )
    members: Path | None = Field(default=None, description="positions of target members queried (.npy or text)")
    nonmembers: Path | None = Field(default=None, description="positions of target non-members queried")
    queries: Path | None = Field(default=None, description="positions to audit, membership unknown")
    validation: Path | None = Field(default=None, description="positions of non-members for calibration only")
    calibration: ScoreCalibration | None = ScoreCalibration()
    min_fpr: float | None = Field(default=None, gt=0, lt=1)

    _attack_rows = field_validator("attacks", mode="before")(_attack_entries)
    _calibration_none = field_validator("calibration", mode="before")(_calibration)

    @field_validator("outputs", mode="before")
    @classmethod
    def _path_shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, (str, Path)) else v

    @model_validator(mode="after")
    def _index_files(self) -> ScoreConfig:
        if (self.members is None) != (self.nonmembers is None):
            raise ValueError("members: give both members and nonmembers index files, or neither")
        if self.queries is not None and self.members is not None:
            raise ValueError("queries: give either queries (membership unknown) or members and nonmembers")
        return self

    # What the report reads of a run's config:
    @property
    def dataset(self) -> _Label:
        return _Label(label=self.name or Path(self.outputs.path).stem)

    @property
    def model(self) -> str:
        return PRECOMPUTED

    @property
    def reference_architecture(self) -> str:
        return PRECOMPUTED

    @property
    def device(self) -> str:
        return "cpu"


def from_dict(raw: Any) -> ScoreConfig:
    try:
        return ScoreConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"config: {one_line(e)}" if not isinstance(raw, dict) else one_line(e)) from None


def load(path: str | Path) -> ScoreConfig:
    """A YAML score config; one-line ``ConfigError`` for a missing file, bad YAML or a bad key."""
    try:
        raw = yaml.safe_load(Path(path).read_text())
        return from_dict(anchored(raw, Path(path).absolute().parent, ScoreConfig) if isinstance(raw, dict) else raw)
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"config: cannot read {path} ({str(e).splitlines()[0]})") from None
