"""The one configuration model: YAML in, validated once at the edge, immutable after.

Every error is one line naming the offending key (``attacks.1.samples: ...``);
the CLI turns ``ConfigError`` into exit code 2 before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataConfig(_Strict):
    """A built-in data set (``name``) or a user file (``path``: .npz with x, y or .csv)."""

    name: str | None = None
    path: Path | None = None
    label_column: str = "y"
    subset: int | None = Field(default=None, ge=20, description="random subset of this many records (seeded)")
    data_dir: Path | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DataConfig:
        if (self.name is None) == (self.path is None):
            raise ValueError("give exactly one of name (a built-in data set) or path (a .npz/.csv file)")
        return self

    @property
    def label(self) -> str:
        return self.name if self.name is not None else Path(self.path).stem


class DPConfig(_Strict):
    """DP-SGD (Opacus): per-sample clipping to ``max_grad_norm``, Gaussian noise, Poisson sampling. Give the
    privacy target (``epsilon``, ``delta``: the noise multiplier is calibrated by the RDP accountant) or the
    ``noise_multiplier`` itself. The target trains this way; the reference models only with ``references``."""

    epsilon: float | None = Field(default=None, gt=0, description="declared epsilon (noise calibrated to reach it)")
    delta: float = Field(default=1e-5, ge=0, lt=1)
    noise_multiplier: float | None = Field(default=None, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    references: bool = Field(default=False, description="train the reference models with DP-SGD as well")

    @model_validator(mode="after")
    def _one_noise(self) -> DPConfig:
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("give exactly one of epsilon (calibrated noise) or noise_multiplier")
        return self


class TrainConfig(_Strict):
    """SGD with momentum and weight decay: the papers' recipe (DP-SGD with ``dp``)."""

    epochs: int = Field(default=30, ge=1)
    batch_size: int = Field(default=64, ge=1)
    lr: float = Field(default=0.1, gt=0)
    momentum: float = Field(default=0.9, ge=0, lt=1)
    weight_decay: float = Field(default=5e-4, ge=0)
    schedule: Literal["cosine", "constant"] = "cosine"
    dp: DPConfig | None = Field(default=None, description="train with DP-SGD (Opacus, extra dp)")


class SplitConfig(_Strict):
    """Fractions of the data set (BMIA paper 4.1: 20/20/40/20)."""

    target_train: float = Field(default=0.2, gt=0, lt=1)
    target_test: float = Field(default=0.2, gt=0, lt=1)
    population: float = Field(default=0.4, ge=0, lt=1)
    validation: float = Field(default=0.2, ge=0, lt=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitConfig:
        if self.as_tuple() and sum(self.as_tuple()) > 1 + 1e-9:
            raise ValueError(f"fractions sum to {sum(self.as_tuple()):.3f}, must be at most 1")
        return self

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.target_train, self.target_test, self.population, self.validation)


class CalibrationConfig(_Strict):
    """Conformal calibration of every p-value (BMIA paper F.1) on records known not to be members: the
    validation records, or, where there are none, this fraction of the population held out from every
    model's training. ``calibration: none`` turns it off (p-values are then the attacks' raw ones)."""

    fraction: float = Field(default=0.2, gt=0, lt=1, description="population share held out when no validation")


class DPAuditConfig(_Strict):
    """An epsilon lower bound from one attack's scores (``miaudit.dp``): the threshold is chosen on a seeded
    half of the queries (``selection: half``) or given (``selection: fixed``) and evaluated on the rest."""

    attack: str = Field(description="the attack's label or name, as in attacks")
    confidence: float = Field(default=0.95, gt=0, lt=1)
    delta: float | None = Field(default=None, ge=0, lt=1, description="default: train.dp.delta, else 0")
    selection: Literal["half", "fixed"] = "half"
    threshold: float | None = Field(default=None, description="with selection: fixed, member when score >= it")
    declared_epsilon: float | None = Field(default=None, gt=0, description="default: train.dp.epsilon")

    @model_validator(mode="after")
    def _fixed_threshold(self) -> DPAuditConfig:
        if (self.selection == "fixed") != (self.threshold is not None):
            raise ValueError("threshold: give it with selection: fixed, and only then")
        return self


