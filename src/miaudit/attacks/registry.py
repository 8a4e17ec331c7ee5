"""The attack registry: one place that knows every attack's name, parameters and needs.

An attack is a pure function ``fn(inputs, params) -> AttackResult`` registered with
``@register(name, params=..., ...)`` in a module of this package. Pipelines run
attacks through a ``Plan`` (``miaudit.attack_plan``), which checks every requirement once,
before any work; ``score`` runs one attack on arrays you hold, with the same checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import AttackRequirementError
from ..registries import Registry
from ._lm_posterior import is_lm
from .base import AttackInputs, AttackParams, AttackResult

AttackFn = Callable[[Any, Any], AttackResult]  # (AttackInputs, the attack's own AttackParams subclass)
Need = Literal["population", "validation", "models", "last-layer", "x", "labels"]
# "last-layer": a classifier's penultimate features(x) and linear head (GLS's leverage); every model miaudit builds or
# a user brings has them but a causal language model, whose output layer is a vocabulary (plan.target_output)
NEED_WORDS = {"last-layer": "a classifier's penultimate features and linear head; a causal language model has neither"}
# "test": a membership test (its scores tell members from non-members: the attack table, the verdict, PPV);
# "ranking": a per-record risk ranking (e.g. GLS: exposure from the target alone, not a test: its own section)
Kind = Literal["test", "ranking"]
# what a target can answer (config.endpoint.OutputMode); a weights or logits audit has "logits"
LOGIT_OUTPUTS = ("logits", "probabilities", "top-k")  # read as logits (endpoint.outputs: the conversions)
ALL_OUTPUTS = (*LOGIT_OUTPUTS, "label")


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
    outputs: tuple[str, ...] = LOGIT_OUTPUTS  # the target output modes it runs on (an endpoint's ``output``)
    queries_per_record: str = ""  # label-only attacks: the parameters that set the endpoint queries per record
    # returns one-sided p-values (a hypothesis test): in every mode it runs (True), or in the modes named (an attack
    # that is a test in one mode and a likelihood ratio in the other); ``pvalue_modes`` reads it
    pvalues: bool | tuple[str, ...] = False
    kind: Kind = "test"
    warmup: Callable[[], None] | None = None  # one-time setup (heavy imports) kept out of the attack's timing
    # the attack's own guard: why it cannot be trusted on these inputs (a warning it would give), or None; attacks:
    # auto never chooses a candidate its guard flags on the target's inputs (membership.choice)
    guard: Callable[[AttackInputs, Any], str | None] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("test", "ranking"):
            raise RuntimeError(f"attack {self.name!r}: kind {self.kind!r} is not test or ranking")
        if self.kind == "ranking" and self.pvalue_modes:
            raise RuntimeError(f"attack {self.name!r}: a risk ranking returns no p-values (pvalues=True)")
        if not isinstance(self.pvalues, bool) and not set(self.pvalues) <= set(self.modes):
            raise RuntimeError(f"attack {self.name!r}: p-values in modes {self.pvalues} it does not run in")

    @property
    def pvalue_modes(self) -> tuple[str, ...]:
        """The modes in which it returns one-sided p-values (a hypothesis test), which the run then calibrates."""
        if isinstance(self.pvalues, bool):
            return self.modes if self.pvalues else ()
        return tuple(m for m in self.modes if m in self.pvalues)

    def pvalues_in(self, mode: str) -> bool:
        """Returns p-values when run in ``mode``."""
        return mode in self.pvalue_modes

    @property
    def pvalues_said(self) -> str:
        """Whether it returns p-values, in words: yes, no, or in which mode only (help and docs)."""
        modes = self.pvalue_modes
        return "no" if not modes else "yes" if modes == self.modes else f"{'/'.join(modes)} only"

    @property
    def is_ranking(self) -> bool:
        """A per-record risk ranking, not a membership test: out of the attack table, the verdict and PPV."""
        return self.kind == "ranking"

    @property
    def needs_models(self) -> bool:
        """Reads the models themselves (weights, features), not only their outputs: a scores-only audit cannot
        run it."""
        return "models" in self.needs

    @property
    def uses_references(self) -> bool:
        """Can use reference models (``max_references`` is not 0)."""
        return self.max_references != 0

    @property
    def offline(self) -> bool:
        """Runs in offline mode (references never trained on the audited records)."""
        return "offline" in self.modes

    def references_used(self, params: AttackParams, available: int) -> int:
        """How many references a row uses: as asked, else all available up to the attack's maximum."""
        if params.references is not None:
            return params.references
        return available if self.max_references is None else min(available, self.max_references)

    def check(self, k: int, mode: str, provided: set[str], output: str = "logits") -> None:
        """Raise AttackRequirementError (one line) when run outside its assumptions: with k references,
        in ``mode``, given the optional inputs named in ``provided``, on a target answering ``output``."""
        if output not in self.outputs:
            others = ", ".join(a.name for a in all_attacks() if output in a.outputs) or "none"
            raise AttackRequirementError(
                f"{self.name}: reads the target's {'/'.join(o for o in self.outputs if o != 'label')}; the endpoint "
                f"answers output: {output} only; attacks that run on {output}: {others}"
            )
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
        missing = sorted(self.needs - set(provided), key=lambda n: (n in NEED_WORDS, n))  # models before its last layer
        if missing:
            words = NEED_WORDS.get(missing[0], f"{missing[0]} inputs, which this run did not provide")
            raise AttackRequirementError(f"{self.name}: needs {words}")


