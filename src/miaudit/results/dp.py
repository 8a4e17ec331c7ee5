"""results.json's ``dp_audit``: a differential-privacy audit's bounds and verdict, built by ``miaudit.dp``
(``dp.audit``, ``dp.verdict``, ``dp.multi_run``) and rendered by ``report.dp_section``. Three kinds share it:
``two-run`` (a run's ``dp_audit:``), ``one-run`` (``miaudit dp-audit``, canaries) and ``multi-run``
(``dp-audit --runs R``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import Number, Section


class Bound(Section):
    """One epsilon lower bound: an observer's guesses on its canaries (or the runs), one analysis."""

    analysis: str = Field(description="binomial (epsilon-DP), fdp (f-DP) or multi-run (the two-run bound over runs)")
    epsilon_lower_bound: Number = Field(description="the epsilon lower bound, holding with probability confidence")
    max_attainable: Number = Field(description="the bound had every guess been right: the most this audit could show")
    confidence: Number = Field(description="the probability the bound holds")
    delta: Number = Field(description="the delta of (epsilon, delta)-DP the bound is for")
    guesses: int = Field(description="guesses made (the observer abstains on the rest)")
    correct: int = Field(description="guesses right")
    canaries: int | None = Field(None, description="canaries planted")
    threat_model: str | None = Field(None, description="white-box or black-box: what the observer sees")
    canary_kind: str | None = Field(None, description="the kind of canary the observer scores")
    observer: str | None = Field(None, description="what the observer scores")
    included: int | None = Field(None, description="canaries (or runs) trained with, by fair coins")
    runs: int | None = Field(None, description="multi-run: the runs the guesses are over")
    source: str | None = Field(None, description="the paper and theorem the bound comes from")
    assumes: str | None = Field(None, description="what the bound assumes beyond DP")


class ObserverTest(Section):
    """An observer's test of the claimed epsilon (its binomial bound), Holm-adjusted over the observers."""

    observer: str = Field(description="what the observer scores")
    threat_model: str = Field(description="white-box or black-box")
    p_value: Number = Field(
        description="the p-value of the claimed epsilon given its guesses (epsilon 0 without a claim)"
    )
    holm_adjusted_p_value: Number = Field(description="its Holm-adjusted p-value over the observers")
    rejected: bool = Field(description="whether the adjusted p-value is at most 1 - confidence")
    bonferroni_bound: Number = Field(
        description="its binomial epsilon lower bound, Bonferroni-corrected over observers"
    )
    bonferroni_max_attainable: Number = Field(description="that bound had every guess been right")
    correct: int = Field(description="guesses right")
    guesses: int = Field(description="guesses made")
    canaries: int = Field(description="canaries planted")


class Observer(Section):
    sees: str = Field(description="what of a training run this observer can see")
    blind_to: str = Field(description="what it cannot, so what its bound cannot catch")


class Family(Section):
    method: str = Field(description="how the family-wise error over the observers is controlled")
    observers: int | None = Field(None, description="observers in the family")
    alpha: Number | None = Field(None, description="the family-wise error level, 1 - confidence")


class GDPTest(Section):
    """The f-DP bound's mu-GDP test, with what it assumes."""

    statement: str = Field(description="the test's outcome in one sentence")
    claim: Any = Field(None, description="the mu-GDP claim tested (the Gaussian mechanism at the claimed epsilon)")
    rejected: bool | None = Field(None, description="whether any f-DP observer rejects it")
    assumes: str | None = Field(None, description="what the f-DP analysis assumes")


class ComparedWith(Section):
    claim: str = Field(description='whose epsilon: "declared" or an accountant\'s ("accounted (RDP)")')
    epsilon: Number = Field(description="the smallest epsilon claimed for the target, which the audit tests")


class SelectionRecords(Section):
    members: int = Field(description="members in the half that chose the threshold (0: threshold given)")
    nonmembers: int = Field(description="non-members in that half")


class DPAudit(Section):
    kind: Literal["two-run", "one-run", "multi-run"] = Field(description="which audit produced the bound")
    verdict: str = Field(description="the verdict on the claimed epsilon in one sentence")
    epsilon_lb: Number = Field(description="the headline epsilon lower bound, holding with probability confidence")
    confidence: Number = Field(description="the probability the bounds hold")
    delta: Number = Field(description="the delta of (epsilon, delta)-DP the bounds are for")
    violated: bool | None = Field(None, description="whether the audit rejects the claimed epsilon")
    bounds: list[Bound] | None = Field(None, description="every bound: each observer and analysis")
    tests: list[ObserverTest] | None = Field(None, description="one-run: each observer's test of the claimed epsilon")
    family: Family | None = Field(None, description="how the error over the observers is controlled")
    max_attainable: Number | None = Field(None, description="the most the headline bound could show (its power)")
    headline: dict[str, Any] | None = Field(None, description="whose bound the verdict reads: observer, analysis")
    gdp_test: GDPTest | None = Field(None, description="one-run: the f-DP test of the claim as mu-GDP")
    observers: dict[str, Observer] | None = Field(None, description="threat model -> what its observer sees")
    declared_epsilon: Number | None = Field(None, description="the epsilon the config declares for the target")
    accounted_epsilon: Number | None = Field(None, description="the RDP accountant's epsilon of the target's DP-SGD")
    accounted: dict[str, Number] | None = Field(None, description="accountant -> its epsilon (``training.dp_sgd``)")
    planted_fault: dict[str, Any] | None = Field(
        None, description="a fault planted in DP-SGD on purpose, to show the audit catches it"
    )
    compared_with: ComparedWith | None = Field(None, description="the claim the bounds are tested against")
    threat_model: str | None = Field(None, description="multi-run: what its observer sees")
    how: str | None = Field(None, description="what the audit did, in words")
    target_train_accuracy: Number | None = Field(
        None, description="one-run: the target's accuracy on its real training records (not the canaries)"
    )
    target_test_accuracy: Number | None = Field(None, description="one-run: its accuracy on held-out real records")
    # two-run (a run's dp_audit: one attack's scores, threshold chosen on a seeded half)
    attack: str | None = Field(None, description="the label of the attack whose scores give the bound")
    selection: str | None = Field(
        None, description="how the threshold was set: half (chosen on a seeded half) or fixed"
    )
    selection_records: SelectionRecords | None = Field(None, description="the records that chose the threshold")
    threshold: Number | None = Field(None, description="member when the score is at least this")
    realized_fpr: Number | None = Field(None, description="the FPR on the records that evaluate the threshold")
    tpr: Number | None = Field(None, description="the TPR there")
    tpr_lower: Number | None = Field(None, description="the TPR's lower Clopper-Pearson end")
    fpr_upper: Number | None = Field(None, description="the FPR's upper Clopper-Pearson end")
    formula: str | None = Field(None, description="how epsilon_lb follows from tpr_lower and fpr_upper")
    source: str | None = Field(None, description="the papers the bound comes from")
    assumes: str | None = Field(None, description="what the bound assumes beyond DP")

    @property
    def audits_canaries(self) -> bool:
        """A one-run or multi-run audit (``miaudit dp-audit``): its queries are canaries."""
        return self.kind in ("one-run", "multi-run")