class CanaryConfig(_Strict):
    """The one-run audit's canaries (Steinke, Nasr & Jagielski 2023): each in the target's training set
    with probability 1/2; the auditor guesses on the ``guesses`` highest and lowest scores (default count/10)."""

    count: int = Field(ge=2)
    kind: Literal["random-label", "natural"] = "random-label"
    guesses: int | None = Field(default=None, ge=1, description="k: guesses 'in' and 'out' each")

    @model_validator(mode="after")
    def _enough(self) -> CanaryConfig:
        if self.guesses is not None and 2 * self.guesses > self.count:
            raise ValueError(f"guesses: 2 x {self.guesses} exceeds count {self.count}")
        return self


def _calibration(v: Any) -> Any:
    return None if v is None or (isinstance(v, str) and v.lower() == "none") else v


def _architecture_name(v: str | None) -> str | None:
    """A built-in architecture, or ``package.module:factory`` (imported now, so a typo fails before any work)."""
    from .models import ARCHITECTURES, io

    if v is not None and io.is_import_path(v):
        io.import_factory(v)
    elif v is not None and v not in ARCHITECTURES:
        raise ValueError(
            f"unknown architecture {v!r}; expected one of {sorted(ARCHITECTURES)} or package.module:factory"
        )
    return v


class TargetConfig(_Strict):
    """A model the user trained outside miaudit: how to build it and where its weights are."""

    architecture: str | None = Field(
        default=None,
        description="built-in name or package.module:factory "
        "(called as factory(input_shape, n_classes)); default: model",
    )
    checkpoint: Path = Field(description=".safetensors, or a weights-only .pt/.pth state_dict")

    _known = field_validator("architecture")(_architecture_name)


def _attack_entries(raw: Any) -> Any:
    """Attack rows as mappings with a name (a bare name is shorthand for ``{name: ...}``). Their
    parameters are validated by the Plan (``miaudit.plan``), which knows every attack."""
    if not isinstance(raw, (list, tuple)):
        return raw
    rows = [{"name": r} if isinstance(r, str) else r for r in raw]
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "name" not in row:
            raise ValueError(f"row {i} is not a mapping with a name; each attack is e.g. {{name: lira, references: 8}}")
    return rows


