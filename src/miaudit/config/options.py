"""Optional parts of the run config: where models train (executor), DP-SGD training, DP audits, canaries;
and ``Strict``, the base of every config part. Like the rest of ``config/``, this module imports no torch.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator


class Strict(BaseModel):
    """Every config part: unknown keys refused, immutable once read, no true/false where a number belongs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_number(cls, value: Any, info: ValidationInfo) -> Any:
        """pydantic takes true as 1 for an int field: ``--set train.epochs=true`` would train one epoch."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None:
            kinds = set(typing.get_args(field.annotation) or (field.annotation,)) - {type(None)}
            if kinds and kinds <= {int, float}:
                raise ValueError(f"expected a number, got {str(value).lower()}")
        return value


_Strict = Strict


class SamplingFault(_Strict):
    """The accountant is told a sampling rate ``accounted_rate_factor`` times smaller than the one used."""

    accounted_rate_factor: float = Field(gt=1, description="rate used / rate accounted (above 1: a broken claim)")


class PlantedFault(_Strict):
    """A self-test of the DP audits, never a way to train: a bug planted on purpose into DP-SGD, so the declared
    epsilon is false and an audit with power must flag it. Each kind is planted only when its key is given:
    ``noise_scale: s`` draws s times the noise the accountants are told of; ``clip: none`` skips per-sample
    clipping; ``clip: after_mean`` clips the batch's mean gradient instead of each record's; ``sampling:
    {accounted_rate_factor: f}`` tells the accountants (and the noise calibration) a rate f times smaller than the
    one used; ``noise: per_epoch`` draws noise once per epoch (the epoch's first step; its other steps add none);
    ``public_pass: true`` trains one non-private epoch on the private data before DP-SGD."""

    noise_scale: float | None = Field(default=None, gt=0, lt=1, description="noise drawn / noise accounted (< 1)")
    clip: Literal["none", "after_mean"] | None = Field(default=None, description="none | after_mean")
    sampling: SamplingFault | None = Field(default=None, description="{accounted_rate_factor: f}, f > 1")
    noise: Literal["per_epoch"] | None = Field(default=None, description="per_epoch: noise once per epoch")
    public_pass: bool | None = Field(default=None, description="true: one non-private epoch before DP-SGD")

    @model_validator(mode="after")
    def _something_planted(self) -> PlantedFault:
        if self.public_pass is False:
            raise ValueError("public_pass: give true to plant the fault, or remove the key")
        if not self.kinds():
            raise ValueError(
                "planted_fault: name the fault: noise_scale: s, clip: none | after_mean, "
                "sampling: {accounted_rate_factor: f}, noise: per_epoch, or public_pass: true"
            )
        return self

    def kinds(self) -> dict[str, Any]:
        """The faults planted, as given: {key: value}."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items()}

    def description(self) -> str:
        """What was planted, in words, for every output."""
        said = {
            "noise_scale": lambda v: f"noise drawn at {v:g}x the noise accounted",
            "clip": lambda v: (
                "per-sample clipping skipped"
                if v == "none"
                else "the batch's mean gradient clipped instead of each record's"
            ),
            "sampling": lambda v: (
                f"the accountant told a sampling rate {v['accounted_rate_factor']:g}x smaller than the one used"
            ),
            "noise": lambda v: "noise drawn once per epoch (the epoch's other steps add none)",
            "public_pass": lambda v: "one non-private epoch on the private data before DP-SGD",
        }
        return "; ".join(said[k](v) for k, v in self.kinds().items())


class DPConfig(_Strict):
    """DP-SGD (Opacus): per-sample clipping to ``max_grad_norm``, Gaussian noise, Poisson sampling. Give the
    privacy target (``epsilon``, ``delta``: the noise multiplier is calibrated by the RDP accountant) or the
    ``noise_multiplier`` itself. The target trains this way; the reference models only with ``references``."""

    epsilon: float | None = Field(default=None, gt=0, description="declared epsilon (noise calibrated to reach it)")
    delta: float = Field(default=1e-5, ge=0, lt=1)
    noise_multiplier: float | None = Field(default=None, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    references: bool = Field(default=False, description="train the reference models with DP-SGD as well")
    planted_fault: PlantedFault | None = Field(
        default=None, description="self-test of the audit: a DP-SGD bug planted on purpose (PlantedFault's kinds)"
    )

    @model_validator(mode="after")
    def _one_noise(self) -> DPConfig:
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("give exactly one of epsilon (calibrated noise) or noise_multiplier")
        return self


class ExecutorConfig(_Strict):
    """Where models train: in this process (local), or as Ray tasks (``pip install miaudit[ray]``) that write
    into the store, which must then be on storage every worker sees (``cache_dir``)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(default=None, description="auto: join a running cluster; none: start a local one")
    num_workers: int | None = Field(default=None, ge=1, description="tasks at once (default: as the cluster allows)")
    cpus_per_task: float = Field(default=1.0, gt=0)
    gpus_per_task: float = Field(default=0.0, ge=0)
    max_retries: int = Field(default=2, ge=0, description="Ray retries of a failed task")


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


BLACK_BOX_KINDS = ("random-label", "natural", "crafted")
WHITE_BOX_KINDS = ("gradient", "dirac")


class CanaryConfig(_Strict):
    """The one-run audit's canaries (Steinke, Nasr & Jagielski 2023): each in the target's training run
    with probability 1/2; the auditor guesses on the ``guesses`` highest and lowest scores (default count/10).
    Black-box (the final model only): records ``random-label``, ``natural`` or ``crafted`` (out-of-distribution
    inputs with random labels). White-box (every intermediate model): ``gradient`` or ``dirac`` canaries, per-sample
    gradients inserted into the DP-SGD steps. ``gradient: N`` adds N white-box canaries to a black-box run."""

    count: int = Field(ge=1, description="at least 2 for the one-run audit (the multi-run audit crafts its own)")
    kind: Literal["random-label", "natural", "crafted", "gradient", "dirac"] = "random-label"
    threat_model: Literal["black-box", "white-box"] | None = Field(
        default=None, description="implied by kind (gradient, dirac: white-box); given, it must agree"
    )
    guesses: int | None = Field(default=None, ge=1, description="k: guesses 'in' and 'out' each")
    gradient: int | None = Field(default=None, ge=2, description="also this many white-box gradient canaries")
    gradient_guesses: int | None = Field(default=None, ge=1, description="k for the gradient canaries")

    @model_validator(mode="after")
    def _enough(self) -> CanaryConfig:
        if self.guesses is not None and 2 * self.guesses > self.count:
            raise ValueError(f"guesses: 2 x {self.guesses} exceeds count {self.count}")
        if self.threat_model is not None and self.threat_model != self.implied_threat_model:
            raise ValueError(
                f"threat_model: {self.kind} canaries are {self.implied_threat_model}; white-box kinds are "
                f"{', '.join(WHITE_BOX_KINDS)}, black-box kinds {', '.join(BLACK_BOX_KINDS)}"
            )
        if self.gradient is not None and self.implied_threat_model == "white-box":
            raise ValueError("gradient: adds white-box canaries to a black-box run; here kind is already white-box")
        if self.gradient_guesses is not None and 2 * self.gradient_guesses > (self.gradient or 0):
            raise ValueError(f"gradient_guesses: 2 x {self.gradient_guesses} exceeds gradient {self.gradient}")
        return self

    @property
    def implied_threat_model(self) -> str:
        return "white-box" if self.kind in WHITE_BOX_KINDS else "black-box"


class CanaryExposureConfig(_Strict):
    """Secret-sharer canaries for causal LMs (Carlini et al. 2019; ``miaudit.lm.canaries``): for each repetition
    count, ``count`` canaries "<prefix> d1 ... dL" of ``length`` random digits inserted that many times into the
    target's training texts, outside the audited records; results.json's ``canary_exposure`` is each one's
    exposure after training."""

    count: int = Field(default=1, ge=1, description="canaries per repetition count")
    repetitions: list[int] = Field(default=[1, 4, 16], min_length=1, description="times each canary is inserted")
    length: int = Field(default=4, ge=1, le=12, description="random digits per canary: 10^length candidates")
    prefix: str = Field(default="my secret number is", min_length=1, description="the text before the digits")
    seed: int = Field(default=0, ge=0, description="draws the digits")
    estimator: Literal["auto", "exact", "skew-normal"] = Field(
        default="auto", description="exact: every candidate ranked (10^length <= 100000); skew-normal: extrapolated"
    )
    samples: int = Field(default=5000, ge=100, description="skew-normal: candidates sampled to fit it")

    @field_validator("repetitions")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(r < 1 for r in v) or len(set(v)) < len(v):
            raise ValueError(f"expected distinct counts of at least 1, got {v}")
        return v

    @model_validator(mode="after")
    def _enumerable(self) -> CanaryExposureConfig:
        if self.estimator == "exact" and 10**self.length > 10**5:
            raise ValueError(
                f"estimator: exact ranks all 10^{self.length} candidates; at most 10^5 (length <= 5), else skew-normal"
            )
        if 10**self.length < self.count * len(self.repetitions) + 1:
            raise ValueError(
                f"length: {self.length} digit(s) cannot give {self.count * len(self.repetitions)} canaries"
            )
        return self
