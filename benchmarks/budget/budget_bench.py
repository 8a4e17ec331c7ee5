"""Power per unit of training (issue 56): each design of `references: {budget: B}` at cost ratios 0.25-4, and
online LiRA with 16 references as the ceiling; protocol in budget_protocol.md (committed before the reporting runs).

One JSON line per cell (data set, seed, design, budget) appended to --out; a cell already there is skipped, so an
interrupted run resumes. Per cell: the design bought (count, epochs, records, batch), its cost ratio and measured
seconds, the attack `attacks: auto` ranks first, and every candidate attack's TPR at 0.1% and 1% FPR (95%
Clopper-Pearson interval), AUC (interval) and calibrated FPR (non-members with calibrated p < 0.05).

    PYTHONPATH=src python benchmarks/budget/budget_bench.py --datasets location --seeds 3 4 5 \\
        --out benchmarks/budget/budget_runs.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tried_designs import BUILDERS, TRIED, attacked

from miaudit import api, pipeline
from miaudit.attacks.recommended import CANDIDATES
from miaudit.config.run import from_dict
from miaudit.experiment.budget import price
from miaudit.membership.run import chosen_attacks
from miaudit.results import AttackRow
from miaudit.results.attacks import Metrics
from miaudit_bench.suites import AG_NEWS, CIFAR10, DIGITS, LOCATION

BASES: dict[str, dict[str, Any]] = {"location": LOCATION, "digits": DIGITS, "ag_news": AG_NEWS, "cifar10": CIFAR10}
DESIGNS = ("steps", "records", "epochs", "full")
RATIOS = (1.0, 0.5, 2.0, 0.25, 4.0)  # B = 1 first: the cells that decide the goal, should the CPU run out


def _row(a: AttackRow | Metrics) -> dict[str, Any]:
    tpr, ci = a.tpr_at_fpr or {}, a.tpr_at_fpr_ci or {}
    return {
        "tpr_0.001": tpr.get("0.001"),
        "tpr_0.01": tpr.get("0.01"),
        "tpr_0.01_ci": ci.get("0.01"),
        "auc": a.auc,
        "auc_ci": a.auc_ci,
        "cal_fpr_0.05": ((a.fpr_at_alpha or {}).get("calibrated") or {}).get("0.05"),
    }


def budget_cell(label: str, seed: int, design: str, ratio: float) -> dict[str, Any]:
    base = {**BASES[label], "seed": seed, "references": {"budget": ratio, "design": design}}
    auto_cfg = from_dict({**base, "attacks": "auto"})
    k = auto_cfg.references
    t0 = time.time()
    exp = pipeline.prepare(auto_cfg)  # trains (or loads) the target and the references the budget buys
    attacks, _ = chosen_attacks(exp, exp.attack_inputs())
    first = next(a.name for a in attacks if a.name in CANDIDATES)  # auto's first choice (attack_choice.chosen[0])
    rows = from_dict({**base, "attacks": [{"name": n, "references": k} for n in CANDIDATES]})
    res = api.run(rows).results  # the same models (cached), every candidate
    assert res.reference_budget is not None
    rb = res.reference_budget
    d = rb.design
    return {
        "dataset": label,
        "seed": seed,
        "design": design,
        "budget": ratio,
        "cost_ratio": rb.cost_ratio,
        "count": d.count,
        "epochs": d.epochs,
        "records": d.records,
        "batch_size": d.batch_size,
        "reference_seconds": rb.reference_seconds,
        "target_seconds": rb.target_seconds,
        "auto_first": first,
        "attacks": {a.name: _row(a) for a in res.attacks},
        "wall_seconds": time.time() - t0,
        "priced": price(auto_cfg, exp.dataset, exp.split).sentence(),
    }


def _metrics_row(run: Any) -> dict[str, Any]:
    return _row(run.metrics.section())  # the metrics an AttackRow carries


def tried_cell(label: str, seed: int, design: str, ratio: float) -> dict[str, Any]:
    """A design of tried_designs.py: its references built there, on the target a `steps` run of this budget
    trained (cached), then miaudit's attacks as in budget_cell."""
    base = {**BASES[label], "seed": seed}
    t0 = time.time()
    exp = pipeline.prepare(from_dict({**base, "references": {"budget": ratio, "design": "steps"}}))
    refs, masks, bought = BUILDERS[design](exp, ratio)
    auto = attacked(base, exp, refs, masks, auto=True)
    every = attacked(base, exp, refs, masks, auto=False)
    return {
        "dataset": label,
        "seed": seed,
        "design": design,
        "budget": ratio,
        **bought,
        "reference_seconds": sum(r.seconds for r in refs),
        "target_seconds": exp.target.seconds,
        "auto_first": auto.attack_choice.chosen[0] if auto.attack_choice else None,
        "attacks": {r.attack.name: _metrics_row(r) for r in every.attacks},
        "wall_seconds": time.time() - t0,
        "priced": f"{design}: {bought['count']} references (tried_designs.py)",
    }


def ceiling_cell(label: str, seed: int, k: int) -> dict[str, Any]:
    cfg = {
        **BASES[label],
        "seed": seed,
        "mode": "online",
        "references": k,
        "attacks": [{"name": "lira", "references": k}],
    }
    t0 = time.time()
    res = api.run(from_dict(cfg)).results
    secs = sum(r.seconds or 0.0 for r in res.reference_models or [])
    return {
        "dataset": label,
        "seed": seed,
        "design": f"online-lira-{k}",
        "budget": None,
        "cost_ratio": 2.0 * k,  # each online reference trains on twice the target's records (population + queries)
        "count": k,
        "reference_seconds": secs,
        "target_seconds": res.target.training_seconds,
        "attacks": {"lira": _row(res.attacks[0])},
        "wall_seconds": time.time() - t0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(BASES))
    ap.add_argument("--seeds", nargs="+", type=int, default=[3, 4, 5])
    ap.add_argument("--designs", nargs="*", default=list(DESIGNS))
    ap.add_argument("--ratios", nargs="+", type=float, default=list(RATIOS))
    ap.add_argument("--tried", nargs="*", default=[], choices=TRIED, help="designs of tried_designs.py too")
    ap.add_argument("--ceiling", nargs="*", type=int, default=[16], help="online LiRA with these K (none: skip)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    done = set()
    if a.out.exists():
        for line in a.out.read_text().splitlines():
            c = json.loads(line)
            done.add((c["dataset"], c["seed"], c["design"], c["budget"]))
    for label in a.datasets:
        for seed in a.seeds:
            cells: list[tuple[str, float | None]] = [(f"online-lira-{k}", None) for k in a.ceiling]
            cells += [(d, r) for r in a.ratios for d in a.designs if not (d == "full" and r < 1)]
            cells += [(d, r) for r in a.ratios for d in a.tried]
            for design, ratio in cells:
                if (label, seed, design, ratio) in done:
                    continue
                if design in TRIED:
                    assert ratio is not None
                    cell = tried_cell(label, seed, design, ratio)
                elif ratio is None:
                    cell = ceiling_cell(label, seed, int(design.rsplit("-", 1)[1]))
                else:
                    cell = budget_cell(label, seed, design, ratio)
                with a.out.open("a") as f:
                    f.write(json.dumps(cell) + "\n")
                print(f"{label} seed {seed} {design} {ratio}: {cell.get('wall_seconds', 0):.0f} s", flush=True)


if __name__ == "__main__":
    main()
