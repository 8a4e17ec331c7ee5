"""results.json's ``dp_audit``: a differential-privacy audit's bounds and verdict, built by ``miaudit.dp``
(``dp.audit``, ``dp.verdict``, ``dp.multi_run``) and rendered by ``report.dp_section``. Three kinds share it:
``two-run`` (a run's ``dp_audit:``), ``one-run`` (``miaudit dp-audit``, canaries) and ``multi-run``
(``dp-audit --runs R``)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, JsonValue

from .answer import Answer
from .base import Number, Section


class CraftedCanaries(Section):
    """The multi-run audit's worst-case canaries and the read-out that learns them (``dp.worst_case``)."""

    model: str
    """what is trained: a linear read-out of the canary features, not the config's architecture"""
    feature: Number
    """the feature value where a record equals a canary's input"""
    canaries_per_run: int
    """canaries in each run"""
    canary_values: list[Number]
    """each canary's constant input value"""
    labels: list[int]
    """each canary's label"""
    start: str
    """the parameters every run starts from"""


class Bound(Section):
    """One epsilon lower bound: an observer's guesses on its canaries (or the runs), one analysis."""

    analysis: str
    """binomial (epsilon-DP), fdp (f-DP) or multi-run (the two-run bound over runs)"""
    epsilon_lower_bound: Number
    """the target is not (epsilon, delta)-DP for any epsilon below this, with probability confidence"""
    max_attainable: Number
    """the bound had every guess been right: the most this audit could show"""
    confidence: Number
    """the probability the bound holds"""
    delta: Number
    """the delta of (epsilon, delta)-DP the bound is for"""
    guesses: int
    """guesses made (the observer abstains on the rest)"""
    correct: int
    """guesses right"""
    canaries: int | None = None
    """canaries planted"""
    threat_model: str | None = None
    """white-box (every noisy update) or black-box (the final model's outputs): the dp_audit's ``observers`` say what
    each sees and is blind to"""
    canary_kind: str | None = None
    """the kind of canary the observer scores"""
    observer: str | None = None
    """what the observer scores"""
    included: int | None = None
    """canaries (or runs) trained with, each by a fair coin: the truth the guesses are scored against"""
    runs: int | None = None
    """multi-run: the runs the guesses are over"""
    source: str | None = None
    """the paper and theorem the bound comes from"""
    assumes: str | None = None
    """what the bound assumes beyond DP"""
    # multi-run
    audits: str | None = None
    """multi-run: the threat model the runs audit (the worst case: crafted start and canaries)"""
    start: str | None = None
    """multi-run: where every run's parameters start"""
    worst_case: CraftedCanaries | None = None
    """multi-run: the crafted canaries and read-out"""
    expected_ideal: Number | None = None
    """multi-run: the bound the ideal black-box observer of this DP-SGD expects"""
    threshold: Number | None = None
    """multi-run two-run bound: member when the score is at least this (chosen on a seeded half)"""
    tpr: Number | None = None
    """multi-run two-run bound: the TPR at that threshold on the other half"""
    fpr: Number | None = None
    """multi-run two-run bound: the FPR there"""


class ObserverTest(Section):
    """An observer's test of the claimed epsilon (its binomial bound), Holm-adjusted over the observers."""

    observer: str
    """what the observer scores"""
    threat_model: str
    """white-box or black-box"""
    p_value: Number
    """the p-value of the claimed epsilon given its guesses (epsilon 0 without a claim)"""
    holm_adjusted_p_value: Number
    """its Holm-adjusted p-value over the observers"""
    rejected: bool
    """whether the adjusted p-value is at most 1 - confidence"""
    bonferroni_bound: Number
    """its binomial epsilon lower bound, Bonferroni-corrected over observers"""
    bonferroni_max_attainable: Number
    """that bound had every guess been right"""
    correct: int
    """guesses right"""
    guesses: int
    """guesses made"""
    canaries: int
    """canaries planted"""


class Observer(Section):
    sees: str
    """what of a training run this observer can see"""
    blind_to: str
    """what it cannot, so what its bound cannot catch"""


