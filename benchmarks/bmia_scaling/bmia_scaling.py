"""How BMIA's scoring step scales with the number of queries (M = 1000 posterior draws).

Synthetic last layer: penultimate features (d = 128) of a fixed random
"backbone" are Gaussian; a reference head is fitted by a few steps of logistic
regression, laplace-torch fits its KFAC last-layer Laplace posterior, then
``miaudit.posteriors.score_moments`` scores every query under M draws. Timed:
the scoring step only (drawing weights, logits, hinge scores, moments), which
is what grows with N; the Laplace fit is reported separately.

Run: python benchmarks/bmia_scaling/bmia_scaling.py   (writes benchmarks/bmia_scaling/bmia_scaling.json)
"""

from __future__ import annotations

import json
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from miaudit import posteriors
from miaudit.posteriors.laplace import LaplacePosterior

DIM, SAMPLES, N_TRAIN = 128, 1000, 5000
CASES = [(10_000, 10), (100_000, 10), (100_000, 100)]  # (queries, classes)
OUT = Path(__file__).parent / "bmia_scaling.json"


def synthetic_reference(n_classes: int, seed: int) -> tuple[nn.Linear, torch.Tensor, np.ndarray]:
    """A head trained briefly on Gaussian features whose labels a random linear rule sets."""
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(N_TRAIN, DIM, generator=gen)
    labels = (features @ torch.randn(DIM, n_classes, generator=gen)).argmax(1)
    head = nn.Linear(DIM, n_classes)
    opt = torch.optim.LBFGS(head.parameters(), max_iter=50)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(head(features), labels) + 1e-3 * head.weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    return head, features.double(), labels.numpy()


def time_case(n_queries: int, n_classes: int) -> dict:
    head, train_features, train_labels = synthetic_reference(n_classes, seed=n_classes)
    start = time.perf_counter()
    la = LaplacePosterior("kron")
    la.fit(head, (train_features, train_labels))
    fit_s = time.perf_counter() - start
    gen = torch.Generator().manual_seed(1)
    queries = torch.randn(n_queries, DIM, generator=gen, dtype=torch.float64)
    labels = torch.randint(0, n_classes, (n_queries,), generator=gen).numpy()
    start, cpu_start = time.perf_counter(), time.process_time()
    mean, var = posteriors.score_moments(la, queries, labels, n_samples=SAMPLES, signal="hinge")
    score_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    assert np.isfinite(mean).all() and (var > 0).all()
    return {
        "queries": n_queries,
        "classes": n_classes,
        "samples": SAMPLES,
        "dim": DIM,
        "laplace_fit_seconds": round(fit_s, 3),
        "scoring_seconds": round(score_s, 3),
        "scoring_cpu_seconds": round(cpu_s, 3),
        "peak_rss_mib": _peak_rss_mib(),
    }


def _peak_rss_mib() -> int:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main() -> None:
    load_before = os.getloadavg()[0]  # other jobs on the machine while this one runs
    rows = [time_case(n, c) for n, c in CASES]
    ratio = rows[1]["scoring_seconds"] / rows[0]["scoring_seconds"]
    result = {
        "benchmark": "BMIA scoring step: M posterior draws x N queries (hinge, kron, weights predictive)",
        "hardware": {
            "cpu_cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "machine": platform.machine(),
            "torch": torch.__version__,
            "load_average_1min_before": round(load_before, 2),
            "note": "2-core machine shared with other jobs while measured: wall times are upper "
            "bounds; CPU seconds / threads estimates the wall time on an idle machine",
        },
        "rows": rows,
        "ratio_100k_over_10k_C10": round(ratio, 2),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print("| queries | classes | M | Laplace fit (s) | scoring wall (s) | scoring CPU (s) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['queries']} | {r['classes']} | {r['samples']} | {r['laplace_fit_seconds']} | "
            f"{r['scoring_seconds']} | {r['scoring_cpu_seconds']} | {r['peak_rss_mib']} |"
        )
    print(f"\nratio 100k/10k (C=10): {ratio:.2f}; torch threads: {torch.get_num_threads()}; wrote {OUT}")


if __name__ == "__main__":
    main()
