"""results.json's ``dataset_inference``: whether a suspect set of records was used to train the model
(``miaudit infer-dataset``), typed. Built by ``miaudit.dataset_inference``; read by the reports."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from .answer import Answer
from .base import Interval, Number, Section

_STRICT = ConfigDict(extra="forbid")
WIDE = 0.5  # a fraction's interval wider than this says nothing useful of how much was used, and is said so (the
# verdict by ``dataset_inference.infer``, the power line by ``report.inference``: one rule, here below both)


class FractionUsed(Section):
    """How much of the suspect set the model trained on."""

    model_config = _STRICT
    estimate: Number
    """the estimated fraction of the suspect records used, in [0, 1]"""
    ci: Interval
    """its 95% bootstrap interval"""
    member_auc: Number
    """the AUC of known members against non-members on the references as pseudo-targets: how far a used record
    stands out, which scales the estimate"""
    suspect_auc: Number
    """the AUC of the suspects against the validation records on the same score"""

    @property
    def wide(self) -> bool:
        """Whether the interval is wider than ``WIDE``: it says nothing useful of how much was used."""
        return self.ci[1] - self.ci[0] > WIDE


class BlindTest(Section):
    """The blind guard: a classifier on the records alone (never the model) telling suspect from validation."""

    model_config = _STRICT
    auc: Number
    """its cross-validated AUC (0.5: the records alone cannot tell the sets apart)"""
    ci: Interval
    """DeLong's 95% interval of that AUC"""
    shifted: bool
    """whether the interval lies above 0.5: the sets differ without the model, and no claim is made"""
    classifier: str
    """what the classifier was and what it saw"""


class ReferenceTest(Section):
    """The reference guard: the reference models, which saw neither set, telling suspect from validation records."""

    model_config = _STRICT
    auc: Number
    """the AUC of the suspects against the validation records on the references' mean signals (0.5: the
    references see no difference)"""
    ci: Interval
    """DeLong's 95% interval of that AUC"""
    shifted: bool
    """whether the interval excludes 0.5 (either side): the sets differ in the eyes of models that never trained on
    them (how easy the records are, their classes), and no claim is made"""


class InferencePower(Section):
    """What the test can see, from the leak measured before the suspects' answer."""

    model_config = _STRICT
    basis: Literal["references", "unmeasured"]
    """where the per-record effect comes from: known members of the references as pseudo-targets; ``unmeasured``
    without references to measure it on (``unmeasured_because`` says why), and then no power figure is given"""
    unmeasured_because: str | None = None
    """why the effect could not be measured (no reference models; references trained on some of the records)"""
    member_auc: Number | None
    """the per-record effect: the AUC of a used record against an unused one"""
    power: Number
    """the power the figures below are for"""
    smallest_suspect_set: int | None
    """the fewest suspect records, all used, that the test detects with that power against this validation set;
    None: no number would (too little leak for this many validation records)"""
    detectable_fraction: Number | None
    """the smallest fraction of a suspect set of this size whose use the test detects with that power; None:
    not even the whole set"""
    power_if_all_used: Number | None
    """the chance of a "used" verdict if every suspect record had been used"""


class DatasetInference(Section):
    """Was the suspect set used to train the model? The verdict, its p-value, the fraction used, the blind guard,
    the test's power and what the test assumes."""

    model_config = _STRICT
    verdict: str
    """the answer in one sentence"""
    used: bool | None
    """true: used (p below the level, ``direction`` > 0); false: no evidence of use (read with ``power``); null: no
    claim, a guard (blind or reference) found the sets different without the target's training"""
    p_value: Number
    """the permutation p-value of the one-sided test (the target treats the suspects more like its training
    records than the validation records, beyond what the references do)"""
    level: Number
    """the level the p-value is compared with"""
    auc: Number
    """the test statistic: the AUC of the suspects against the validation records on the fixed, calibrated score
    (0.5: no difference)"""
    direction: Number
    """``auc`` - 0.5: > 0 when the suspects look more like the target's members than the validation records do
    (schema version 5); "used" only when > 0"""
    calibrated: bool
    """whether the score was calibrated against reference models (false: none to calibrate with, and a selection
    of easier suspects is not told from use; schema version 5)"""
    permutations: int
    """the label permutations of the null distribution (the p-value is at least 1 / (1 + permutations))"""
    n_suspect: int
    """suspect records"""
    n_validation: int
    """validation records (of the same kind, known not used)"""
    features: list[str]
    """the per-record features combined"""
    fraction: FractionUsed | None = None
    """how much of the suspect set was used; None without references to measure a member's effect on, or when a
    guard fires"""
    at_least: Number | None = None
    """a one-sided 95% lower confidence bound on the fraction used that assumes nothing of how far a member stands
    out (no reference model: twice the score's AUC's one-sided lower bound, less 1, at least 0); None when a guard
    fires (schema version 4)"""
    blind: BlindTest
    """the blind guard"""
    references_guard: ReferenceTest | None = None
    """the reference guard; None without references (schema version 5)"""
    power: InferencePower
    """what the test can detect"""
    assumptions: list[str]
    """what the answer assumes, in words"""
    answer: Answer | None = None
    """the answer in the shape every audit ends in (verdict word, statistic, p-value, summary, detail:
    ``results.answer``); absent in files written before it"""
