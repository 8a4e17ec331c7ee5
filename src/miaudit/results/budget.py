"""results.json's ``reference_budget``: what ``references: {budget: B}`` bought (the design miaudit chose), what it
cost in the budget's unit (parameters x examples seen, over the target's) and in measured training seconds."""

from __future__ import annotations

from .base import Count, Number, Section


class BudgetDesign(Section):
    """How the references were trained for the budget (``config.budget.choose`` and ``experiment.budget``)."""

    count: Count
    """reference models"""
    epochs: Count
    """passes over its training records, each reference"""
    records: Count
    """training records, each reference"""
    batch_size: Count
    """records per SGD step, each reference"""
    architecture: str
    """the references' architecture (the target's family)"""
    parameters: Count
    """trainable parameters, each reference"""
    target_epochs: Count
    """the target's passes over its training records"""
    target_records: Count
    """the target's training records"""
    target_parameters: Count
    """the target's trainable parameters"""
    rule: str
    """the design rule, in words, and the benchmark it comes from"""

    def describe(self, budget: float, cost_ratio: float) -> str:
        """The design in one sentence (report.md, the start line, ``miaudit plan``)."""
        narrower = "" if self.parameters == self.target_parameters else f" of {self.parameters:,} parameters"
        return (
            f"references: {{budget: {budget:g}}} buys {self.count} {self.architecture} reference model(s){narrower}, "
            f"each trained on {self.records} records for {self.epochs} epochs in batches of {self.batch_size} (the "
            f"target: {self.target_records} records, {self.target_epochs} epochs): cost ratio {cost_ratio:.2f}"
        )


class ReferenceBudget(Section):
    """``references: {budget: B}``: the references' training cost at most B times the target's."""

    budget: Number
    """B, as asked"""
    cost_ratio: Number
    """the references' cost over the target's: sum over references of parameters x records x epochs, over the
    target's (at most ``budget``)"""
    reference_seconds: Number
    """measured wall-clock training seconds, summed over the references (as stored when reused from the cache)"""
    target_seconds: Number
    """the target's measured training seconds"""
    design: BudgetDesign
    """what the budget bought"""

    def sentence(self) -> str:
        return (
            f"{self.design.describe(self.budget, self.cost_ratio)}; trained in {self.reference_seconds:.1f} s "
            f"against the target's {self.target_seconds:.1f} s"
        )
