"""Optional parts of the run config: DP audits and canaries (the executor and DP-SGD training are training's
options, ``training/options.py``). Like the rest of ``config/``, this module imports no torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ..strict import Strict


class DPAuditConfig(Strict):
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


class CanaryConfig(Strict):
    """The one-run audit's canaries (Steinke, Nasr & Jagielski 2023): each in the target's training run
    with probability 1/2; the auditor guesses on the ``guesses`` highest and lowest scores (default count/10).
    Black-box (the final model only): records ``random-label``, ``natural`` or ``crafted`` (out-of-distribution
    inputs with random labels). White-box (every intermediate model): ``gradient`` or ``dirac`` canaries, per-sample
    gradients inserted into the DP-SGD steps. ``gradient: N`` adds N white-box canaries to a black-box run."""

    count: int = Field(
        ge=1,
        description="canaries in the run (at least 2 for the one-run audit); with dp-audit --runs, crafted canaries "
        "per run (default 16 without a canaries section)",
    )
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
