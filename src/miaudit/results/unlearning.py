"""results.json's ``unlearning`` section: did the forgotten records leave the model (``miaudit unlearn``)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from .answer import Answer
from .base import Interval, Number, Section


class UnlearningPart(Section):
    """A part of the unlearning section: unknown keys refused."""

    model_config = ConfigDict(extra="forbid")


class Estimate(UnlearningPart):
    """A figure with its interval and the null it rests on."""

    value: Number | None
    """the estimate; None where it cannot be computed"""
    interval: Interval | None = None
    """its 95% interval (bootstrap over the forget records, or Clopper-Pearson for a rate)"""
    null: str
    """the models or records the figure rests on"""


class Method(UnlearningPart):
    """How the unlearned model was made."""

    name: str
    """retrain, noop, finetune, gradient-ascent, neggrad-plus, random-label; unlearn_fn (the user's Python
    function) or given (the unlearned model came as a checkpoint)"""
    epochs: int | None = None
    """passes of the method (None: not an edit of the original)"""
    lr: Number | None = None
    """its learning rate"""
    seconds: Number | None = None
    """wall-clock seconds the unlearning took (None: not made by miaudit)"""
    label: str
    """the method with its hyperparameters, as the reports name it"""


class Accuracies(UnlearningPart):
    """One accuracy of the unlearned model beside the original's and the retrained models'."""

    unlearned: Number
    """the unlearned model's accuracy"""
    original: Number | None
    """the original model's (None: not at hand, the unlearned model was given)"""
    retrained_mean: Number
    """the mean accuracy of the models retrained on the retained records"""
    retrained_sd: Number
    """their standard deviation across seeds"""


class Utility(UnlearningPart):
    """What the unlearning cost the model."""

    retained: Accuracies
    """accuracy on the retained training records"""
    test: Accuracies
    """accuracy on records no model trained on (the target's test records)"""


class Exposure(UnlearningPart):
    """Retained records more exposed after unlearning."""

    count: int | None
    """retained records a population membership test (their signal against records no model saw, at 1% FPR)
    flags after unlearning but not before; None without the original model"""
    retrained_mean: Number | None
    """the same count for a model retrained on the retained records, on average: the count a perfect unlearning
    gives"""
    records: list[int]
    """the first 100 such records (indices into the data set)"""


class UnlearningSection(UnlearningPart):
    """Did the forgotten records leave the model: the set-level verdict, the records named in each direction, the
    attacks' AUCs of telling the unlearned model from retrained ones, utility and exposure."""

    verdict: Literal["verified", "not_forgotten", "over_forgotten", "no_claim"]
    """verified: the unlearned model scores the forgotten records, against unseen records of their labels, as
    models that never trained on them do; not_forgotten: higher (still remembered); over_forgotten: lower
    (forgotten harder than retraining would, or the model damaged: ``damaged``); no_claim: the retrained models
    themselves tell the forgotten records from the unseen ones (the forget set differs from them by its choice:
    nothing to conclude)"""
    sentence: str
    """the verdict in one sentence, as the reports lead with it"""
    p_value: Number
    """the two-sided p-value of the set-level test"""
    p_remembered: Number
    """its upper tail: the forgotten records score higher than unseen ones"""
    p_over_forgotten: Number
    """its lower tail"""
    level: Number
    """the level the verdict is taken at"""
    test: str
    """the set-level tests and the null each rests on"""
    p_records: Number
    """the record-level test's two-sided p-value (forgotten against unseen records)"""
    p_models: Number
    """the model-level test's (the unlearned model's forget-minus-unseen confidence gap against the retrained
    models')"""
    p_selection: Number | None = None
    """the selection guard's two-sided p-value: the retrained models' signal, forgotten against unseen records
    (no_claim at or below 0.01); None in files written before it existed"""
    compared: int | None = None
    """forgotten records compared (those whose label some unseen record has); None in older files"""
    damaged: bool | None = None
    """the unlearning damaged the model: on the test records it kept less than half of the retrained models'
    accuracy above a constant answer (then over_forgotten, for every record, not the forgotten ones in particular);
    None in older files"""
    utility_note: str | None = None
    """a sentence when the unlearned model is clearly less accurate than the retrained models (a cost of the
    unlearning on every record, not a verdict on the forgotten ones); None otherwise"""
    method: Method
    """how the unlearned model was made"""
    forget: list[int]
    """the forgotten records (indices into the data set)"""
    n_retained: int
    """the original training records left after forgetting"""
    n_unseen: int
    """records no model trained on: the per-record tests' calibration records"""
    fdr: Number
    """the FDR records are named at, in each direction (Benjamini-Hochberg on conformal p-values)"""
    remembered: list[int]
    """forgotten records named as still remembered (upper tail) at the FDR"""
    over_forgotten: list[int]
    """forgotten records named as over-forgotten (lower tail) at the FDR"""
    per_record_null: str
    """what the per-record p-values rest on"""
    per_example_auc: Estimate
    """AUC of telling the unlearned model from retrained ones on the forget set, each record's score standardized
    by the retrained models (leave-one-out): 0.5 on exact retraining"""
    population_auc: Estimate
    """the same with one threshold for every record (the raw signal): the population attack"""
    tpr_at_1pct_before: Estimate
    """forget-set TPR at 1% FPR of the per-example membership test on the original model"""
    tpr_at_1pct_after: Estimate
    """the same on the unlearned model"""
    tpr_at_1pct_retrained: Estimate
    """the same on a retrained model, on average (its expected value is 1%)"""
    utility: Utility
    """accuracy of the unlearned model beside the retrained models'"""
    exposure_rose: Exposure
    """retained records more exposed after unlearning"""
    retrained_models: int
    """models retrained on the retained records (the null; each a cached model)"""
    models_trained: int
    """models this run trained (the others came from the cache)"""
    seconds: Number
    """wall-clock seconds of the whole verification"""
    answer: Answer | None = None
    """the answer in the shape every audit ends in (verdict word, statistic, p-value, summary, detail:
    ``results.answer``); absent in files written before it"""
