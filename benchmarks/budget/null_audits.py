"""Issue 56, validity: the membership verdict's null rate on null audits, with the references a budget buys
against the same number of references trained as the target is.

A null audit: the audit's own split, references and attacks (`attacks: auto`), but its target replaced by a model
of the target's recipe trained on a seeded random half of the population, so that no query, member or
non-member, trained it: the verdict's "leaks" is then a false alarm. Per seed and design, one line in
null_audits.jsonl (resumable); the summary, with Clopper-Pearson intervals, in null_audits.md.

    PYTHONPATH=src python benchmarks/budget/null_audits.py --seeds 10-29
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from miaudit import pipeline
from miaudit.config.run import from_dict
from miaudit.experiment.base import TrainedModel
from miaudit.membership.run import run_experiment
from miaudit.membership.verdict import verdict
from miaudit.models import build_model
from miaudit.stats.metrics import clopper_pearson
from miaudit.training.loop import predict_logits, train
from miaudit_bench.suites import LOCATION

HERE = Path(__file__).resolve().parent
DESIGNS: dict[str, Any] = {"budget 1 (steps)": {"budget": 1}, "2 references (full)": 2}


def null_target(exp: Any, seed: int) -> TrainedModel:
    """The target's recipe on a seeded half of the population: a model no query trained."""
    ds, cfg = exp.dataset, exp.cfg
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x0]))
    idx = np.sort(rng.choice(exp.split.population, size=len(exp.split.members), replace=False))
    torch.manual_seed(seed)
    model = build_model(cfg.target_architecture, tuple(ds.input_shape), ds.n_classes)
    report = train(model, ds.x[idx], ds.y[idx], cfg.train, seed=seed)
    return TrainedModel(role="target", module=model, logits=predict_logits(model, ds.x).astype(np.float64),
                        train_idx=idx, seconds=report.seconds, train_accuracy=report.train_accuracy, cached=False,
                        architecture=cfg.target_architecture)  # fmt: skip


def null_audit(seed: int, design: str) -> dict[str, Any]:
    start = time.time()
    exp = pipeline.prepare(from_dict({**LOCATION, "seed": seed, "references": DESIGNS[design]}))
    exp.target = null_target(exp, seed)
    exp.memo.clear()
    found = verdict(run_experiment(exp))
    assert found is not None
    return {"seed": seed, "design": design, "leaks": found.leaks, "attack": found.attack,
            "p_value": found.p_value, "adjusted_p_value": found.adjusted_p_value,
            "wall_seconds": time.time() - start}  # fmt: skip


def summary(rows: list[dict[str, Any]]) -> str:
    out = [
        "# Null audits with a budget (issue 56, validity)",
        "",
        "From `benchmarks/budget/null_audits.py` (location, `miaudit_bench.suites` LOCATION, `attacks: auto`; the "
        "target replaced by the target's recipe trained on half of the population, so no query trained it). "
        "'leaks': audits whose verdict says leaks (false alarms; family-wise error 0.05), with the 95% "
        "Clopper-Pearson interval. CPU: 2-core AMD EPYC, no GPU.",
        "",
        "| references | seeds | leaks | rate [95% CI] | smallest adjusted p |",
        "|---|---|---|---|---|",
    ]
    for design in DESIGNS:
        got = [r for r in rows if r["design"] == design]
        if not got:
            continue
        k, n = sum(r["leaks"] for r in got), len(got)
        lo, hi = clopper_pearson(k, n)
        seeds = sorted(r["seed"] for r in got)
        out.append(
            f"| {design} | {seeds[0]}-{seeds[-1]} | {k} of {n} | {k / n:.2f} [{lo:.2f}, {hi:.2f}] | "
            f"{min(r['adjusted_p_value'] for r in got):.2g} |"
        )
    return "\n".join([*out, ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="10-29", help="first-last")
    a = ap.parse_args()
    first, last = (int(s) for s in a.seeds.split("-"))
    path = HERE / "null_audits.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    done = {(r["seed"], r["design"]) for r in rows}
    for seed in range(first, last + 1):
        for design in DESIGNS:
            if (seed, design) in done:
                continue
            rows.append(null_audit(seed, design))
            with path.open("a") as f:
                f.write(json.dumps(rows[-1]) + "\n")
            print(f"seed {seed} {design}: leaks {rows[-1]['leaks']}", flush=True)
    (HERE / "null_audits.md").write_text(summary(rows))


if __name__ == "__main__":
    main()
