"""Wall-clock time of the last-layer cross-entropy GLS at CIFAR-10/ResNet scale.

d = 512 features, C = 10 classes, n records that are both the Hessian data and
the queries (the ``gls`` attack's default, hessian_data=queries). Features are a
Gaussian mixture with one mean per class, probabilities the softmax of a random
linear head, all float64. Prints one line per run and writes
benchmarks/gls/gls_scaling.json.

    python benchmarks/gls/gls_scaling.py [--records 10000 50000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time
from pathlib import Path

import numpy as np
from scipy.special import softmax
from threadpoolctl import threadpool_limits

from miaudit.stats import leverage

DIMS, CLASSES = 512, 10
OUT = Path(__file__).parent / "gls_scaling.json"


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(CLASSES, DIMS))
    features = means[rng.integers(0, CLASSES, n)] + rng.normal(size=(n, DIMS))
    head = rng.normal(size=(DIMS, CLASSES)) / np.sqrt(DIMS)
    return features, softmax(features @ head * 3.0, axis=1)


def time_run(n: int, structure: str) -> dict:
    features, probs = synthetic(n)
    start = time.perf_counter()
    scores = leverage.cross_entropy_gls(
        features, probs, features, probs, damping=1e-3, structure=structure, space="probability"
    )
    seconds = time.perf_counter() - start
    return {
        "records": n,
        "queries": n,
        "dims": DIMS,
        "classes": CLASSES,
        "structure": structure,
        "space": "probability",
        "seconds": round(seconds, 2),
        "finite": bool(np.isfinite(scores).all()),
        "score_median": float(np.median(scores)),
    }


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    names = (
        [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        if cpuinfo.exists()
        else []
    )
    return names[0] if names else platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, nargs="+", default=[10_000, 50_000])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    runs = []
    with threadpool_limits(args.threads):
        for n in args.records:
            for structure in ("kron", "full"):
                runs.append(time_run(n, structure))
                print(json.dumps(runs[-1]), flush=True)
    result = {
        "hardware": {
            "cpu": cpu_name(),
            "cpu_count": os.cpu_count(),
            "blas_threads": args.threads,
            "load_average_after": os.getloadavg(),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        },
        "damping": 1e-3,
        "runs": runs,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
