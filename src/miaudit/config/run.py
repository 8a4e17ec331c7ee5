"""The one configuration model: YAML in, validated once at the edge, immutable after.

Every error is one line naming the offending key (``attacks.1.samples: ...``);
the CLI turns ``ConfigError`` into exit code 2 before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .checks import (
    _architecture_name,
    _attack_entries,
    _base_fits,
    _calibration,
    _device,
    _holds_weights,
    _lm_base,
    _model_from_base,
    _target,
)
from .endpoint import EndpointFields
from .files import read, validated, with_overrides
from .options import CanaryConfig, CanaryExposureConfig, DPAuditConfig, DPConfig, ExecutorConfig
from .options import Strict as _Strict
from .paths import anchored


class DataConfig(_Strict):
    """A built-in data set (``name``) or a user file (``path``: .npz with x, y or .csv)."""

    name: str | None = Field(
        default=None,
        description="built-in data set (digits, iris, wine, breast_cancer, location, purchase100, texas100, cifar10, "
        "cifar100, ag_news); a bare name is shorthand: dataset: digits",
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


class TrainConfig(_Strict):
    """SGD with momentum and weight decay: the papers' recipe (DP-SGD with ``dp``)."""

    epochs: int = Field(default=30, ge=1, description="passes over the training records")
    batch_size: int = Field(default=64, ge=1, description="records per SGD step")
    lr: float = Field(default=0.1, gt=0, description="learning rate")
    optimizer: Literal["sgd", "adamw"] = Field(default="sgd", description="sgd (with momentum), or adamw")
    momentum: float = Field(default=0.9, ge=0, lt=1, description="SGD momentum")
    weight_decay: float = Field(default=5e-4, ge=0, description="L2 penalty")
    schedule: Literal["cosine", "constant", "triangle"] = Field(
        default="cosine",
        description="learning-rate schedule per epoch: cosine, constant, or triangle (airbench's: from 0.2 lr up "
        "to lr at 23% of the epochs, then down to 0.07 lr)",
    )
    label_smoothing: float = Field(default=0.0, ge=0, lt=1, description="label smoothing of the cross-entropy loss")
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32", description="mixed precision (autocast) for the forward pass; fp16 scales the loss"
    )
    augment: Literal["none", "flip", "flip-crop"] = Field(
        default="none", description="image data: random horizontal flip, and 4-pixel padded random crop (seeded)"
    )
    loader_workers: int = Field(
        default=0, ge=0, description="DataLoader processes preparing (augmenting) batches; same weights as 0"
    )
    models_at_once: int | Literal["auto"] = Field(
        default="auto",
        description="reference models of one recipe trained together as one stacked model (torch.func), each "
        "on its own records, seed, order and augmentation, stored apart; auto: on an accelerator as many as "
        "stack_memory_mb holds, on a CPU one at a time (measured no faster stacked); N: stacks of N; 1: one at a time",
    )
    stack_memory_mb: int = Field(
        default=2048, ge=1, description="most memory a stack of models trained together may take (MB); cut to fit"
    )
    dp: DPConfig | None = Field(default=None, description="train with DP-SGD (Opacus, extra dp)")
    base: str | None = Field(
        default=None,
        description="causal LMs: hf:PATH of a local base LM every model miaudit trains is fine-tuned from "
        "(the references; the target unless target: is given)",
    )

    _base = field_validator("base")(_lm_base)

    @field_validator("models_at_once")
    @classmethod
    def _at_least_one(cls, v: int | str) -> int | str:
        if isinstance(v, int) and v < 1:
            raise ValueError(f"expected auto or a whole number of models, at least 1; got {v}")
        return v

    @model_validator(mode="after")
    def _smoothing_without_dp(self) -> TrainConfig:
        if self.dp is not None and self.label_smoothing > 0:
            raise ValueError("label_smoothing: DP-SGD training (train.dp) does not smooth labels; set it to 0")
        return self


class SplitConfig(_Strict):
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