_REGISTRY: Registry[AttackInfo] = Registry("attack")


def register(name: str, *, params: type[AttackParams] = AttackParams, **info: Any) -> Callable[[AttackFn], AttackFn]:
    """Decorator adding an attack function to the registry under ``name``; the first line of its
    docstring is the one-line summary ``miaudit attacks`` shows."""

    def wrap(fn: AttackFn) -> AttackFn:
        summary = (fn.__doc__ or name).strip().splitlines()[0].rstrip(".")
        _REGISTRY.add(name, AttackInfo(name=name, fn=fn, params=params, summary=summary, **info))
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


def is_ranking(name: str) -> bool:
    """Whether attack ``name`` is a risk ranking rather than a membership test (an unknown name, e.g. a row of an
    older results.json, is a test)."""
    return name.lower() in _REGISTRY and _REGISTRY[name.lower()].is_ranking


def rankings() -> list[str]:
    """The registered risk rankings, by name."""
    return [a.name for a in all_attacks() if a.is_ranking]


def provided_by(inputs: AttackInputs) -> set[str]:
    """The optional inputs an ``AttackInputs`` holds, by the names attacks declare in ``needs``."""
    parts = {
        "population": inputs.population,
        "validation": inputs.validation,
        "models": inputs.models,
        "labels": inputs.labels,
    }
    have = {name for name, part in parts.items() if part is not None}
    last_layer = {"last-layer"} if inputs.models is not None and not is_lm(inputs.models) else set()
    return have | last_layer | ({"x"} if inputs.queries.x is not None else set())


def execute(info: AttackInfo, params: AttackParams, references: int, inputs: AttackInputs) -> AttackResult:
    """Run a planned attack on the first ``references`` reference models (its requirements were checked
    when it was planned) and check the shape of what it returns."""
    try:
        result = info.fn(inputs.first(references), params)
    except AttackRequirementError as e:  # name the attack in what a shared helper (inputs.require) raised
        raise e if str(e).startswith(f"{info.name}:") else AttackRequirementError(f"{info.name}: {e}") from None
    n = inputs.queries.labels.shape[0]
    if result.scores.shape != (n,):
        raise RuntimeError(f"{info.name} returned scores of shape {result.scores.shape}, expected ({n},)")
    return result


def score(name: str, inputs: AttackInputs, **params: Any) -> AttackResult:
    """One attack on arrays you hold: its parameters validated, its requirements checked against
    ``inputs``, then run. Errors are one-line ``ValueError`` subclasses."""
    info = get(name)
    parsed = info.params(**params)
    k = info.references_used(parsed, inputs.n_references)
    if k > inputs.n_references:
        raise AttackRequirementError(f"references: {k} requested but only {inputs.n_references} were given")
    info.check(k, inputs.mode, provided_by(inputs))
    return execute(info, parsed, k, inputs)
