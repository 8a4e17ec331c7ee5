"""A dataset-inference run's ``answer`` (``results.Answer``): its decision (``used``, made in ``infer``) in the
shape every audit ends in: the verdict word, the AUC and p-value it rests on, the section's sentence and the
procedure with its numbers."""

from __future__ import annotations

from ..results import Answer, DatasetInference


def of(d: DatasetInference) -> Answer:
    """used, no_evidence (read with the power) or no_claim (a guard found the sets different without the model)."""
    word = {True: "used", False: "no_evidence", None: "no_claim"}[d.used]
    score = "calibrated against the reference models" if d.calibrated else "not calibrated against reference models"
    b = d.blind
    guards = f"blind guard AUC {b.auc:.3f} [{b.ci[0]:.3f}, {b.ci[1]:.3f}] (DeLong's interval)"
    if (g := d.references_guard) is not None:
        guards += f", reference guard AUC {g.auc:.3f} [{g.ci[0]:.3f}, {g.ci[1]:.3f}]"
    return Answer(
        question="dataset_inference",
        verdict=word,
        statistic="AUC, suspect vs validation records",
        value=d.auc,
        p_value=d.p_value,
        level=d.level,
        summary=d.verdict,
        detail=(
            f"one-sided permutation test ({d.permutations} permutations) of the suspects' AUC against the "
            f"validation records on the score {score}: AUC {d.auc:.3f}, p = {d.p_value:.3g} at level {d.level:g}; "
            f"{guards}; no claim when a guard finds the sets different without the model."
        ),
        evidence="dataset_inference",
    )


def answered(d: DatasetInference) -> DatasetInference:
    """The section with its ``answer`` set from its verdict (the last step of the statistics)."""
    d.answer = of(d)
    return d