class QueriesConfig(_Strict):
    """How the audited records are queried. ``queries: FILE`` is shorthand for ``{indices: FILE}``."""

    indices: Path | None = Field(default=None, description="record indices to audit, membership unknown")
    augment: Literal["none", "mirror", "mirror-shift"] = Field(
        default="none",
        description="image data: signals on the mirrored (2 views) or mirrored and shifted (18 views) records too",
    )


def _queries(v: Any) -> Any:
    return {} if v is None else {"indices": v} if isinstance(v, (str, Path)) else v


class CalibrationConfig(_Strict):
    """Conformal calibration of every p-value (BMIA paper F.1) on records known not to be members: the
    validation records, or, where there are none, this fraction of the population held out from every
    model's training. ``calibration: none`` turns it off (p-values are then the attacks' raw ones)."""

    fraction: float = Field(default=0.2, gt=0, lt=1, description="population share held out when no validation")


class TargetConfig(EndpointFields, _Strict):
    """A model the user trained outside miaudit: how to build it and where its weights are, or the URL of an
    endpoint serving it (``EndpointFields``), with the architecture miaudit trains the references in."""

    architecture: str | None = Field(
        default=None,
        description="built-in name or package.module:factory "
        "(called as factory(input_shape, n_classes)); default: model",
    )
    checkpoint: Path | None = Field(
        default=None,
        description=".safetensors, or a weights-only .pt/.pth state_dict (none for an hf: causal LM directory, "
        "which holds its weights)",
    )
    train_fn: str | None = Field(
        default=None,
        description="package.module:function that trains the reference models as the target was trained, "
        "called as function(model, x, y); default: miaudit's loop with train",
    )

    _known = field_validator("architecture")(_architecture_name)

    @field_validator("train_fn")
    @classmethod
    def _importable(cls, v: str | None) -> str | None:
        """Imported now, so a typo fails before any work."""
        from ..models import io

        if v is not None:
            io.import_factory(v)
        return v

    @model_validator(mode="after")
    def _weights_or_endpoint(self) -> TargetConfig:
        if self.endpoint is None:
            stray = sorted(set(self.model_fields_set) & set(EndpointFields.model_fields) - {"endpoint"})
            if stray:
                raise ValueError(f"{stray[0]}: applies to an endpoint; add endpoint: URL, or remove it")
            return self
        if self.checkpoint is not None:
            raise ValueError("checkpoint: give either a checkpoint (the weights) or an endpoint (queries), not both")
        if self.architecture is None:
            raise ValueError(
                "architecture: an endpoint's references are trained by miaudit in the architecture named here "
                "(a built-in name or package.module:factory), e.g. architecture: mlp"
            )
        return self


