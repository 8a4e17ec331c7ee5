"""A ``miaudit run`` config (``RunConfig``): YAML in, validated once at the edge, immutable after; composed of
the records' keys (``records.py``), the target (``target.py``), training and the optional parts (``options.py``),
with the settings every audit shares (``settings.py``).

Every error is one line naming the offending key (``attacks.1.samples: ...``);
the CLI turns ``ConfigError`` into exit code 2 before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from ..lm.canaries import CanaryExposureConfig  # the LM layer defines it; composed here
from ..strict import Strict
from ..training import options
from ..training.options import ExecutorConfig
from ..workflow.keys import GATE_FIELD, TRACKING_FIELD, GateKey, TrackingConfig
from .budget import ReferenceBudget, budget_shorthand, check_budget
from .checks import (
    architecture_name,
    base_fits,
    holds_weights,
    known_device,
    lm_base,
    model_from_base,
    target_shorthand,
)
from .dp_training import DPTrainingConfig
from .files import load_config, validated
from .options import CanaryConfig, DPAuditConfig
from .records import CalibrationConfig, DataConfig, QueriesConfig, SplitConfig, queries_shorthand
from .settings import AttacksOrAuto, Fdr, MinFpr, Mode, OffWhenNone, Seed
from .target import TargetConfig

AUDITED = ("members", "nonmembers", "queries")  # the keys naming the records a user's target is audited on


class TrainConfig(options.TrainConfig):
    __doc__ = options.TrainConfig.__doc__  # training's options (training/options.py), the same keys and schema

    _base = field_validator("base")(lm_base)  # train.base names a causal LM directory: lm sits above training


class RunConfig(Strict):
    """A ``miaudit run`` config: what to audit, how the models train, which attacks run.

    Every key has a default (``miaudit init`` writes them all, commented), so ``RunConfig()`` is a valid
    audit; unknown keys are refused, and the object is immutable once validated. Attack rows stay plain
    mappings here: ``attack_plan.build`` validates them against each attack's parameters. It satisfies
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
    seed: Seed = 0
    train: TrainConfig = Field(default=TrainConfig(), description="how the target and the reference models train")
    references: int = Field(
        default=4,
        ge=0,
        le=1024,
        description="reference models available (only those some attack uses are trained), or {budget: B}: their "
        "training at most B times the target's, miaudit choosing how many and how each trains",
    )
    reference_budget: ReferenceBudget | None = Field(
        default=None, description="set by references: {budget: B} (the design's count becomes references)"
    )
    mode: Mode = "offline"
    split: SplitConfig = Field(default=SplitConfig(), description="fractions of the data set per role")
    calibration: Annotated[CalibrationConfig | None, OffWhenNone] = Field(
        default=CalibrationConfig(), description="conformal p-values on held-out non-members; none: raw p-values"
    )
    attacks: AttacksOrAuto = Field(
        default="auto",
        description="auto (with 2+ references the candidates measured on the references as pseudo-targets, the "
        "strongest run; with 1, the leave-one-data-set-out rule), or "
        "attack rows: a name, or {name: ..., parameters}; see `miaudit attacks`",
    )
    fdr: Fdr = 0.05
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
    min_fpr: MinFpr = None
    dp_audit: DPAuditConfig | None = Field(default=None, description="an epsilon lower bound from one attack")
    canaries: CanaryConfig | None = Field(default=None, description="canaries of the one-run audit (dp-audit)")
    dp_training: DPTrainingConfig | None = Field(
        default=None,
        description="dp-audit: your own DP training function (package.module:function) and the epsilon it claims",
    )
    canary_exposure: CanaryExposureConfig | None = Field(
        default=None,
        description="causal LMs: secret-sharer canaries in the target's training texts, and their exposure",
    )
    gate: GateKey = GATE_FIELD
    tracking: TrackingConfig | None = TRACKING_FIELD

    @model_validator(mode="before")
    @classmethod
    def _budget(cls, raw: object) -> object:
        return budget_shorthand(raw, default_model=cls.model_fields["model"].default)

    _known_device = field_validator("device")(known_device)
    _queries_shorthand = field_validator("queries", mode="before")(queries_shorthand)
    _target_shorthand = field_validator("target", mode="before")(target_shorthand)

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_shorthand(cls, v: object) -> object:
        return {"kind": v} if isinstance(v, str) else v

    @field_validator("dataset", "reference_data", "nonmember_data", mode="before")
    @classmethod
    def _dataset_shorthand(cls, v: object) -> object:
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

    _known_architecture = field_validator("model", "reference_model")(architecture_name)
    _default_model = model_validator(mode="before")(model_from_base)

    @model_validator(mode="after")
    def _own_weights(self) -> RunConfig:
        if (
            self.target is not None
            and self.target.checkpoint is None
            and self.target.endpoint is None
            and not holds_weights(self.target_architecture)
        ):
            raise ValueError(
                f"target.checkpoint: required for {self.target_architecture!r} (only an hf: causal LM directory "
                "holds its own weights)"
            )
        return self

    @model_validator(mode="after")
    def _base(self) -> RunConfig:
        own = (self.target.architecture or self.model) if self.target else None
        base_fits(self.train.base, self.model, own, self.reference_model)
        from ..lm.names import is_causal_lm

        if self.canary_exposure is not None and (self.target is not None or not is_causal_lm(self.model)):
            raise ValueError(
                "canary_exposure: canaries go into the training texts of a causal LM miaudit trains (model: gpt-tiny "
                "or hf:PATH, no target:)"
            )
        return self

    @model_validator(mode="after")
    def _budgeted(self) -> RunConfig:
        refused = {"mode": self.mode == "online", "target": self.target is not None}
        refused |= {"reference_data": self.reference_data is not None, "train.dp": self.train.dp is not None}
        check_budget(self.reference_budget, self.references, self.reference_architecture, refused)
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
    def _user_dp_training(self) -> RunConfig:
        if self.dp_training is None:
            return self
        if self.train.dp is not None:
            raise ValueError(
                "train.dp: miaudit's own DP-SGD; with dp_training your function trains the target: remove train.dp"
            )
        if self.target is not None:
            raise ValueError("target: dp_training trains the target with your function and the canaries; remove target")
        if self.canaries is not None and self.canaries.implied_threat_model == "white-box":
            raise ValueError(
                f"canaries.kind: {self.canaries.kind} canaries alone observe only noisy steps, which your function "
                "takes: use input-space canaries (crafted, random-label, natural), with canaries.gradient: N for "
                "the white-box ones your optimizer joins by miaudit.dp_observe(optimizer) (docs/dp-pipeline.md)"
            )
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


def from_dict(raw: object, source: str = "config", context: dict[str, bool] | None = None) -> RunConfig:
    """A ``RunConfig`` from a mapping (a YAML file's keys, or a dict in Python).

    Args:
        raw: the keys; None is the empty mapping (every default).
        source: what to call ``raw`` in an error when it is not a mapping.
        context: told to the validators (``function_given``: ``dp_training.function`` is held by the caller).

    Returns:
        The validated, immutable config.

    Raises:
        ConfigError: one line naming the first bad key (an unknown key gets the closest known one).
    """
    return validated(RunConfig, {} if raw is None else raw, source, context)


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
    return load_config(path, overrides, RunConfig, lambda raw, _folder: from_dict(raw))


# The built-in default audit: scikit-learn's digits (ships with a dependency, so it
# runs on a fresh machine with no data directory) in well under 3 minutes on 2 cores.
# Every value is RunConfig's own default, so `miaudit init`'s file runs the same audit.
DEFAULT_RUN: dict[str, Any] = {"dataset": "digits", "model": "mlp", "seed": 0, "references": 4, "attacks": "auto"}


def default() -> RunConfig:
    return from_dict(DEFAULT_RUN)
