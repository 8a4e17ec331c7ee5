"""The base of every section of results.json: a pydantic model that refuses keys it does not declare
(``extra="forbid"``: a renamed or misspelt key fails, naming it) and keeps the keys it was given in the order it
was given them, so a results.json read and written again is the same file, and an absent key stays absent.

A file of a newer layout than this miaudit's (a higher ``schema_version``) is read with ``lenient()``: keys this
version does not know are dropped, and named in a warning, instead of refused."""

from __future__ import annotations

from typing import Annotated, TypeAlias, TypedDict

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# a number as the run computed it: an int stays an int (pydantic's float would write 1 as 1.0)
Number: TypeAlias = int | float
Interval: TypeAlias = list[Number]
ByLevel: TypeAlias = dict[str, Number]  # FPR level ("0.01") -> value
IntervalByLevel: TypeAlias = dict[str, Interval]
# a JSON object as written to a file (results.json, compare.json): what a model dumps to
JsonObject: TypeAlias = dict[str, JsonValue]

# the validation context under which a section drops the keys it does not know (a file of a newer layout)
LENIENT = "drop_unknown_keys"


class Lenient(TypedDict):
    """The validation context that reads a newer file: unknown keys are dropped, named in ``drop_unknown_keys``."""

    drop_unknown_keys: list[str]


def lenient(dropped: list[str]) -> Lenient:
    """The validation context that reads a newer file: unknown keys are dropped, their paths appended to
    ``dropped``."""
    return Lenient(drop_unknown_keys=dropped)


# a rate or share in [0, 1] (a TPR, an FPR, an AUC), and a count: the schema states the ranges (``miaudit schema``)
Share: TypeAlias = Annotated[int, Field(ge=0, le=1)] | Annotated[float, Field(ge=0, le=1)]
ShareByLevel: TypeAlias = dict[str, Share]
Count: TypeAlias = Annotated[int, Field(ge=0)]


class Section(BaseModel):
    """A part of results.json. Keys beyond the declared ones are refused (``extra="forbid"``); a key is added by
    declaring it here (optional, so older files still load) and raising ``SCHEMA_VERSION``."""

    # every field's docstring is its description in the JSON Schema (``miaudit schema``, docs/results-schema.md)
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, serialize_by_alias=True, use_attribute_docstrings=True
    )
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Section:
        if isinstance(data, dict) and isinstance(info.context, dict) and LENIENT in info.context:
            known: set[str] = set()
            for name, f in cls.model_fields.items():
                known |= {name, f.alias} if f.alias else {name}
            dropped = [k for k in data if k not in known]
            info.context[LENIENT].extend(f"{cls.__name__}.{k}" for k in dropped)
            data = {k: v for k, v in data.items() if k in known}
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, Section):
            fields = type(model).model_fields
            model._order = tuple((fi.alias or k) if (fi := fields.get(k)) is not None else k for k in data)
        return model

    def __eq__(self, other: object) -> bool:
        """Equal values are equal sections, whatever order their keys were given in (the order is the file's
        layout, not its content)."""
        return type(self) is type(other) and isinstance(other, Section) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable, as pydantic's models

    @model_serializer(mode="wrap")
    def _in_given_order(self, handler: SerializerFunctionWrapHandler) -> object:
        out = handler(self)
        if not self._order or not isinstance(out, dict):
            return out
        first = {k: out[k] for k in self._order if k in out}
        return {**first, **{k: v for k, v in out.items() if k not in first}}