class RunConfig(_Strict):
    """A ``miaudit run`` config: what to audit, how the models train, which attacks run.

    Every key has a default (``miaudit init`` writes them all, commented), so ``RunConfig()`` is a valid
    audit; unknown keys are refused, and the object is immutable once validated. Attack rows stay plain
    mappings here: ``plan.build`` validates them against each attack's parameters. It satisfies
    ``settings.AuditSettings``, as ``ScoreConfig`` does.

    Attributes:
        dataset: the records to audit (a built-in name or a file).
        model: the target's architecture; ``reference_model`` the references' (default: ``model``).
        seed: fixes the split, every model and every attack.
        train: how the target and the reference models train.
        references: reference models available (only those some attack uses are trained).
        mode: ``offline``, or ``online`` (each query IN for half the references).
        attacks: ``auto`` or attack rows (``{name: ..., parameters}``).
        target: a model the user trained, audited instead of training one.
    """

    dataset: DataConfig = Field(default=DataConfig(name="digits"), description="the records to audit on")
    model: str = Field(
        default="mlp", description="the target's architecture: mlp, cnn, resnet, airbench or package.module:factory"
    )
    reference_model: str | None = Field(
        default=None, description="architecture of the reference models (default: model)"
    )
    seed: int = Field(default=0, ge=0, description="fixes the split, every model and every attack")
    train: TrainConfig = Field(default=TrainConfig(), description="how the target and the reference models train")
    references: int = Field(
        default=4, ge=0, le=1024, description="reference models available; only those some attack uses are trained"
    )
    mode: Literal["offline", "online"] = Field(
        default="offline", description="online: each query is IN for half the references (LiRA/RMIA online, BASE2-4)"
    )
    split: SplitConfig = Field(default=SplitConfig(), description="fractions of the data set per role")
    calibration: CalibrationConfig | None = Field(
        default=CalibrationConfig(), description="conformal p-values on held-out non-members; none: raw p-values"
    )
    attacks: list[dict[str, Any]] | Literal["auto"] = Field(
        default="auto",
        description="auto (with 2+ references the candidates measured on the references as pseudo-targets, the "
        "strongest run; with 1, the leave-one-data-set-out rule), or "
        "attack rows: a name, or {name: ..., parameters}; see `miaudit attacks`",
    )
    fdr: float = Field(
        default=0.05, gt=0, lt=1, description="false discovery rate of the records at risk (Benjamini-Hochberg)"
    )
    cache_dir: Path | None = Field(default=None, description="trained models and decoded data ($MIAUDIT_CACHE_DIR)")
    device: str = Field(default="cpu", description="auto, cpu, cuda, cuda:N or mps; checked against this machine")
    executor: ExecutorConfig = Field(
        default=ExecutorConfig(),
        description="where reference models train and BMIA's posteriors are fitted: local or ray",
    )
    target: TargetConfig | None = Field(default=None, description="audit this model instead of training one")
    members: Path | None = Field(default=None, description="record indices the target trained on (.npy or text)")
    nonmembers: Path | None = Field(default=None, description="record indices the target did not train on")
    queries: QueriesConfig = Field(
        default=QueriesConfig(),
        description="index file of records to audit (membership unknown), or {indices, augment}",
    )
    reference_data: DataConfig | None = Field(
        default=None,
        description="robustness: the reference models train on this population (same features and labels)",
    )
    nonmember_data: DataConfig | None = Field(
        default=None, description="robustness: non-member queries drawn from this source instead of the target's"
    )
    min_fpr: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="smallest FPR the audit must resolve; refused with fewer than 1/min_fpr non-members",
    )
    dp_audit: DPAuditConfig | None = Field(default=None, description="an epsilon lower bound from one attack")
    canaries: CanaryConfig | None = Field(default=None, description="canaries of the one-run audit (dp-audit)")
    canary_exposure: CanaryExposureConfig | None = Field(
        default=None,
        description="causal LMs: secret-sharer canaries in the target's training texts, and their exposure",
    )

    _attack_rows = field_validator("attacks", mode="before")(_attack_entries)
    _known_device = field_validator("device")(_device)
    _calibration_none = field_validator("calibration", mode="before")(_calibration)
    _queries_shorthand = field_validator("queries", mode="before")(_queries)
    _target_shorthand = field_validator("target", mode="before")(_target)

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_shorthand(cls, v: Any) -> Any:
        return {"kind": v} if isinstance(v, str) else v

    @field_validator("dataset", "reference_data", "nonmember_data", mode="before")
    @classmethod
    def _dataset_shorthand(cls, v: Any) -> Any:
        """A bare string is a built-in name, or a file path when it names a .npz/.csv file."""
        if isinstance(v, str):
            return {"path": v} if v.lower().endswith((".npz", ".csv")) else {"name": v}
        return v

    @model_validator(mode="after")
    def _shift_scenarios(self) -> RunConfig:
        if self.target is not None and (self.reference_data or self.nonmember_data):
            raise ValueError("reference_data: the shift scenarios train the target; they do not apply to target:")
        if self.reference_data is not None and self.mode == "online":
            raise ValueError(
                "reference_data: online references train on the queries, from the target's data; use mode: offline"
            )
        return self

    _known_architecture = field_validator("model", "reference_model")(_architecture_name)
    _default_model = model_validator(mode="before")(_model_from_base)

    @model_validator(mode="after")
    def _own_weights(self) -> RunConfig:
        if (
            self.target is not None
            and self.target.checkpoint is None
            and self.target.endpoint is None
            and not _holds_weights(self.target_architecture)
        ):
            raise ValueError(
                f"target.checkpoint: required for {self.target_architecture!r} (only an hf: causal LM directory "
                "holds its own weights)"
            )
        return self

    @model_validator(mode="after")
    def _base(self) -> RunConfig:
        own = (self.target.architecture or self.model) if self.target else None
        _base_fits(self.train.base, self.model, own, self.reference_model)
        from ..lm.names import is_causal_lm

        if self.canary_exposure is not None and (self.target is not None or not is_causal_lm(self.model)):
            raise ValueError(
                "canary_exposure: canaries go into the training texts of a causal LM miaudit trains (model: gpt-tiny "
                "or hf:PATH, no target:)"
            )
        return self

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
        if self.queries.indices is not None and self.members is not None:
            raise ValueError("queries: give either queries (membership unknown) or members and nonmembers, not both")
        if self.target is None and (self.members or self.queries.indices):
            raise ValueError(
                f"{'members' if self.members else 'queries'}: index files select records to audit for a "
                "model you trained; add target: {checkpoint: ...}"
            )
        if self.min_fpr is not None and self.queries.indices is not None:
            raise ValueError("min_fpr: needs members and nonmembers; queries of unknown membership give no ROC")
        return self

    @model_validator(mode="after")
    def _dp_audit_attack(self) -> RunConfig:
        if self.dp_audit is None:
            return self
        want = self.dp_audit.attack.lower()
        if self.attacks == "auto":  # resolved by the Plan, which refuses an attack auto did not choose
            return self
        known = {str(r[k]).lower() for r in self.attacks for k in ("name", "label") if r.get(k)}
        if want not in known and want.split(" (")[0] not in known:
            raise ValueError(f"dp_audit.attack: {self.dp_audit.attack!r} is not one of the attacks ({sorted(known)})")
        if self.queries.indices is not None:
            raise ValueError("dp_audit: needs members and nonmembers; queries of unknown membership give no bound")
        return self

    @property
    def data_label(self) -> str:
        """What reports call the audited data."""
        return self.dataset.label

    @property
    def target_architecture(self) -> str:
        return (self.target.architecture if self.target else None) or self.model

    @property
    def reference_architecture(self) -> str:
        return self.reference_model or self.target_architecture