class Family(Section):
    method: str
    """how the family-wise error over the observers is controlled"""
    observers: int | None = None
    """observers in the family"""
    alpha: Number | None = None
    """the family-wise error level, 1 - confidence"""


class GDPTest(Section):
    """The f-DP bound's mu-GDP test, with what it assumes."""

    statement: str
    """the test's outcome in one sentence"""
    claim: str | None = None
    """the mu-GDP claim tested (the Gaussian mechanism at the claimed epsilon)"""
    rejected: bool | None = None
    """whether any f-DP observer rejects it"""
    bonferroni_bounds: dict[str, Number] | None = None
    """observer -> its f-DP epsilon lower bound, Bonferroni-corrected over the f-DP observers"""
    assumes: str | None = None
    """what the f-DP analysis assumes"""


class Headline(Section):
    """Whose bound the verdict reads."""

    observer: str
    """what the observer scores"""
    threat_model: str
    """white-box or black-box"""
    analysis: str
    """binomial, fdp or multi-run"""
    correction: str | None = None
    """one-run: how the bound is corrected over the observers"""
    canary_kind: str | None = None
    """multi-run: the kind of canary"""


class ComparedWith(Section):
    claim: str
    """whose epsilon it is: "declared", or an accountant's ("accounted (RDP)") figure"""
    epsilon: Number
    """the smallest epsilon claimed for the target, which the audit tests"""


class SelectionRecords(Section):
    members: int
    """members in the half that chose the threshold (0: threshold given)"""
    nonmembers: int
    """non-members in that half"""


class Defect(Section):
    """A defect of a user's DP training run seen directly (``dp.structural``): no statistics, any claimed epsilon."""

    kind: str
    """private_buffers, unprotected_parameters, optimizer_never_stepped, steps_outside_dp, accountant_mismatch,
    noiseless_updates or repeated_noise (docs/dp-pipeline.md)"""
    detail: str
    """what the run showed, and what to fix"""


class UserTraining(Section):
    """``dp_training``: whose code was audited (a user's DP training function, not miaudit's DP-SGD), what it was
    given, and what the audit could and could not see of it."""

    model_config = ConfigDict(extra="forbid")

    function: str
    """the audited training function, package.module:function (or the Python object's module:qualname)"""
    claimed_epsilon: Number
    """the epsilon the function's training claims"""
    claimed_delta: Number
    """the delta of that claim"""
    calls: int
    """times the audit called the function: the target once, and each reference it trains"""
    target_records: int
    """records the target was trained on: the training records and the canaries included by their coins"""
    canaries_inserted: int
    """canaries inserted into the target's training records (each by a fair coin); no other record was removed"""
    references_by: str
    """who trained the reference models: the function itself (on population records, never a canary), or
    miaudit's loop"""
    accountant: dict[str, Number] | None = None
    """what the function's accountant was told (noise_multiplier, sample_rate, steps), from the config or returned
    by the function, and the epsilon Opacus' accountants give for it"""
    white_box_steps: int | None = None
    """noisy steps the white-box gradient canaries joined (``miaudit.dp_observe(optimizer)`` in the function); 0: asked
    for (``canaries.gradient``) but never joined; absent: not asked for"""
    observed: str
    """what the audit saw of the training: the final model's outputs (black-box), and the noisy updates where the
    function joined its optimizer (white-box)"""
    not_observed: str
    """what it could not see, so which faults its verdict cannot speak to"""
    defects: list[Defect] = []
    """the defects the target's training run shows directly (``dp.structural``), each making ``violated`` true"""
    observed_sample_rate: Number | None = None
    """the sampling rate of the batches the DP optimizer joined by ``miaudit.dp_observe`` drew (noisy steps and the
    examples in them over the records given): the white-box observer scores at it"""


