"""What the cores of this machine can do for a Location MLP's training: float32 matrix products (GFLOPS) in one
thread, in two threads of one process, and in two one-thread processes at once; the ceiling on what training
models together can gain over one at a time on a CPU.

    python benchmarks/together/cpu_gemm.py            # writes benchmarks/together/cpu_gemm.{json,md}

Protocol (fixed before measuring; run on an idle machine): two shapes, a large square product (2048^3) and the
Location MLP's largest layer for one batch (64 x 446 x 1024, forward); each way warmed up, then timed over a
fixed count of products, median of 5 rounds with the ways' order rotated per round. GFLOPS = 2 m n k / seconds;
for two processes, the sum of both.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

SHAPES = {"square 2048": (2048, 2048, 2048, 10), "Location layer 64x446x1024": (64, 446, 1024, 3000)}
WAYS = ("1 thread", "2 threads", "2 processes x 1 thread")
RESULTS = Path(__file__).parent  # this study's folder: its results


def gflops(shape: tuple[int, int, int, int], threads: int) -> float:
    import torch

    torch.set_num_threads(threads)
    m, k, n, count = shape
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(max(3, count // 10)):
        a @ b
    start = time.perf_counter()
    for _ in range(count):
        a @ b
    return 2 * m * n * k * count / (time.perf_counter() - start) / 1e9


def one_round(pool: ProcessPoolExecutor, shape: tuple[int, int, int, int], order: list[str]) -> dict[str, float]:
    out = {}
    for way in order:
        if way == "2 processes x 1 thread":
            out[way] = sum(f.result() for f in [pool.submit(gflops, shape, 1) for _ in range(2)])
        else:
            out[way] = pool.submit(gflops, shape, 1 if way == "1 thread" else 2).result()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    results: dict = {
        "command": "python benchmarks/together/cpu_gemm.py",
        "cores": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "load_before": os.getloadavg()[0],
        "shapes": {},
    }
    with ProcessPoolExecutor(max_workers=2) as pool:  # fresh processes: each way's threads set there
        for name, shape in SHAPES.items():
            rounds = []
            for r in range(args.rounds):
                order = list(WAYS[r % 3 :] + WAYS[: r % 3])
                rounds.append(one_round(pool, shape, order))
            results["shapes"][name] = {way: statistics.median(x[way] for x in rounds) for way in WAYS}
    results["load_after"] = os.getloadavg()[0]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cpu_gemm.json").write_text(json.dumps(results, indent=1))
    lines = [
        "# float32 matrix products on this machine's cores",
        "",
        f"`{results['command']}`; {results['cores']} cores; median of {args.rounds} rounds; 1-minute load "
        f"{results['load_before']:.1f} before, {results['load_after']:.1f} after.",
        "",
        "| product | " + " | ".join(WAYS) + " | 2 threads / 1 | 2 processes / 2 threads |",
        "|---|---|---|---|---|---|",
    ]
    for name, by_way in results["shapes"].items():
        one, two, procs = (by_way[w] for w in WAYS)
        lines.append(f"| {name} | {one:.0f} | {two:.0f} | {procs:.0f} | {two / one:.2f}x | {procs / two:.2f}x |")
    (args.out / "cpu_gemm.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
