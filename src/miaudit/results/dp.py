"""results.json's ``dp_audit``: a differential-privacy audit's bounds and verdict, built by ``miaudit.dp``
(``dp.audit``, ``dp.verdict``, ``dp.multi_run``) and rendered by ``report.dp_section``. Three kinds share it:
``two-run`` (a run's ``dp_audit:``), ``one-run`` (``miaudit dp-audit``, canaries) and ``multi-run``
(``dp-audit --runs R``)."""

from __future__ import annotations

from typing import Any, Literal

from .base import Number, Section


class Bound(Section):
    """One epsilon lower bound: an observer's guesses on its canaries (or the runs), one analysis."""

    analysis: str  # binomial | fdp | ...
    epsilon_lower_bound: Number
    max_attainable: Number
    confidence: Number
    delta: Number
    observer: str | None = None
    canary_kind: str | None = None
    threat_model: Literal["black-box", "white-box"] | None = None
    canaries: int | None = None  # multi-run: the trained models
    included: int | None = None
    runs: int | None = None
    guesses: int
    correct: int
    source: str | None = None
    assumes: str | None = None


class ObserverTest(Section):
    """An observer's test of the claimed epsilon (its binomial bound), Holm-adjusted over the observers."""

    observer: str
    threat_model: str
    p_value: Number
    holm_adjusted_p_value: Number
    rejected: bool
    bonferroni_bound: Number
    bonferroni_max_attainable: Number
    correct: int
    guesses: int
    canaries: int


class Observer(Section):
    sees: str
    blind_to: str


class Family(Section):
    method: str
    observers: int | None = None
    alpha: Number | None = None


class GDPTest(Section):
    """The f-DP bound's mu-GDP test, with what it assumes."""

    statement: str
    claim: Any = None
    rejected: bool | None = None
    assumes: str | None = None


class ComparedWith(Section):
    claim: str
    epsilon: Number


class SelectionRecords(Section):
    members: int
    nonmembers: int


class DPAudit(Section):
    kind: Literal["two-run", "one-run", "multi-run"]
    verdict: str
    epsilon_lb: Number
    confidence: Number
    delta: Number
    violated: bool | None = None
    bounds: list[Bound] | None = None
    tests: list[ObserverTest] | None = None
    family: Family | None = None
    max_attainable: Number | None = None
    headline: dict[str, Any] | None = None  # whose bound the verdict reads
    gdp_test: GDPTest | None = None
    observers: dict[str, Observer] | None = None  # threat model -> what it sees
    declared_epsilon: Number | None = None
    accounted_epsilon: Number | None = None
    accounted: dict[str, Number] | None = None  # accountant -> epsilon
    planted_fault: dict[str, Any] | None = None
    compared_with: ComparedWith | None = None
    threat_model: str | None = None
    how: str | None = None
    target_train_accuracy: Number | None = None
    target_test_accuracy: Number | None = None
    # two-run (a run's dp_audit: one attack's scores, threshold chosen on a seeded half)
    attack: str | None = None
    selection: str | None = None
    selection_records: SelectionRecords | None = None
    threshold: Number | None = None
    realized_fpr: Number | None = None
    tpr: Number | None = None
    tpr_lower: Number | None = None
    fpr_upper: Number | None = None
    formula: str | None = None
    source: str | None = None
    assumes: str | None = None

    @property
    def audits_canaries(self) -> bool:
        """A one-run or multi-run audit (``miaudit dp-audit``): its queries are canaries."""
        return self.kind in ("one-run", "multi-run")
