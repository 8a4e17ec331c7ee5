"""The base of every section of results.json: a pydantic model that keeps the keys it was given in the order it
was given them, so a results.json read and written again is the same file, and an absent key stays absent."""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)

# a number as the run computed it: an int stays an int (pydantic's float would write 1 as 1.0)
Number: TypeAlias = int | float
Interval: TypeAlias = list[Number]
ByLevel: TypeAlias = dict[str, Number]  # FPR level ("0.01") -> value
IntervalByLevel: TypeAlias = dict[str, Interval]
# a rate or share in [0, 1] (a TPR, an FPR, an AUC), and a count: the schema states the ranges (``miaudit schema``)
Share: TypeAlias = Annotated[int, Field(ge=0, le=1)] | Annotated[float, Field(ge=0, le=1)]
ShareByLevel: TypeAlias = dict[str, Share]
Count: TypeAlias = Annotated[int, Field(ge=0)]


class Section(BaseModel):
    """A part of results.json. Keys beyond the declared ones are kept (``extra="allow"``): a section may grow a
    key without a schema version, and a reader of an older or newer file loses nothing."""

    # every field's docstring is its description in the JSON Schema (``miaudit schema``, docs/results-schema.md)
    model_config = ConfigDict(
        extra="allow", populate_by_name=True, serialize_by_alias=True, use_attribute_docstrings=True
    )
    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, Section):
            model._order = tuple(data)
        return model

    @model_serializer(mode="wrap")
    def _in_given_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        if not self._order or not isinstance(out, dict):
            return out
        first = {k: out[k] for k in self._order if k in out}
        return {**first, **{k: v for k, v in out.items() if k not in first}}