class DPAudit(Section):
    kind: Literal["two-run", "one-run", "multi-run"]
    """which audit produced the bound"""
    verdict: str
    """the verdict on the claimed epsilon in one sentence"""
    epsilon_lb: Number
    """the headline epsilon lower bound, holding with probability confidence"""
    confidence: Number
    """the probability the bounds hold"""
    delta: Number
    """the delta of (epsilon, delta)-DP the bounds are for"""
    violated: bool | None = None
    """whether the audit rejects the claimed epsilon"""
    bounds: list[Bound] | None = None
    """every bound: each observer and analysis"""
    tests: list[ObserverTest] | None = None
    """one-run: each observer's test of the claimed epsilon"""
    family: Family | None = None
    """how the error over the observers is controlled"""
    max_attainable: Number | None = None
    """the most the headline bound could show (its power)"""
    headline: Headline | None = None
    """whose bound the verdict reads (its observer, threat model and analysis)"""
    gdp_test: GDPTest | None = None
    """one-run: the f-DP test of the claim as mu-GDP"""
    observers: dict[str, Observer] | None = None
    """threat model -> what its observer sees"""
    declared_epsilon: Number | None = None
    """the epsilon the config declares for the target"""
    accounted_epsilon: Number | None = None
    """the RDP accountant's epsilon of the target's DP-SGD"""
    accounted: dict[str, Number] | None = None
    """accountant -> its epsilon (``training.dp_sgd``)"""
    planted_fault: dict[str, JsonValue] | None = None
    """a fault planted in DP-SGD on purpose, to show the audit catches it (``train.dp.planted_fault``: its kinds
    and description, as the DP-SGD options declare them)"""
    training: UserTraining | None = None
    """one-run of a user's function (``dp_training``): whose code was audited and what the audit could see"""
    compared_with: ComparedWith | None = None
    """the claim the bounds are tested against"""
    threat_model: str | None = None
    """multi-run: what its observer sees"""
    how: str | None = None
    """what the audit did, in words: the models trained, the guesses made and how many were right"""
    target_train_accuracy: Number | None = None
    """one-run: the target's accuracy on its real training records (not the canaries)"""
    target_test_accuracy: Number | None = None
    """one-run: its accuracy on held-out real records"""
    canary_accuracy_in: Number | None = None
    """one-run with input-space canaries: the target's accuracy on the canaries it trained with"""
    canary_accuracy_out: Number | None = None
    """one-run with input-space canaries: its accuracy on the canaries left out"""
    p_values: str | None = None
    """one-run with attacks: how the attacks' p-values on the canaries are (raw, and why)"""
    # two-run (a run's dp_audit: one attack's scores, threshold chosen on a seeded half)
    attack: str | None = None
    """the label of the attack whose scores give the bound"""
    selection: str | None = None
    """how the threshold was set: half (chosen on a seeded half) or fixed"""
    selection_records: SelectionRecords | None = None
    """the records that chose the threshold"""
    threshold: Number | None = None
    """member when the attack's score is at least this: set on the selection half (the largest lower bound there) or
    given"""
    realized_fpr: Number | None = None
    """the FPR on the records that evaluate the threshold"""
    tpr: Number | None = None
    """the TPR there"""
    tpr_lower: Number | None = None
    """the TPR's lower Clopper-Pearson end, at level (1 - confidence) / 2 (``dp.bounds``)"""
    fpr_upper: Number | None = None
    """the FPR's upper Clopper-Pearson end, at level (1 - confidence) / 2"""
    true_positives: int | None = None
    """members flagged among the records that evaluate the threshold"""
    n_members: int | None = None
    """members among them"""
    false_positives: int | None = None
    """non-members flagged among them"""
    n_nonmembers: int | None = None
    """non-members among them"""
    inequality: str | None = None
    """the DP inequality that gives the bound"""
    formula: str | None = None
    """how epsilon_lb follows from tpr_lower and fpr_upper"""
    source: str | None = None
    """the papers the bound comes from"""
    assumes: str | None = None
    """what the bound assumes beyond DP"""
    answer: Answer | None = None
    """the answer in the shape every audit ends in (verdict word, statistic, p-value, summary, detail:
    ``results.answer``); absent in files written before it"""

    @property
    def audits_canaries(self) -> bool:
        """A one-run or multi-run audit (``miaudit dp-audit``): its queries are canaries."""
        return self.kind in ("one-run", "multi-run")
