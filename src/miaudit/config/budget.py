"""``references: {budget: B}``: the references' training may cost at most B times the target's, and miaudit chooses
how to spend it (``choose``: how many references, and how each trains). Light: no torch.

The cost unit is parameters x examples seen (records x epochs), summed over the references, over the target's
(``experiment/budget.py`` prices the real models once the data is split). ``references: K`` keeps its meaning: K
references trained as the target is. The design rule (``auto_design``) was fixed on development seeds before the
reporting runs of ``benchmarks/budget/`` (``budget_protocol.md``); what it buys is measured there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..strict import Strict
from .files import one_line

DesignName = Literal["auto", "full", "records", "epochs", "steps"]
DESIGNS: dict[str, str] = {  # how each design cuts a reference's cost to its share of the target's
    "full": "references trained as the target is (references: K, bought by the budget)",
    "records": "each reference on its share of its half of the population, for the target's epochs",
    "epochs": "each reference on its half of the population for its share of the target's epochs",
    "steps": "its share of the epochs with its share of the batch size: as many SGD steps as the target",
}


class ReferenceBudget(Strict):
    """``references: {budget: B}``: the references' training cost at most B times the target's."""

    budget: float = Field(gt=0, description="B > 0: the references' training cost over the target's (1: one target's)")
    design: DesignName = Field(
        default="auto", description="how the references spend it: auto (miaudit's choice), full, records, epochs, steps"
    )
    per_reference: float | None = Field(
        default=None, gt=0, le=1, description="each reference's share of the target's cost (default: the design's)"
    )


def _refused(given: object) -> ValueError:
    return ValueError(
        f"references.budget: expected a positive number (the references' training cost over the target's, e.g. "
        f"references: {{budget: 1}}), got {given!r}"
    )


def budget_of(given: object) -> ReferenceBudget:
    """A ``references: {budget: B, ...}`` mapping read; anything else is a one-line error naming the key
    (``references.budget`` for a budget that is not a positive number)."""
    if not isinstance(given, dict) or "budget" not in given:
        raise ValueError(
            "references.budget: expected references: K (a whole number) or references: {budget: B} (B > 0)"
        )
    b = given["budget"]
    if isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b) or b <= 0:
        raise _refused(b)
    try:
        return ReferenceBudget(**given)
    except ValidationError as e:
        raise ValueError(f"references.{one_line(e, ReferenceBudget)}") from None


@dataclass(frozen=True)
class Design:
    """What a budget buys, before the data is split: ``count`` references, each on ``records_share`` of its half of
    the population, for ``epochs_share`` of the target's epochs, with ``batch_share`` of its batch size
    (``experiment/budget.py`` rounds them to the real counts, never above the budget)."""

    budget: float
    name: str
    count: int
    records_share: float = 1.0
    epochs_share: float = 1.0
    batch_share: float = 1.0
    auto_for: str | None = None  # the references' architecture, where design: auto chose (None: the design asked)

    @property
    def per_reference(self) -> float:
        """Each reference's share of the target's cost."""
        return self.budget / self.count

    @property
    def rule(self) -> str:
        chosen = f"design auto for {self.auto_for} references: " if self.auto_for else ""
        return f"{chosen}{self.name}: {DESIGNS[self.name]} ({SOURCE})"


SOURCE = "benchmarks/budget/budget_table.md"
# design: auto, per reference architecture (SOURCE; budget_protocol.md): `steps` where it was measured best, the MLP
# (location and digits, development seeds 0-2; AG News on the reporting seeds), one or more references trained as the
# target (`full`) on any other, from the CIFAR-10 CNN (development seeds 0-2, the protocol's amendment of 2026-12-07)
AUTO_BY_ARCHITECTURE: dict[str, DesignName] = {"mlp": "steps"}
AUTO_OTHERWISE: DesignName = "full"
SHARE = {"full": 1.0, "records": 0.5, "epochs": 0.5, "steps": 0.5}  # each reference's share, by default
MAX_COUNT = 64


def auto_design(architecture: str, budget: float) -> DesignName:
    """``design: auto``'s design for references of ``architecture``: ``AUTO_BY_ARCHITECTURE``'s, else
    ``AUTO_OTHERWISE`` where the budget buys a whole reference (``steps`` below that)."""
    if architecture in AUTO_BY_ARCHITECTURE:
        return AUTO_BY_ARCHITECTURE[architecture]
    return AUTO_OTHERWISE if budget >= SHARE[AUTO_OTHERWISE] else "steps"


def choose(asked: ReferenceBudget, architecture: str) -> Design:
    """The design of a budget for references of ``architecture``: ``count`` references at ``share`` of the target's
    cost each, as many as fit (at least one: a budget below the share buys one reference at the budget)."""
    auto_for = architecture if asked.design == "auto" else None
    name = auto_design(architecture, asked.budget) if auto_for else asked.design
    share = asked.per_reference or SHARE[name]
    count = max(1, min(MAX_COUNT, math.floor(asked.budget / share + 1e-9)))
    each = min(1.0, asked.budget / count)
    if name == "full" and asked.budget < 1:
        raise ValueError(
            f"references.budget: design full buys whole references: a budget of at least 1, got {asked.budget:g}"
        )
    cut = {  # which of a reference's records, epochs and batch size each design cuts to its share
        "records": {"records_share": each},
        "epochs": {"epochs_share": each},
        "steps": {"epochs_share": each, "batch_share": each},
        "full": {},
    }
    return Design(asked.budget, name, count, auto_for=auto_for, **cut[name])


NOT_WITH = {  # keys a budget cannot price, and why (``check_budget``)
    "mode": "online references train on the queries: use mode: offline",
    "target": "it prices the references against a target miaudit trains",
    "reference_data": "it prices references on the target's population",
    "train.dp": "DP-SGD's cost is not priced: give references: K",
}


def check_budget(asked: ReferenceBudget | None, references: int, architecture: str, given: dict[str, bool]) -> None:
    """A run config's budget against its other keys: the design's count of references for the references'
    ``architecture`` (a config dumped by a run holds both), and none of the keys ``NOT_WITH`` names (``given``: key
    -> whether the config sets it)."""
    if asked is None:
        return
    bought = choose(asked, architecture).count
    if references != bought:
        raise ValueError(
            f"references: {{budget: {asked.budget:g}}} trains {bought} reference models, not {references}: give "
            "references: K or references: {budget: B}"
        )
    for key, why in NOT_WITH.items():
        if given.get(key):
            raise ValueError(f"references.budget: not with {key}: {why}")


def budget_shorthand(raw: object, default_model: str) -> object:
    """``references: {budget: B}`` read into ``reference_budget`` and the design's count of references (a run
    config's model validator, before its fields); a config dumped by a run (both keys) reads back the same."""
    if not isinstance(raw, dict):
        return raw
    architecture = reference_architecture(raw, default_model)
    given: Any = raw.get("references")
    if isinstance(given, dict):
        asked = budget_of(given)
        return {**raw, "references": choose(asked, architecture).count, "reference_budget": asked}
    stated = raw.get("reference_budget")
    if isinstance(stated, dict) and "references" not in raw:
        return {**raw, "references": choose(budget_of(stated), architecture).count}
    return raw


def reference_architecture(raw: dict, default_model: str) -> str:
    """The references' architecture a raw run config names (``reference_model``, else ``model``, else the run
    config's default); a name that is not a string is the run config's to refuse (priced as the default here)."""
    named = raw.get("reference_model") or raw.get("model") or default_model
    return named if isinstance(named, str) else default_model
