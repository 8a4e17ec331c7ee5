"""Full-batch DP-SGD, where the final model can reveal as much as the whole transcript (issue 48, item 3): how close
the many-run audit (``miaudit dp-audit --runs 100``) comes to the claimed epsilon 10.

Every record is in every step (batch larger than the data set: sample rate 1), 30 steps, lr 0.05, clipping norm 1,
noise for (10, 1e-5) by Opacus; digits; the many-run audit's worst-case start (``dp.worst_case``: the crafted
read-out, 16 canaries per run, 200 models). Two optimizers:
- ``constant``: constant learning rate, no momentum: every step's gradient has the same weight in the final model,
  whose canary coordinate is then a sufficient statistic of the transcript for that canary (Annamalai & De
  Cristofaro, NeurIPS 2024, audit this setting);
- ``cosine``: miaudit's default (cosine schedule, momentum 0.9): unequal weights, so the final model shows less.
Per run: the headline binomial bound (Steinke, Nasr & Jagielski, no assumption; what the verdict reads) and, from
the same guesses, the f-DP bound (``dp.bounds.fdp_epsilon_lb``, Mahloujifar et al.; assumes a Gaussian tradeoff
curve), each over the claimed epsilon and over the tightest accountant's (PLD where installed).

    nice python benchmarks/dp_full_batch/run.py run --seeds 0-4     # results.jsonl (about 15 s per audit here)
    python benchmarks/dp_full_batch/run.py table                    # the README table
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
EPSILON, DELTA, CONFIDENCE, RUNS = 10.0, 1e-5, 0.95, 100
OPTIMIZERS = {"constant": {"momentum": 0.0, "schedule": "constant"}, "cosine": {"momentum": 0.9, "schedule": "cosine"}}


def config(optimizer: str, seed: int) -> dict[str, object]:
    train = {"epochs": 30, "batch_size": 4096, "lr": 0.05, **OPTIMIZERS[optimizer],
             "dp": {"epsilon": EPSILON, "delta": DELTA, "max_grad_norm": 1.0}}  # fmt: skip
    canaries = {"count": 16, "kind": "crafted"}
    return {"dataset": "digits", "model": "mlp", "seed": seed, "train": train, "canaries": canaries}


def audit(optimizer: str, seed: int) -> dict[str, object]:
    import miaudit
    from miaudit.dp import bounds

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = miaudit.dp_audit(config(optimizer, seed), runs=RUNS, out=Path(tmp) / "out", say=lambda line: None)
    a = report.dp_audit
    assert a is not None and a.bounds is not None and a.compared_with is not None
    b = next(x for x in a.bounds if x.analysis == "binomial")
    assert b.canaries is not None
    fdp = bounds.fdp_epsilon_lb(b.canaries, b.guesses, b.correct, CONFIDENCE, DELTA)
    tightest = a.compared_with.epsilon
    return {
        "optimizer": optimizer,
        "seed": seed,
        "slots": b.canaries,
        "guesses": b.guesses,
        "correct": b.correct,
        "binomial": b.epsilon_lower_bound,
        "binomial_max": b.max_attainable,
        "fdp": fdp,
        "claimed": EPSILON,
        "tightest_accounted": tightest,
        "fdp_over_claimed": fdp / EPSILON,
        "fdp_over_accounted": fdp / tightest,
        "binomial_over_claimed": b.epsilon_lower_bound / EPSILON,
        "seconds": round(time.perf_counter() - start, 1),
    }


def table() -> str:
    rows = [json.loads(line) for line in (HERE / "results.jsonl").read_text().splitlines() if line.strip()]
    lines = ["| optimizer | seeds | right / guesses (median) | binomial bound | f-DP bound (Gaussian assumption) | "
             "f-DP / claimed 10 | f-DP / PLD | binomial / claimed |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip

    def spread(key: str, fmt: str = ".2f") -> str:
        xs = [r[key] for r in got]
        return f"{statistics.median(xs):{fmt}} [{min(xs):{fmt}}, {max(xs):{fmt}}]"

    for name in OPTIMIZERS:
        got = [r for r in rows if r["optimizer"] == name]
        if got:
            right = statistics.median(r["correct"] for r in got)
            guesses = statistics.median(r["guesses"] for r in got)
            lines.append(
                f"| {name} | {len(got)} | {right:g}/{guesses:g} | {spread('binomial')} | {spread('fdp')} | "
                f"{spread('fdp_over_claimed')} | {spread('fdp_over_accounted')} | {spread('binomial_over_claimed')} |"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["run", "table"])
    p.add_argument("--seeds", default="0-4")
    args = p.parse_args()
    if args.part == "table":
        print(table())
        return
    import torch

    torch.set_num_threads(1)
    lo, _, hi = args.seeds.partition("-")
    for seed in range(int(lo), int(hi or lo) + 1):
        for optimizer in OPTIMIZERS:
            row = audit(optimizer, seed)
            with (HERE / "results.jsonl").open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{optimizer} seed {seed}: binomial {row['binomial']:.2f}, f-DP {row['fdp']:.2f}", flush=True)


if __name__ == "__main__":
    main()