class RunConfig(_Strict):
    dataset: DataConfig = DataConfig(name="digits")
    model: str = "mlp"
    reference_model: str | None = Field(
        default=None, description="architecture of the reference models (default: model)"
    )
    seed: int = Field(default=0, ge=0)  # numpy's SeedSequence takes non-negative integers only
    train: TrainConfig = TrainConfig()
    references: int = Field(default=4, ge=0, le=1024)
    mode: Literal["offline", "online"] = "offline"
    split: SplitConfig = SplitConfig()
    calibration: CalibrationConfig | None = Field(
        default=CalibrationConfig(), description="conformal p-values on held-out non-members; none: raw p-values"
    )
    attacks: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"name": "attack-p"}],
        min_length=1,
        description="attack rows: a name, or {name: ..., parameters}; see `miaudit attacks`",
    )
    cache_dir: Path | None = None
    device: str = "cpu"
    target: TargetConfig | None = Field(default=None, description="audit this model instead of training one")
    members: Path | None = Field(default=None, description="record indices the target trained on (.npy or text)")
    nonmembers: Path | None = Field(default=None, description="record indices the target did not train on")
    queries: Path | None = Field(default=None, description="record indices to audit, membership unknown")
    min_fpr: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="smallest FPR the audit must resolve; refused with fewer than 1/min_fpr non-members",
    )
    dp_audit: DPAuditConfig | None = Field(default=None, description="an epsilon lower bound from one attack")
    canaries: CanaryConfig | None = Field(default=None, description="canaries of the one-run audit (dp-audit)")

    _attack_rows = field_validator("attacks", mode="before")(_attack_entries)
    _calibration_none = field_validator("calibration", mode="before")(_calibration)

    @field_validator("dataset", mode="before")
    @classmethod
    def _dataset_shorthand(cls, v: Any) -> Any:
        return {"name": v} if isinstance(v, str) else v

    _known_architecture = field_validator("model", "reference_model")(_architecture_name)

    @model_validator(mode="after")
    def _even_online(self) -> RunConfig:
        if self.mode == "online" and self.references % 2:
            raise ValueError(
                f"references: online mode needs an even number (each query IN for half), got {self.references}"
            )
        return self

    @model_validator(mode="after")
    def _membership_files(self) -> RunConfig:
        if (self.members is None) != (self.nonmembers is None):
            raise ValueError(
                f"{'nonmembers' if self.nonmembers is None else 'members'}: give both members and "
                "nonmembers index files, or neither"
            )
        if self.queries is not None and self.members is not None:
            raise ValueError("queries: give either queries (membership unknown) or members and nonmembers, not both")
        if self.target is None and (self.members or self.queries):
            raise ValueError(
                f"{'members' if self.members else 'queries'}: index files select records to audit for a "
                "model you trained; add target: {checkpoint: ...}"
            )
        if self.min_fpr is not None and self.queries is not None:
            raise ValueError("min_fpr: needs members and nonmembers; queries of unknown membership give no ROC")
        return self

    @model_validator(mode="after")
    def _dp_audit_attack(self) -> RunConfig:
        if self.dp_audit is None:
            return self
        want = self.dp_audit.attack.lower()
        known = {str(r[k]).lower() for r in self.attacks for k in ("name", "label") if r.get(k)}
        if want not in known and want.split(" (")[0] not in known:
            raise ValueError(f"dp_audit.attack: {self.dp_audit.attack!r} is not one of the attacks ({sorted(known)})")
        if self.queries is not None:
            raise ValueError("dp_audit: needs members and nonmembers; queries of unknown membership give no bound")
        return self

    @property
    def target_architecture(self) -> str:
        return (self.target.architecture if self.target else None) or self.model

    @property
    def reference_architecture(self) -> str:
        return self.reference_model or self.target_architecture


def one_line(e: ValidationError) -> str:
    """A pydantic error as ``key.path: message (and N more)``."""
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


def from_dict(raw: Any) -> RunConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config: expected a mapping of keys, got {type(raw).__name__}")
    try:
        return RunConfig(**raw)
    except ValidationError as e:
        raise ConfigError(one_line(e)) from None


def load(path: str | Path) -> RunConfig:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config: file {path} not found")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"config: {path.name} is not valid YAML ({str(e).splitlines()[0]})") from None
    return from_dict(raw)


# The built-in default audit: scikit-learn's digits (ships with a dependency, so it
# runs on a fresh machine with no data directory) in well under 3 minutes on 2 cores.
DEFAULT_RUN: dict[str, Any] = {
    "dataset": "digits",
    "model": "mlp",
    "seed": 0,
    "train": {"epochs": 40, "batch_size": 32, "lr": 0.05},
    "references": 4,
    "attacks": [
        {"name": "attack-p"},
        {"name": "gls"},
        {"name": "qmia"},
        {"name": "bmia", "references": 1},
        {"name": "mr-bmia", "references": 4},
        {"name": "lira", "references": 4},
        {"name": "rmia", "references": 4},
        {"name": "attack-r", "references": 4},
        {"name": "bavaria-n", "references": 4},
    ],
}


def default() -> RunConfig:
    return from_dict(DEFAULT_RUN)
