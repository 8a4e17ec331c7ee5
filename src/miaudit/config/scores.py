"""The config of a scores-only audit (``miaudit score CONFIG``): precomputed model outputs in, no models.

    outputs: {layout: lira, path: exp/cifar10}   # or layout: npz, path: outputs.npz (see scores_layouts)
    members: members.npy                          # optional index files: positions among the layout's records
    nonmembers: nonmembers.npy
    attacks: [lira, rmia]

Validated once, like ``RunConfig``, and read from YAML by the same reader (line and column in errors,
``--set`` overrides); light (no torch, no attack imports). It satisfies ``settings.AuditSettings``, all
the Plan, the Experiment and the report read of a config, so the same code serves both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ..strict import Strict
from ..workflow.keys import GATE_FIELD, TRACKING_FIELD, GateKey, TrackingConfig
from .files import load_config, validated
from .settings import AttackRows, Fdr, MinFpr, Mode, OffWhenNone, Seed

Layout = Literal["npz", "lira"]  # the layouts of precomputed outputs (experiment/layouts.py reads, export writes)
PRECOMPUTED = "precomputed"  # the architecture name reports give models miaudit never saw


class OutputsConfig(Strict):
    """Where the precomputed outputs are and how they are laid out."""

    path: Path
    layout: Layout | None = Field(
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


class ScoreCalibration(Strict):
    """Calibrate on the validation records (an index file, or the layout's); with ``fraction`` and none
    given, hold out that share of the population (which then changes population-based attacks' inputs)."""

    fraction: float | None = Field(default=None, gt=0, lt=1)


class ScoreConfig(Strict):
    """A ``miaudit score`` config: precomputed outputs in, no models.

    It satisfies ``settings.AuditSettings``, as ``RunConfig`` does, and shares its settings' types with it
    (``seed``, ``mode``, attack rows, ``calibration: none``, ``min_fpr``, ``fdr``: ``config/settings.py``).
    Where the two differ, on purpose:

    - ``name`` where a run has ``dataset``: there is no data set to load, only outputs; ``name`` is what
      reports call them (``dataset: {name: ...}`` would promise a loader that never runs).
    - ``attacks: auto`` is refused in one line: auto's candidates and its fallback rule were measured on audits
      miaudit trains; precomputed outputs name their attacks (as before this config shared its settings).
    - ``calibration.fraction`` defaults to none: outputs come with their records fixed, so calibration uses
      the validation records given and holds out no population share unless asked (holding some out would
      change the inputs of the population-based attacks behind the user's back). A run's split makes that
      hold-out itself, hence its 0.2.
    - ``references`` defaults to every reference model the outputs hold, not a number to train.

    Attributes:
        outputs: where the outputs are and their layout (a path alone is shorthand).
        name: what reports call the data (default: the outputs' name).
        references: use the first k reference models (default: all the outputs hold).
        members, nonmembers, queries, validation: index files of positions among the layout's records.
        attacks: attack rows, as in a run config; attacks needing models or inputs are refused.
    """

    outputs: OutputsConfig
    name: str | None = Field(default=None, description="what reports call the data (default: the path's name)")
    seed: Seed = 0
    mode: Mode = "offline"
    references: int | None = Field(default=None, ge=0, description="use the first k reference models (default: all)")
    attacks: AttackRows = Field(
        default_factory=lambda: [{"name": "lira"}, {"name": "attack-r"}, {"name": "bavaria-n"}], min_length=1
    )
    members: Path | None = Field(default=None, description="positions of target members queried (.npy or text)")
    nonmembers: Path | None = Field(default=None, description="positions of target non-members queried")
    queries: Path | None = Field(default=None, description="positions to audit, membership unknown")
    validation: Path | None = Field(default=None, description="positions of non-members for calibration only")
    calibration: Annotated[ScoreCalibration | None, OffWhenNone] = ScoreCalibration()
    min_fpr: MinFpr = None
    fdr: Fdr = 0.05
    gate: GateKey = GATE_FIELD
    tracking: TrackingConfig | None = TRACKING_FIELD

    @field_validator("outputs", mode="before")
    @classmethod
    def _path_shorthand(cls, v: object) -> object:
        return {"path": v} if isinstance(v, (str, Path)) else v

    @model_validator(mode="after")
    def _index_files(self) -> ScoreConfig:
        if (self.members is None) != (self.nonmembers is None):
            raise ValueError("members: give both members and nonmembers index files, or neither")
        if self.queries is not None and self.members is not None:
            raise ValueError("queries: give either queries (membership unknown) or members and nonmembers")
        return self

    @property
    def data_label(self) -> str:
        """What reports call the data: ``name``, else the outputs' file or folder name."""
        return self.name or Path(self.outputs.path).stem


def from_dict(raw: object, source: str = "config") -> ScoreConfig:
    """A ``ScoreConfig`` from a mapping (a YAML file's keys).

    Args:
        raw: the keys, as ``yaml.safe_load`` gives them.
        source: what to call ``raw`` in an error when it is not a mapping.

    Returns:
        The validated, immutable config.

    Raises:
        ConfigError: one line naming the first bad key (an unknown key gets the closest known one).
    """
    return validated(ScoreConfig, raw, source)


def load(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ScoreConfig:
    """A YAML score config, read as ``config.run.load`` reads a run config: the same one-line errors (YAML
    ones with line and column), ``--set`` overrides, and paths relative to the file's folder."""
    return load_config(path, overrides, ScoreConfig, lambda raw, _folder: from_dict(raw))