def from_dict(raw: Any, source: str = "config") -> RunConfig:
    """A ``RunConfig`` from a mapping (a YAML file's keys, or a dict in Python).

    Args:
        raw: the keys; None is the empty mapping (every default).
        source: what to call ``raw`` in an error when it is not a mapping.

    Returns:
        The validated, immutable config.

    Raises:
        ConfigError: one line naming the first bad key (an unknown key gets the closest known one).
    """
    return validated(RunConfig, {} if raw is None else raw, source)


def load(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> RunConfig:
    """A YAML run config; its relative paths resolve against its folder (``paths``).

    Args:
        path: the YAML file (UTF-8, a non-empty mapping).
        overrides: ``key=value`` strings applied before validation, as ``--set`` does.

    Returns:
        The validated config.

    Raises:
        ConfigError: a missing or unreadable file, YAML errors (with line and column), a bad key.
    """
    raw = anchored(read(path), Path(path).absolute().parent, RunConfig)
    return from_dict(with_overrides(raw, overrides))


# The built-in default audit: scikit-learn's digits (ships with a dependency, so it
# runs on a fresh machine with no data directory) in well under 3 minutes on 2 cores.
# Every value is RunConfig's own default, so `miaudit init`'s file runs the same audit.
DEFAULT_RUN: dict[str, Any] = {"dataset": "digits", "model": "mlp", "seed": 0, "references": 4, "attacks": "auto"}


def default() -> RunConfig:
    return from_dict(DEFAULT_RUN)
