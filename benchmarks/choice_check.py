"""Does the pseudo-target estimate rank the candidates as the target's true TPR@1% does? (issue 38, K >= 2)

    python benchmarks/choice_check.py NAME CONFIG.yaml   # merges into results/lodo_choice.json

For a run config with K references: the target and references trained or loaded from the cache; every
candidate of ``attacks: auto`` at K measured on the references as pseudo-targets (``experiment/choice.py``,
exactly what auto does, no target membership read) and run on the target (its true TPR@1%, read here only
to check the estimate); Spearman's rank correlation between the two across the candidates, and the true
TPR@1% of what auto would run against the best candidate's. Target (issue 38): correlation >= 0.6.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from claims import RESULTS
from scipy.stats import spearmanr

from miaudit import pipeline
from miaudit.attacks import recommended
from miaudit.config import run as config
from miaudit.experiment import cached, choice
from miaudit.experiment.run import evaluate, fpr_levels

OUT = RESULTS / "lodo_choice.json"


def check(path: str) -> dict:
    cfg = config.load(path)
    k = cfg.references
    cfg = cfg.model_copy(update={"attacks": [{"name": n, "references": k} for n in recommended.CANDIDATES]})
    exp = pipeline.prepare(cfg)
    inputs = exp.attack_inputs()
    start = time.perf_counter()
    found = choice.choose(list(exp.plan.attacks), inputs, k, fpr_levels(cfg), choice.LEVEL)
    seconds = time.perf_counter() - start
    assert found is not None
    truth = {}
    for a in exp.plan.attacks:
        result = cached.execute(a.info, a.params, a.references, inputs)
        metrics = evaluate(exp, result)
        assert metrics is not None
        truth[a.name] = metrics.tpr_at_fpr["0.01"]
    names = [c.name for c in found.candidates]
    estimate = [c.tpr["0.01"] for c in found.candidates]
    rho = float(spearmanr(estimate, [truth[n] for n in names]).statistic)
    return {
        "config": cfg.model_dump(mode="json", include={"dataset", "model", "seed", "references"}),
        "pseudo_targets": found.pseudo_targets,
        "pseudo_members": found.members,
        "choice_seconds": seconds,
        "candidates": {
            c.name: {"estimate": c.tpr["0.01"], "ci": list(c.tpr_ci["0.01"]), "true_tpr": truth[c.name], "run": c.run}
            for c in found.candidates
        },
        "spearman": rho,
        "chosen": found.chosen,
        "best_true": max(truth, key=lambda n: truth[n]),
        "chosen_best_true_ratio": max(truth[n] for n in found.chosen) / max(max(truth.values()), 1e-12),
        "first_true_ratio": truth[names[0]] / max(max(truth.values()), 1e-12),
        "hardware": "2 shared AMD EPYC cores (loaded), torch 1 thread",
        "finite": bool(np.isfinite(rho)),
    }


def main(name: str, path: str) -> None:
    data = json.loads(OUT.read_text()) if OUT.exists() else {"note": __doc__.split("\n")[0], "runs": {}}
    data["runs"][name] = check(path)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data["runs"][name], indent=1))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
