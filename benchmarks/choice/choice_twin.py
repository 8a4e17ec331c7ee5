"""Would a twin of the target rank the candidates as the target does? (issue 38; exploratory, not a selection)

The pseudo-target estimate (``experiment/choice.py``) audits references as targets; references share about half
their training records with each other and none with the target, so they are not exchangeable with it
(benchmarks/choice/lodo_choice.md). A twin is: one more model trained like the target (same recipe, same
training-set size) on records no reference saw, audited against the same K references and population exactly as
the target is. Its data here: the split's validation part (records no model trains on), of which a seeded half
trains the twin (its members) and the other half are its non-members; the split gives validation twice the
target's training share, so the twin trains on as many records as the target. No target membership is read.

Per run: every ``attacks: auto`` candidate at K on the target (its true TPR@1%) and on the twin (the twin's
TPR@1%, at the threshold its non-members give, as the pseudo-target estimate measures it); Spearman's rank
correlation between the two across the candidates, beside the plain pseudo-target estimate's on the same models.

    python benchmarks/choice/choice_twin.py DATASET SEED [SEED ...]    # appends to lodo_choice_twin.json beside it
    python benchmarks/choice/choice_twin.py --table
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from miaudit import pipeline
from miaudit.attacks import recommended, registry
from miaudit.config import run as config
from miaudit.experiment import cached, recipes
from miaudit.experiment.run import evaluate, fpr_levels
from miaudit.membership import choice

OUT = Path(__file__).parent / "lodo_choice_twin.json"
SPLIT = {"target_train": 0.2, "target_test": 0.1, "population": 0.3, "validation": 0.4}
K = 4
TWIN_SEED = 0x7417


def run(dataset: str, seed: int) -> dict[str, Any]:
    cfg = config.from_dict({"dataset": dataset, "model": "mlp", "seed": seed, "references": K, "split": SPLIT})
    cfg = cfg.model_copy(update={"attacks": [{"name": n, "references": K} for n in recommended.CANDIDATES]})
    exp = pipeline.prepare(cfg)
    inputs = exp.attack_inputs()
    assert inputs.validation is not None and inputs.population is not None
    val = exp.split.validation
    twin_in = np.random.default_rng([seed, TWIN_SEED]).random(len(val)) < 0.5
    twin = recipes.trained_target(cfg, exp.dataset, val[twin_in], recipes.open_store(cfg), role="twin")
    twin_inputs = replace(
        inputs,
        queries=replace(inputs.validation, target_logits=np.asarray(twin.logits[val], dtype=np.float64)),
        population=replace(
            inputs.population, target_logits=np.asarray(twin.logits[exp.split.population], dtype=np.float64)
        ),
        validation=None,
        models=None,
    )
    truth, twin_tpr = {}, {}
    for a in exp.plan.attacks:
        metrics = evaluate(exp, cached.execute(a.info, a.params, a.references, inputs))
        assert metrics is not None
        truth[a.name] = metrics.tpr_at_fpr["0.01"]
        scores = registry.execute(a.info, a.params, a.references, twin_inputs).scores
        twin_tpr[a.name] = float(choice.flagged(scores, twin_in, choice.LEVEL).mean())
    found = choice.choose(list(exp.plan.attacks), inputs, K, tuple(fpr_levels(cfg)), choice.LEVEL)
    assert found is not None
    pseudo = {c.name: c.tpr["0.01"] for c in found.candidates}
    names = sorted(truth)
    best = max(truth.values())
    return {
        "dataset": dataset,
        "seed": seed,
        "split": SPLIT,
        "members": {
            "target": len(exp.split.members),
            "twin": int(twin_in.sum()),
            "twin_nonmembers": int((~twin_in).sum()),
        },
        "true_tpr": truth,
        "twin_tpr": twin_tpr,
        "pseudo_tpr": pseudo,
        "spearman_twin": float(spearmanr([twin_tpr[n] for n in names], [truth[n] for n in names]).statistic),
        "spearman_pseudo": float(spearmanr([pseudo[n] for n in names], [truth[n] for n in names]).statistic),
        "twin_first_true_ratio": truth[max(names, key=lambda n: twin_tpr[n])] / max(best, 1e-12),
        "pseudo_first_true_ratio": truth[max(names, key=lambda n: pseudo[n])] / max(best, 1e-12),
        "hardware": "2 CPU cores (Intel Xeon), torch 1 thread, idle",
    }


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| run | members target / twin | Spearman twin | Spearman pseudo-targets "
        "| first pick's true / best: twin, pseudo |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} s{r['seed']} | {r['members']['target']} / {r['members']['twin']} | "
            f"{r['spearman_twin']:.2f} | {r['spearman_pseudo']:.2f} | "
            f"{r['twin_first_true_ratio']:.2f}, {r['pseudo_first_true_ratio']:.2f} |"
        )
    for ds in sorted({r["dataset"] for r in rows}):
        mine = [r for r in rows if r["dataset"] == ds]
        lines.append(
            f"| {ds} mean ({len(mine)}) | | {np.mean([r['spearman_twin'] for r in mine]):.2f} | "
            f"{np.mean([r['spearman_pseudo'] for r in mine]):.2f} | "
            f"{np.mean([r['twin_first_true_ratio'] for r in mine]):.2f}, "
            f"{np.mean([r['pseudo_first_true_ratio'] for r in mine]):.2f} |"
        )
    return lines


def main(argv: list[str]) -> None:
    data = json.loads(OUT.read_text()) if OUT.exists() else {"note": __doc__.split("\n")[0], "runs": []}
    if argv[0] == "--table":
        print("\n".join(table(data["runs"])))
        return
    for seed in argv[1:]:
        row = run(argv[0], int(seed))
        data["runs"] = [r for r in data["runs"] if (r["dataset"], r["seed"]) != (row["dataset"], row["seed"])]
        data["runs"].append(row)
        OUT.write_text(json.dumps(data, indent=1) + "\n")
        print(json.dumps({k: row[k] for k in ("dataset", "seed", "spearman_twin", "spearman_pseudo")}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
