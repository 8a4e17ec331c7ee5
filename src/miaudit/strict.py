"""``Strict``, the base of the config models (``RunConfig``, ``ScoreConfig``, the unlearning section and their
parts; attack parameters have their own, ``attacks.base.AttackParams``): unknown keys refused, immutable once
read, no true/false where a number belongs; changed only through ``revised``, which validates again. It sits in
the foundation so that every layer that defines a config part (training's options, lm's canaries, config/) derives
from the same class.
"""

from __future__ import annotations

import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

S = TypeVar("S", bound="Strict")


class Strict(BaseModel):
    """A config part: unknown keys refused, immutable once read, no true/false where a number belongs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_number(cls, value: object, info: ValidationInfo) -> object:
        """pydantic takes true as 1 for an int field: ``--set train.epochs=true`` would train one epoch."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None:
            kinds = set(typing.get_args(field.annotation) or (field.annotation,)) - {type(None)}
            if kinds and kinds <= {int, float}:
                raise ValueError(f"expected a number, got {str(value).lower()}")
        return value

    def revised(self: S, **changes: Any) -> S:
        """This config with ``changes``, validated again as a whole: every field check and cross-field rule runs on
        the result (a ``model_copy`` with an update runs none, so a value that breaks one would pass). Built as if the
        fields given originally and the changes had been given (defaults re-derived, ``model_fields_set`` kept);
        the parts not changed are passed as the validated objects they are, not validated twice."""
        given = {name: getattr(self, name) for name in self.model_fields_set}
        return type(self).model_validate({**given, **changes})
