"""``references: {budget: B}`` on the split data: the design (``config.budget.choose``) rounded to the real counts
and priced in the budget's unit, parameters x examples seen (records x epochs), over the target's.

The rounding never goes above the budget: epochs and records are rounded down (at least one epoch and one batch of
records). The references' records are a seeded subset of the half of the pool ``reference_subsets`` gives each (a
random subset of the pool, as any record is equally likely), so their training sets stay independent draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..config.budget import Design, choose
from ..config.run import RunConfig
from ..data import Dataset, Split
from ..results.budget import BudgetDesign, ReferenceBudget
from .base import Experiment
from .recipes import ModelRecipe, builtin_recipe


@dataclass(frozen=True)
class Priced:
    """A design on real counts (``bought``: each reference's epochs, records, batch size and parameters, beside the
    target's)."""

    design: Design
    bought: BudgetDesign

    @property
    def cost_ratio(self) -> float:
        """The references' parameters x examples seen over the target's."""
        b = self.bought
        return (
            b.count * b.parameters * b.records * b.epochs / (b.target_parameters * b.target_records * b.target_epochs)
        )

    def sentence(self) -> str:
        """The design in words, before training (the start line, ``miaudit plan``)."""
        return self.bought.describe(self.design.budget, self.cost_ratio)


@cache
def _parameters(arch: str, input_shape: tuple[int, ...], n_classes: int) -> int:
    from ..models import build_model

    return sum(p.numel() for p in build_model(arch, input_shape, n_classes).parameters() if p.requires_grad)


def price(cfg: RunConfig, ds: Dataset, split: Split) -> Priced:
    """The budget's design on this split: every reference on at most its half of the population (``records``), for
    at most the target's epochs, cut so that the references' cost stays within the budget."""
    assert cfg.reference_budget is not None  # the caller prices a budgeted run only
    design = choose(cfg.reference_budget, cfg.reference_architecture)
    shape, classes = tuple(ds.input_shape), ds.n_classes
    p_ref = _parameters(cfg.reference_architecture, shape, classes)
    p_target = _parameters(cfg.target_architecture, shape, classes)
    n_target, e_target = len(split.members), cfg.train.epochs
    allowed = design.per_reference * p_target * n_target * e_target / p_ref  # examples seen, each reference
    half = len(split.population) // 2
    records = min(half, max(1, math.floor(design.records_share * half)))
    epochs = min(e_target, max(1, math.floor(design.epochs_share * e_target)), max(1, math.floor(allowed / records)))
    records = min(records, max(1, math.floor(allowed / epochs)))
    batch = max(1, round(design.batch_share * cfg.train.batch_size))
    bought = BudgetDesign(count=design.count, epochs=epochs, records=records, batch_size=batch,
                          architecture=cfg.reference_architecture, parameters=p_ref, target_epochs=e_target,
                          target_records=n_target, target_parameters=p_target, rule=design.rule)  # fmt: skip
    return Priced(design, bought)


def reference_recipe(cfg: RunConfig, ds: Dataset, priced: Priced) -> ModelRecipe:
    """The references' recipe for the budget: the target's training with the design's epochs and batch size."""
    train = cfg.train.revised(epochs=priced.bought.epochs, batch_size=priced.bought.batch_size)
    return builtin_recipe(cfg.revised(train=train), ds, cfg.reference_architecture)


def thinned(masks: np.ndarray, records: int, seed: int) -> np.ndarray:
    """Each reference's training records cut to ``records``: a seeded subset of its row (rows unchanged where they
    hold no more)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xB4D]))
    out = masks.copy()
    for row in out:
        on = np.flatnonzero(row)
        if len(on) > records:
            row[rng.choice(on, size=len(on) - records, replace=False)] = False
    return out


def section(exp: Experiment) -> ReferenceBudget | None:
    """results.json's ``reference_budget``: the budget, its cost and the measured seconds (None: no budget)."""
    cfg = exp.cfg
    if not isinstance(cfg, RunConfig) or cfg.reference_budget is None:
        return None
    priced, target, references = price(cfg, exp.dataset, exp.split), exp.target, exp.references
    return ReferenceBudget(
        budget=cfg.reference_budget.budget,
        cost_ratio=priced.cost_ratio,
        reference_seconds=float(sum(r.seconds for r in references)),
        target_seconds=float(target.seconds),
        design=priced.bought,
    )
