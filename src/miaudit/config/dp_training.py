"""``dp_training:``, a user's own differentially private training, audited by ``miaudit dp-audit``: the function
that trains the target (``package.module:function``, called as ``function(model, x, y)`` like ``target.train_fn``),
the (epsilon, delta) it claims, and optionally the accountant's facts (noise multiplier, sampling rate, steps) the
claim was computed from. The function is imported when the config is read, so a typo fails before any work.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from ..errors import ConfigError
from ..strict import Strict


class AccountantFacts(Strict):
    """What the user's accountant was told: the claim's epsilon is recomputed from these with Opacus' accountants
    and recorded beside it (the audit tests the smallest figure)."""

    noise_multiplier: float = Field(gt=0, description="sigma: the noise std over the clipping norm")
    sample_rate: float = Field(gt=0, le=1, description="q: the Poisson sampling rate (expected batch / records)")
    steps: int = Field(ge=1, description="the noisy steps accounted")


class DPTrainingConfig(Strict):
    """A user's DP training function and the privacy it claims: the target is trained by ``function(model, x, y)``
    (in place) on the training records with the canaries inserted, and the claim is tested by the one-run audit."""

    function: str = Field(
        description="package.module:function that trains the model in place with your DP training, called as "
        "function(model, x, y)"
    )
    epsilon: float = Field(gt=0, description="the epsilon your training claims")
    delta: float = Field(ge=0, lt=1, description="the delta of that claim")
    references: Literal["function", "recipe"] = Field(
        default="function",
        description="who trains the reference models: function (your function, on population records: the "
        "auditor knows the training algorithm) or recipe (miaudit's loop with train, no DP)",
    )
    accountant: AccountantFacts | None = Field(
        default=None, description="optional: the noise multiplier, sampling rate and steps your accountant was told"
    )

    @field_validator("function")
    @classmethod
    def _importable(cls, v: str, info: ValidationInfo) -> str:
        """Imported now (a typo fails before any training), unless the Python API holds the function itself."""
        from ..models import io

        if not (info.context or {}).get("function_given"):
            signature_checked(io.import_factory(v), v)
        return v


def signature_checked(fn: object, name: str) -> object:
    """``fn`` when it can be called as ``function(model, x, y)``, else a one-line error naming it (before any
    training)."""
    import inspect

    try:
        signature = inspect.signature(fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin without a signature: it will tell when called
        return fn
    try:
        signature.bind(None, None, None)
    except TypeError:
        raise ConfigError(
            f"dp_training.function: {name} takes {signature}; it is called as function(model, x, y) (the model, "
            "the training inputs and labels as numpy arrays)"
        ) from None
    return fn
