"""Wall time of training and scoring K reference models, local executor vs Ray, and a cluster projection.

    python benchmarks/scale/scale.py                      # K = 1 4 16 64 on Location (long on 2 cores)
    python benchmarks/scale/scale.py --k 1 4 --epochs 5   # the small version behind the committed table

Per K and executor: a fresh cache, the target and K references trained (``prepare``), then LiRA and
RMIA with all K scored, and MR-BMIA with min(K, 16) references (diagonal Laplace, 100 draws: under Ray
one posterior task per reference) (``run_experiment``). Ray's local cluster is started once, before the timings
(its start-up is reported apart). Ray runs W = CPU count tasks at once, so its per-task overhead is
o = (Ray training s - T0) / ceil(K / W) - t, t the local time of one reference model.

Projection for W workers (on paper, from the measured per-model times), with t the local training time
of one reference model, o Ray's per-task overhead, T0 the target's training and S(K) the scoring time:

    T(K, W) = T0 + ceil(K / W) * (t + o) + S(K)

Writes ``benchmarks/scale/scale.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

import torch

from miaudit import audits, pipeline
from miaudit.config import run as config


def one(ks: int, executor: str, epochs: int, dataset: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="miaudit-scale-") as cache:
        cfg = config.from_dict(
            {
                "dataset": dataset,
                "model": "mlp",
                "seed": 0,
                "train": {"epochs": epochs, "batch_size": 64, "lr": 0.05},
                "references": ks,
                "attacks": [{"name": "lira", "references": ks}, {"name": "rmia", "references": ks}]
                + (
                    [{"name": "mr-bmia", "references": min(ks, 16), "hessian": "diag", "samples": 100}]
                    if ks > 1
                    else []
                ),
                "cache_dir": cache,
                "executor": {"kind": executor},
            }
        )
        start = time.perf_counter()
        exp = pipeline.prepare(cfg)
        trained = time.perf_counter()
        result = audits.run_experiment(exp)
        done = time.perf_counter()
    return {
        "aucs": [a.metrics.auc for a in result.attacks],
        "k": ks,
        "executor": executor,
        "target_s": exp.target.seconds,
        "training_s": trained - start,
        "scoring_s": done - trained,
        "total_s": done - start,
    }


def projection(rows: list[dict], overhead: float, workers: tuple[int, ...] = (1, 8, 32)) -> list[str]:
    local = [r for r in rows if r["executor"] == "local"]
    big = max(local, key=lambda r: r["k"])
    per_model = (big["training_s"] - big["target_s"]) / big["k"]
    score_per_model = big["scoring_s"] / big["k"]
    lines = [
        f"Projection: T(K, W) = T0 + ceil(K / W) * (t + o) + S(K), with T0 = {big['target_s']:.1f} s, "
        f"t = {per_model:.2f} s per reference, o = {overhead:.2f} s per task, S(K) = {score_per_model:.3f} s x K.",
        "",
        "| K | " + " | ".join(f"W = {w}" for w in workers) + " |",
        "|---|" + "---|" * len(workers),
    ]
    for k in (64, 256):
        cells = [big["target_s"] + math.ceil(k / w) * (per_model + overhead) + score_per_model * k for w in workers]
        lines.append(f"| {k} | " + " | ".join(f"{c / 60:.1f} min" for c in cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--dataset", default="location")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = ap.parse_args()
    import ray

    torch.set_num_threads(1)
    start = time.perf_counter()
    os.environ.setdefault("RAY_worker_niceness", "0")  # as executor._start does: workers at our priority
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - start
    rows = [one(k, ex, args.epochs, args.dataset) for k in args.k for ex in ("local", "ray")]
    ray.shutdown()
    by = {(r["k"], r["executor"]): r for r in rows}
    lines = [
        f"# Scale: local executor vs Ray ({args.dataset}, MLP, {args.epochs} epochs, {os.cpu_count()} CPUs, "
        "1 torch thread)",
        "",
        f"Ray local cluster start-up (once, not in the rows): {startup:.1f} s.",
        "",
        "| K | local train s | Ray train s | ratio | Ray overhead s per task | local score s | Ray score s "
        "| same AUCs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    overheads = []
    workers = os.cpu_count() or 1
    for k in args.k:
        lo, ra = by[(k, "local")], by[(k, "ray")]
        # Ray runs `workers` tasks at once: T_ray = T0 + ceil(K / W) (t + o), t = one model's local time
        t = (lo["training_s"] - lo["target_s"]) / k
        over = (ra["training_s"] - ra["target_s"]) / math.ceil(k / workers) - t
        overheads.append(over)
        same = "yes" if lo["aucs"] == ra["aucs"] else "NO"
        lines.append(
            f"| {k} | {lo['training_s']:.1f} | {ra['training_s']:.1f} | {lo['training_s'] / ra['training_s']:.2f}x "
            f"| {over:+.2f} | {lo['scoring_s']:.2f} | {ra['scoring_s']:.2f} | {same} |"
        )
    lines += ["", *projection(rows, max(0.0, overheads[-1]))]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scale.json").write_text(json.dumps({"ray_startup_s": startup, "rows": rows}, indent=1))
    (args.out / "scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
