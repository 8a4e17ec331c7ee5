"""Does the pseudo-target estimate rank the candidates as the target's true TPR@1% does? (issue 38, K >= 2)

    python benchmarks/choice/choice_check.py NAME CONFIG.yaml [OUT.json [VARIANT,...]]  # merges into OUT
    python benchmarks/choice/choice_check.py --table OUT.json               # its runs as a markdown table

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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import rankdata, spearmanr

from miaudit import pipeline
from miaudit.attacks import AttackInputs, RecordSet, recommended
from miaudit.config import run as config
from miaudit.experiment import cached
from miaudit.experiment.run import evaluate, fpr_levels
from miaudit.membership import choice
from miaudit.stats import signals
from miaudit.stats.signals import Signal

OUT = Path(__file__).parent / "lodo_choice.json"
VARIANTS = ("plain", "noise", "regress", "band", "subsets", "band+subsets")
BAND = (0.005, 0.007, 0.01, 0.014, 0.02)  # the band variant's FPR levels (protocol: notes in lodo_choice.md)
SIGNAL = Signal.rescaled_logit  # the scale on which a pseudo-target is made as unlike its references as the target


@dataclass(frozen=True)
class Mirror:
    """How a pseudo-target is made as unlike its references as the target is unlike its own: added to its
    true-class logit (which moves the rescaled logit by as much) ``shift + slope * o + noise * N(0, 1)``, with
    ``o`` the record's mean score over the pseudo-target's references that did not train on it."""

    shift: float
    slope: float
    noise: float
    seed: int

    def apply(self, records: RecordSet, part: int) -> RecordSet:
        """``records`` of one pseudo-audit (its target row moved); ``part`` seeds the draws of that part."""
        scores = np.stack([_score(r, records.labels) for r in np.asarray(records.ref_logits)])
        out = np.ones_like(scores, dtype=bool) if records.ref_in is None else ~np.asarray(records.ref_in)
        o = np.where(out, scores, 0.0).sum(axis=0) / np.maximum(out.sum(axis=0), 1)
        eps = np.random.default_rng([self.seed, part]).standard_normal(len(records.labels))
        logits = np.array(records.target_logits, dtype=np.float64, copy=True)
        logits[np.arange(len(o)), records.labels] += self.shift + self.slope * o + self.noise * eps
        return replace(records, target_logits=logits)


def _score(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return signals.oriented(SIGNAL, np.asarray(logits, dtype=np.float64), labels)


def _fit(a: np.ndarray, b: np.ndarray, regress: bool) -> tuple[float, float, float]:
    """(intercept, slope, residual variance) of a on b (slope 1 without ``regress``: the difference a - b)."""
    slope = float(np.cov(a, b)[0, 1] / max(b.var(), 1e-12)) if regress else 1.0
    resid = a - slope * b
    return float(resid.mean()), slope, float(resid.var())


def mirrors(pop: RecordSet, references: int, audits: list[choice.PseudoAudit], regress: bool) -> dict[int, Mirror]:
    """Per pseudo-target, the ``Mirror`` that gives it the target's relation to its references, measured on
    population records (every one a non-member of the target: no target membership read). The target's score
    regressed on reference j's over the records j did not train on (intercept, slope, residual variance,
    averaged over j) against pseudo-target k's on each of its references over the records neither trained on:
    k's scores get the differences of intercept and slope (``regress``; else only the mean of the difference)
    and the missing residual variance as noise."""
    ref_in = np.asarray(pop.ref_in, dtype=bool)
    s_t = _score(pop.target_logits, pop.labels)
    s = np.stack([_score(pop.ref_logits[j], pop.labels) for j in range(references)])
    target = np.mean([_fit(s_t[~ref_in[j]], s[j][~ref_in[j]], regress) for j in range(references)], axis=0)
    out = {}
    for audit in audits:
        k = audit.target
        both = [(j, ~ref_in[k] & ~ref_in[j]) for j in audit.references]
        own = np.mean([_fit(s[k][o], s[j][o], regress) for j, o in both], axis=0)
        noise = float(np.sqrt(max(target[2] - own[2], 0.0)))
        out[k] = Mirror(float(target[0] - own[0]), float(target[1] - own[1]), noise, 0x38 + k)
    return out


def mirrored(inputs: AttackInputs, references: int, regress: bool) -> tuple[list[choice.PseudoAudit], dict]:
    """The pseudo-audits with each pseudo-target moved by its ``Mirror``, and the mirrors."""
    audits = choice.pseudo_audits(inputs, references)
    moved = mirrors(inputs.population, references, audits, regress)
    out = []
    for audit in audits:
        m = moved[audit.target]
        given = replace(
            audit.inputs, queries=m.apply(audit.inputs.queries, 0), population=m.apply(audit.inputs.population, 1)
        )
        out.append(replace(audit, inputs=given))
    return out, {str(k): {"shift": m.shift, "slope": m.slope, "noise": m.noise} for k, m in moved.items()}


def _variant(found: choice.AttackChoice, truth: dict[str, float], seconds: float, band: bool) -> dict:
    names = [c.name for c in found.candidates]
    keys = [str(lv) for lv in BAND] if band else ["0.01"]
    estimate = [float(np.mean([c.tpr[k] for k in keys])) for c in found.candidates]
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
                "estimate": est,
                "ci": list(c.tpr_ci["0.01"]),
                "per_pseudo_target": c.per_pseudo_target,
                "true_tpr": truth[c.name],
                "run": c.run,
            }
            for c, est in zip(found.candidates, estimate, strict=True)
        },
        "spearman": rho,
        "spearman_mean_rank": rho_ranks,
        "chosen": found.chosen,
        "chosen_best_true_ratio": max(truth[n] for n in found.chosen) / max(max(truth.values()), 1e-12),
        "first_true_ratio": truth[names[0]] / max(max(truth.values()), 1e-12),
        "bias": float(np.mean(estimate) - np.mean(list(truth.values()))),
    }


def check(path: str, names: tuple[str, ...] = VARIANTS) -> dict:
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
    variants, moved = {}, {}
    given = inputs.first(k)
    for name in names:
        start = time.perf_counter()
        if name in ("noise", "regress"):
            audits, moved[name] = mirrored(given, k, regress=name == "regress")
        elif "subsets" in name:
            audits = choice.pseudo_audits(given, k, per_run=2, every_subset=True)
        else:
            audits = choice.pseudo_audits(given, k)
        levels = tuple(fpr_levels(cfg)) + BAND
        found = choice.estimate(list(exp.plan.attacks), audits, levels, choice.LEVEL)
        assert found is not None
        variants[name] = _variant(found, truth, time.perf_counter() - start, band=name.startswith("band"))
    return {
        "config": cfg.model_dump(mode="json", include={"dataset", "model", "seed", "references"}),
        "true_tpr": truth,
        "best_true": max(truth, key=lambda n: truth[n]),
        "mirror": moved,
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


def main(name: str, path: str, out: Path = OUT, names: tuple[str, ...] = VARIANTS) -> None:
    data = json.loads(out.read_text()) if out.exists() else {"note": __doc__.split("\n")[0], "runs": {}}
    data["runs"][name] = check(path, names)
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
        given = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else VARIANTS
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]) if len(sys.argv) > 3 else OUT, given)
