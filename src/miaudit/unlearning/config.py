"""The ``unlearning:`` section of an unlearning audit's config: the forget set and how the unlearned model is made.

``forget``: a count (drawn with the seed from the target's training records), an index file or a list of indices
(a subset of them).
``method``: a name or ``{name, epochs, lr, ...}``; absent when the unlearned model is given (``target:``) or made
by the user's ``unlearn_fn`` (Python). Unknown keys are refused, with the closest known one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..config.files import validated
from ..config.options import Strict
from ..config.run import RunConfig, from_dict
from ..errors import ConfigError

MethodName = Literal["retrain", "noop", "finetune", "gradient-ascent", "neggrad-plus", "random-label", "scrub"]
METHODS: tuple[str, ...] = (
    "retrain", "noop", "finetune", "gradient-ascent", "neggrad-plus", "random-label", "scrub",
)  # fmt: skip

# per method: (epochs, lr) when the config leaves them out; retrain and noop take none. Gradient ascent steps at
# the training recipe's default rate (0.1) in batches of 16 (a forget set of 100 is 2 steps per epoch at 64): on a
# memorized record the loss's gradient is near 0, so fewer or smaller steps barely move the model
DEFAULTS: dict[str, tuple[int, float]] = {
    "finetune": (2, 0.01),
    "gradient-ascent": (1, 0.1),
    "neggrad-plus": (2, 0.01),
    "random-label": (2, 0.01),
    "scrub": (3, 0.01),
}
BATCH_SIZE_DEFAULTS: dict[str, int] = {"gradient-ascent": 16}


class MethodConfig(Strict):
    """How miaudit makes the unlearned model from the original: ``retrain`` (a fresh model trained on the
    retained records, the gold standard), ``noop`` (the original unchanged), ``finetune`` (SGD on the retained
    records), ``gradient-ascent`` (ascent on the forget set), ``neggrad-plus`` (descent on the retained records and
    ascent on the forget set, weighted by alpha), ``random-label`` (SGD on the forget set with random wrong
    labels), ``scrub`` (Kurmanji et al. 2023: the original as teacher; in the first ``max_epochs`` epochs a pass
    pushing the forget set's outputs away from the teacher's, then each epoch a pass on the retained records pulling
    them to the teacher's and to their labels)."""

    name: MethodName = Field(description="retrain, noop, finetune, gradient-ascent, neggrad-plus or random-label")
    epochs: int | None = Field(default=None, ge=1, le=1000, description="passes (default per method)")
    lr: float | None = Field(default=None, gt=0, le=10, description="SGD learning rate (default per method)")
    batch_size: int | None = Field(
        default=None, ge=1, description="records per step (default: 16 for gradient-ascent, else train.batch_size)"
    )
    momentum: float = Field(default=0.9, ge=0, lt=1, description="SGD momentum")
    # one method's own
    alpha: float = Field(default=0.9, gt=0, lt=1, description="neggrad-plus: weight of the retained records' loss")
    max_epochs: int = Field(default=1, ge=0, le=1000, description="scrub: epochs with a max pass on the forget set")
    temperature: float = Field(default=4.0, gt=0, le=100, description="scrub: softmax temperature of its KL terms")

    @property
    def resolved_epochs(self) -> int | None:
        return self.epochs if self.epochs is not None else DEFAULTS.get(self.name, (None, None))[0]

    @property
    def resolved_lr(self) -> float | None:
        return self.lr if self.lr is not None else DEFAULTS.get(self.name, (None, None))[1]

    def resolved_batch_size(self, train_batch_size: int) -> int:
        return self.batch_size or BATCH_SIZE_DEFAULTS.get(self.name, train_batch_size)

    def label(self) -> str:
        """``finetune (epochs 2, lr 0.01)``: the method as the reports name it."""
        if self.name in ("retrain", "noop"):
            return self.name
        extra = f", alpha {self.alpha}" if self.name == "neggrad-plus" else ""
        extra = f", max_epochs {self.max_epochs}" if self.name == "scrub" else extra
        return f"{self.name} (epochs {self.resolved_epochs}, lr {self.resolved_lr}{extra})"

    @model_validator(mode="after")
    def _takes_hyperparameters(self) -> MethodConfig:
        if self.name in ("retrain", "noop") and (self.epochs is not None or self.lr is not None):
            raise ValueError(
                f"{self.name} takes no epochs or lr (retrain trains as the target did: train.epochs, train.lr)"
            )
        return self


class UnlearningConfig(Strict):
    """``unlearning:``: which records are forgotten and how the unlearned model is made."""

    forget: int | Path | tuple[int, ...] = Field(
        description="records to forget: a count drawn with the seed from the target's training records, a "
        ".npy/text file of record indices (a subset of them), or the indices themselves as a list"
    )
    method: MethodConfig | None = Field(
        default=None,
        description="how miaudit makes the unlearned model (a name or {name, epochs, lr, ...}); leave out when "
        "target: gives the unlearned model",
    )
    level: float = Field(default=0.05, gt=0, lt=1, description="the set-level test's level (two-sided)")
    fdr: float = Field(default=0.05, gt=0, lt=1, description="records named at this FDR in each direction")

    @field_validator("method", mode="before")
    @classmethod
    def _method_shorthand(cls, v: object) -> object:
        return {"name": v} if isinstance(v, str) else v

    @field_validator("forget", mode="before")
    @classmethod
    def _forget_form(cls, v: object) -> object:
        """Every form decided here, so that a wrong one is one message, not one per branch of the union."""
        forms = "a positive count, an index file or a list of record indices"
        if isinstance(v, (list, tuple)):
            bad = next((i for i in v if isinstance(i, bool) or not isinstance(i, int) or i < 0), None)
            if bad is not None or not v:
                what = "an empty list" if not v else f"{bad!r} in the list"
                raise ValueError(f"expected {forms} (whole numbers from 0), got {what}")
            if len(set(v)) < len(v):
                twice = next(i for i in v if v.count(i) > 1)
                raise ValueError(f"record {twice} is listed twice")
            return tuple(v)
        if isinstance(v, bool) or (isinstance(v, int) and v < 1) or not isinstance(v, (int, str, Path)):
            raise ValueError(f"expected {forms}, got {v!r}")
        return Path(v) if isinstance(v, str) else v


def schema_keys() -> dict[str, dict]:
    """The key an unlearning config adds to a run config's, as its JSON schema (``miaudit schema config``, ``init``)."""
    described = "which records are forgotten and how the unlearned model is made"
    return {"unlearning": {**UnlearningConfig.model_json_schema(), "description": described}}


@dataclass(frozen=True)
class UnlearnConfig:
    """An unlearning audit's config: the audit config (``cfg``), its ``unlearning:`` section and, for a given
    unlearned model, the file of the records the original model trained on."""

    cfg: RunConfig
    unlearning: UnlearningConfig
    members: Path | None = None


def as_config(u: UnlearnConfig) -> dict[str, Any]:
    """The config's keys as miaudit read them: results.json's ``config`` and what ``miaudit config`` prints."""
    members = {} if u.members is None else {"members": str(u.members)}
    return {**u.cfg.model_dump(mode="json"), "unlearning": u.unlearning.model_dump(mode="json"), **members}


def from_mapping(raw: Mapping[str, Any], folder: Path | None = None) -> UnlearnConfig:
    """The config from its keys: ``unlearning`` and (with ``target``) ``members`` taken out, the rest an audit
    config (``RunConfig``, every check of ``miaudit run``). A file is read by ``config.files.load_config`` with this
    as its ``build``."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"config: expected a mapping of keys, got {type(raw).__name__}")
    rest = dict(raw)
    section = rest.pop("unlearning", None)
    if section is None:
        raise ConfigError("unlearning: required, e.g. unlearning: {forget: 100, method: retrain}")
    members = rest.pop("members", None) if rest.get("target") is not None else None
    cfg = from_dict(rest)
    if not isinstance(section, Mapping):
        raise ConfigError(f"unlearning: expected a mapping such as {{forget: 100, method: retrain}}, got {section!r}")
    unl = validated(UnlearningConfig, dict(section), "unlearning", within="unlearning")
    if isinstance(unl.forget, Path) and folder is not None and not unl.forget.expanduser().is_absolute():
        unl = unl.revised(forget=folder / unl.forget)
    member_path = None if members is None else Path(str(members)).expanduser()
    if member_path is not None and folder is not None and not member_path.is_absolute():
        member_path = folder / member_path
    if cfg.references < 2:
        raise ConfigError(
            f"references: an unlearning audit retrains at least 2 models on the retained records (got "
            f"{cfg.references}); 4 or more recommended"
        )
    if cfg.target is not None:
        if cfg.target.endpoint is not None or cfg.target.checkpoint is None:
            raise ConfigError("target: an unlearning audit takes the unlearned model as {architecture, checkpoint}")
        if member_path is None:
            raise ConfigError("members: the records the original model trained on (an index file) are required")
        if unl.method is not None:
            raise ConfigError("unlearning.method: the unlearned model is given (target:); leave method out")
    return UnlearnConfig(cfg=cfg, unlearning=unl, members=member_path)
