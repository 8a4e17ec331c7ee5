"""Is the pseudo-target estimate's error on small data sets its population's size? (issue 38)

A pseudo-audit gives each attack only the population records its pseudo-target did not train on: about half of
the real audit's. Here every candidate runs on the real target twice: with the whole population, and with a
random half of it (4 draws, mean); both scored on the target's true membership (TPR@1%). An attack that loses
much more than the others with half the population is under-rated by the pseudo-targets.

    python benchmarks/choice/choice_half_population.py CONFIG.yaml [CONFIG.yaml ...]
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np

from miaudit import pipeline
from miaudit.attacks import RecordSet, recommended, registry
from miaudit.config import run as config
from miaudit.experiment import cached
from miaudit.experiment.run import evaluate

DRAWS = 4


def half(records: RecordSet, keep: np.ndarray) -> RecordSet:
    """The records ``keep`` (arrays only, no augmentation views)."""
    return replace(
        records,
        labels=records.labels[keep],
        target_logits=records.target_logits[keep],
        ref_logits=np.asarray(records.ref_logits)[:, keep],
        ref_in=None if records.ref_in is None else np.asarray(records.ref_in)[:, keep],
        x=None if records.x is None else records.x[keep],
        target_views=None,
        ref_views=None,
    )


def main(path: str) -> None:
    cfg = config.load(path)
    k = cfg.references
    cfg = cfg.model_copy(update={"attacks": [{"name": n, "references": k} for n in recommended.CANDIDATES]})
    exp = pipeline.prepare(cfg)
    inputs = exp.attack_inputs()
    assert inputs.population is not None
    n = len(inputs.population.labels)
    rows = {}
    for a in exp.plan.attacks:
        full = evaluate(exp, cached.execute(a.info, a.params, a.references, inputs))
        halves = []
        for draw in range(DRAWS):
            keep = np.random.default_rng(draw).random(n) < 0.5
            given = replace(inputs, population=half(inputs.population, keep))
            found = evaluate(exp, registry.execute(a.info, a.params, a.references, given))
            assert found is not None
            halves.append(found.tpr_at_fpr["0.01"])
        assert full is not None
        rows[a.name] = f"{100 * full.tpr_at_fpr['0.01']:.2f} -> {100 * float(np.mean(halves)):.2f}"
    print(f"{path}: population {n}; TPR@1% whole -> half population: {rows}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        main(arg)
