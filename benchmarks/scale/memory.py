"""Peak memory of reading K references' signals from memory-mapped logits: LogitStack vs the stacked block.

    python benchmarks/scale/memory.py                 # K = 64 models, N = 20,000 records, C = 100 classes

Writes K float32 logit files as the store keeps them (``logits.npy``, opened with mmap_mode="r"), then,
each in a fresh process, computes the (K, N) rescaled-logit signal LiRA reads (a) through ``LogitStack``
(model by model, chunks of records) and (b) by stacking the (K, N, C) float64 block first (what
``experiment._record_set`` did before). Reports each process's peak resident memory (ru_maxrss) and
time: the peak of memory numpy allocated (tracemalloc: what the computation itself needs) and the peak
resident set (ru_maxrss: it also counts the pages of the memory-mapped files read, which the operating
system may drop at any time). Writes ``benchmarks/scale/memory.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np


def write_logits(folder: Path, k: int, n: int, c: int) -> None:
    rng = np.random.default_rng(0)
    for i in range(k):
        np.save(folder / f"m{i}.npy", rng.normal(size=(n, c)).astype(np.float32))


def measure(folder: Path, k: int, n: int, how: str) -> dict:
    from miaudit.stats import signals
    from miaudit.stats.logitstack import LogitStack

    per_model = [np.load(folder / f"m{i}.npy", mmap_mode="r") for i in range(k)]
    c = per_model[0].shape[1]
    labels = np.random.default_rng(1).integers(0, c, size=n)
    rows = np.arange(n)
    tracemalloc.start()
    start = time.perf_counter()
    if how == "logitstack":
        z = signals.compute("rescaled_logit", LogitStack(per_model, rows, c), labels)
    else:
        block = np.stack([np.asarray(m[rows], dtype=np.float64) for m in per_model])
        z = signals.compute("rescaled_logit", block, labels)
    seconds = time.perf_counter() - start
    allocated_mb = tracemalloc.get_traced_memory()[1] / 2**20
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {
        "how": how,
        "k": k,
        "n": n,
        "c": c,
        "seconds": seconds,
        "allocated_peak_mb": allocated_mb,
        "rss_peak_mb": peak_mb,
        "checksum": float(z.sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--c", type=int, default=100)
    ap.add_argument("--child", nargs=2, metavar=("FOLDER", "HOW"))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(Path(args.child[0]), args.k, args.n, args.child[1])))
        return
    with tempfile.TemporaryDirectory(prefix="miaudit-memory-") as tmp:
        write_logits(Path(tmp), args.k, args.n, args.c)
        rows = []
        for how in ("logitstack", "stacked"):
            cmd = [sys.executable, __file__, "--k", str(args.k), "--n", str(args.n), "--c", str(args.c)]
            out = subprocess.run([*cmd, "--child", tmp, how], capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert rows[0]["checksum"] == rows[1]["checksum"], "the two ways must compute the same signal"
    block_gb = args.k * args.n * args.c * 8 / 1e9
    lines = [
        f"# Memory: K = {args.k} references' signals on N = {args.n:,} records, C = {args.c} classes",
        "",
        f"`python benchmarks/scale/memory.py` (2 CPU cores). The stacked float64 block would be {block_gb:.2f} GB; "
        "both ways give the identical (K, N) signal.",
        "",
        "| how | peak allocated by numpy (MB) | peak resident set (MB) | seconds |",
        "|---|---|---|---|",
        *(f"| {r['how']} | {r['allocated_peak_mb']:.0f} | {r['rss_peak_mb']:.0f} | {r['seconds']:.1f} |" for r in rows),
        "",
        "The resident set also counts the memory-mapped files' pages read (file-backed, reclaimable); the "
        "allocated peak is what the computation holds.",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory.json").write_text(json.dumps(rows, indent=1))
    (args.out / "memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
