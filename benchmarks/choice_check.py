"""Does the pseudo-target estimate rank the candidates as the target's true TPR@1% does? (issue 38, K >= 2)

    python benchmarks/choice_check.py NAME CONFIG.yaml [OUT.json]   # merges into OUT (results/lodo_choice.json)
    python benchmarks/choice_check.py --table OUT.json               # its runs as a markdown table

For a run config with K references: the target and references trained or loaded from the cache; every
candidate of ``attacks: auto`` at K measured on the references as pseudo-targets (``experiment/choice.py``,
exactly what auto does, no target membership read), both as auto now does it (``mirrored``: each pseudo-target
made as unlike its references as the target is, ``choice.mirrors``) and without that step (``plain``, what
auto did before), and run on the target (its true TPR@1%, read here only to check the estimates); Spearman's
rank correlation between estimate and truth across the candidates, and the true TPR@1% of what auto would run
against the best candidate's. Target (issue 38): correlation >= 0.6.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from claims import RESULTS
from scipy.stats import rankdata, spearmanr

from miaudit import pipeline
from miaudit.attacks import recommended
from miaudit.config import run as config
from miaudit.experiment import cached, choice
from miaudit.experiment.run import evaluate, fpr_levels

OUT = RESULTS / "lodo_choice.json"


def _variant(found: choice.AttackChoice, truth: dict[str, float], seconds: float) -> dict:
    names = [c.name for c in found.candidates]
    estimate = [c.tpr["0.01"] for c in found.candidates]
    rho = float(spearmanr(estimate, [truth[n] for n in names]).statistic)
    # pooled per-pseudo-target ranks: each pseudo-target ranks the candidates, the mean rank orders them
    per = np.array([c.per_pseudo_target for c in found.candidates])
    mean_rank = np.mean([rankdata(col) for col in per.T], axis=0)
    rho_ranks = float(spearmanr(mean_rank, [truth[n] for n in names]).statistic)
    return {
        "pseudo_targets": found.pseudo_targets,
        "pseudo_members": found.members,
        "choice_seconds": seconds,
        "candidates": {
            c.name: {
                "estimate": c.tpr["0.01"],
                "ci": list(c.tpr_ci["0.01"]),
                "per_pseudo_target": c.per_pseudo_target,
                "true_tpr": truth[c.name],
                "run": c.run,
            }
            for c in found.candidates
        },
        "spearman": rho,
        "spearman_mean_rank": rho_ranks,
        "chosen": found.chosen,
        "chosen_best_true_ratio": max(truth[n] for n in found.chosen) / max(max(truth.values()), 1e-12),
        "first_true_ratio": truth[names[0]] / max(max(truth.values()), 1e-12),
        "bias": float(np.mean(estimate) - np.mean(list(truth.values()))),
    }


def check(path: str) -> dict:
    cfg = config.load(path)
    k = cfg.references
    cfg = cfg.model_copy(update={"attacks": [{"name": n, "references": k} for n in recommended.CANDIDATES]})
    exp = pipeline.prepare(cfg)
    inputs = exp.attack_inputs()
    truth = {}
    for a in exp.plan.attacks:
        result = cached.execute(a.info, a.params, a.references, inputs)
        metrics = evaluate(exp, result)
        assert metrics is not None
        truth[a.name] = metrics.tpr_at_fpr["0.01"]
    variants = {}
    for name, mirror in (("plain", None), ("noise", "noise"), ("regress", "regress")):
        start = time.perf_counter()
        found = choice.choose(list(exp.plan.attacks), inputs, k, fpr_levels(cfg), choice.LEVEL, mirror=mirror)
        assert found is not None
        variants[name] = _variant(found, truth, time.perf_counter() - start)
    pairs = {j: [i for i in range(k) if i != j][: min(k - 1, choice.REFERENCES_PER_RUN)] for j in range(k)}
    moved = choice.mirrors(inputs.first(k).population, k, pairs)
    return {
        "config": cfg.model_dump(mode="json", include={"dataset", "model", "seed", "references"}),
        "true_tpr": truth,
        "best_true": max(truth, key=lambda n: truth[n]),
        "mirror": {str(j): {"shift": m.shift, "slope": m.slope, "noise": m.noise} for j, m in moved.items()},
        "variants": variants,
        "hardware": "2 shared AMD EPYC cores (loaded), torch 1 thread",
    }


def table(data: dict) -> list[str]:
    """Per run and variant: Spearman (pooled estimate; pooled per-pseudo-target ranks), mean bias, what auto
    would run and its true TPR@1% over the best's; then per data set (runs named DATASET-sSEED) the mean of the
    runs' Spearman and the Spearman of the seed-mean estimate against the seed-mean truth."""
    runs = data["runs"]
    variants = list(next(iter(runs.values()))["variants"])
    lines = [
        "| run | variant | Spearman | Spearman (mean per-pseudo-target rank) | bias (points) | auto runs "
        "| its true TPR@1% / best |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        for v in variants:
            r = run["variants"][v]
            ranks = r.get("spearman_mean_rank", float("nan"))  # not in runs made before it was added
            lines.append(
                f"| {name} | {v} | {r['spearman']:.2f} | {ranks:.2f} | {100 * r['bias']:+.1f} "
                f"| {', '.join(r['chosen'])} | {r['chosen_best_true_ratio']:.2f} |"
            )
    sets: dict[str, list[dict]] = {}
    for name, run in runs.items():
        sets.setdefault(name.rsplit("-s", 1)[0], []).append(run)
    lines += ["", "| data set | runs | variant | mean Spearman | Spearman of seed means |", "|---|---|---|---|---|"]
    for label, group in sets.items():
        names = sorted(group[0]["true_tpr"])
        truth = np.mean([[r["true_tpr"][n] for n in names] for r in group], axis=0)
        for v in variants:
            est = np.mean([[r["variants"][v]["candidates"][n]["estimate"] for n in names] for r in group], axis=0)
            rho = np.mean([r["variants"][v]["spearman"] for r in group])
            pooled = float(spearmanr(est, truth).statistic)
            lines.append(f"| {label} | {len(group)} | {v} | {rho:.2f} | {pooled:.2f} |")
    return lines


def main(name: str, path: str, out: Path = OUT) -> None:
    data = json.loads(out.read_text()) if out.exists() else {"note": __doc__.split("\n")[0], "runs": {}}
    data["runs"][name] = check(path)
    out.write_text(json.dumps(data, indent=1) + "\n")
    run = data["runs"][name]
    print(name, "truth", {n: round(100 * v, 2) for n, v in run["true_tpr"].items()}, "mirror", run["mirror"])
    for v, r in run["variants"].items():
        est = {n: round(100 * c["estimate"], 2) for n, c in r["candidates"].items()}
        rho = f"rho {r['spearman']:.2f} (ranks {r['spearman_mean_rank']:.2f})"
        print(f"  {v}: {rho} bias {100 * r['bias']:+.1f} chosen {r['chosen']} est {est}")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        print("\n".join(table(json.loads(Path(sys.argv[2]).read_text()))))
    else:
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]) if len(sys.argv) > 3 else OUT)
