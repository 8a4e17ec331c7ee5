"""The attack registry: one place that knows every attack's name, parameters and needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import ValidationError

from .base import AttackInputs, AttackParams, AttackRequirementError, AttackResult

AttackFn = Callable[[AttackInputs, AttackParams], AttackResult]
Need = Literal["population", "validation", "models", "x"]


@dataclass(frozen=True)
class AttackInfo:
    name: str
    fn: AttackFn
    params: type[AttackParams]
    summary: str
    min_references: int = 0
    max_references: int | None = None
    modes: tuple[str, ...] = ("offline", "online")
    mode_note: str = ""  # appended to the refusal of another mode: why, and what to run instead
    needs: frozenset[str] = frozenset()
    pvalues: bool = False  # returns one-sided p-values (a hypothesis test)
    warmup: Callable[[], None] | None = None  # one-time setup (heavy imports) kept out of the attack's timing

    def check(self, inputs: AttackInputs, params: AttackParams) -> None:
        """Raise AttackRequirementError (one line) when run outside its assumptions."""
        provided = {need for need in ("population", "validation", "models") if getattr(inputs, need) is not None}
        self.check_plan(inputs.n_references, inputs.mode, provided | ({"x"} if inputs.queries.x is not None else set()))

    def check_plan(self, k: int, mode: str, provided: set[str] | None = None) -> None:
        """The same check before any input exists (a config, a plan): k references, the run's mode, and the
        names of the inputs it will provide (None: not known yet, skip that part)."""
        if k < self.min_references:
            raise AttackRequirementError(
                f"{self.name}: needs at least {self.min_references} reference model(s), got references={k}"
            )
        if self.max_references is not None and k > self.max_references:
            raise AttackRequirementError(
                f"{self.name}: uses at most {self.max_references} reference model(s), got references={k}"
            )
        if mode not in self.modes:
            note = f"; {self.mode_note}" if self.mode_note else ""
            raise AttackRequirementError(
                f"{self.name}: runs in {'/'.join(self.modes)} mode only, the run is {mode}{note}"
            )
        missing = [] if provided is None else sorted(self.needs - set(provided))
        if missing:
            raise AttackRequirementError(f"{self.name}: needs {missing[0]} inputs, which this run did not provide")


_REGISTRY: dict[str, AttackInfo] = {}


def register(
    name: str, *, params: type[AttackParams] = AttackParams, summary: str, **info
) -> Callable[[AttackFn], AttackFn]:
    """Decorator adding an attack function to the registry under ``name``."""

    def wrap(fn: AttackFn) -> AttackFn:
        if name in _REGISTRY:
            raise RuntimeError(f"attack {name!r} registered twice")
        _REGISTRY[name] = AttackInfo(name=name, fn=fn, params=params, summary=summary, **info)
        return fn

    return wrap


def get(name: str) -> AttackInfo:
    try:
        return _REGISTRY[name.lower()]
    except KeyError:
        raise KeyError(f"unknown attack {name!r}; expected one of {sorted(_REGISTRY)}") from None


def names() -> list[str]:
    return sorted(_REGISTRY)


def all_attacks() -> list[AttackInfo]:
    return [_REGISTRY[n] for n in names()]


def parse_params(name: str, raw: dict) -> AttackParams:
    """Validate an attack's parameters; errors name the offending key."""
    info = get(name)
    try:
        return info.params(**raw)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "?"
        raise ValueError(f"attacks[{name}].{loc}: {err['msg']}") from None


def references_used(name: str, params: AttackParams, available: int) -> int:
    """How many references a row uses: as asked, else all available up to the attack's maximum."""
    if params.references is not None:
        return params.references
    info = get(name)
    return available if info.max_references is None else min(available, info.max_references)


def run(name: str, inputs: AttackInputs, params: AttackParams) -> AttackResult:
    """Check requirements on the sliced inputs and run the attack."""
    info = get(name)
    sliced = inputs.first(references_used(name, params, inputs.n_references))
    info.check(sliced, params)
    result = info.fn(sliced, params)
    n = sliced.queries.labels.shape[0]
    if result.scores.shape != (n,):
        raise RuntimeError(f"{name} returned scores of shape {result.scores.shape}, expected ({n},)")
    return result
