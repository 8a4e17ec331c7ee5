"""``miaudit bench speed``: scoring cost on synthetic logits, miaudit beside a plain numpy floor and the peers.

For each cell of the grid (K references x N records x C classes) a store of seeded synthetic float32
logits is written in miaudit's npz layout (half the records queried, half population; every record IN
for half the references); then every contender scores it in a process of its own, timed from outside:
wall and CPU seconds and peak resident memory of that process (``os.wait4``), records scored per second.
miaudit runs ``miaudit score`` twice on one fresh cache: cold (signals computed and stored) and warm
(read back). The floor and the peers run ``speed_contenders.py``; a peer that is not installed, or has
no such attack, is skipped with the reason. Spearman's rho of each contender's scores against
miaudit's says that they rank the same records alike.

Cost growth: per contender and task, log wall time fitted by least squares to log K, log N and log C
over the cells it ran (the exponents: 1 = linear).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

GRID = {"K": (1, 16, 64), "N": (10_000, 50_000, 200_000), "C": (10, 100)}
QUICK_GRID = {"K": (4, 16), "N": (2_000, 8_000), "C": (10, 100)}
TASKS = ("lira-offline", "lira-online", "rmia-offline", "rmia-online", "bavaria-n")
MIAUDIT_ATTACK = {
    "lira-offline": ("offline", "lira"),
    "lira-online": ("online", "lira"),
    "rmia-offline": ("offline", "rmia"),
    "rmia-online": ("online", "rmia"),
    "bavaria-n": ("offline", "bavaria-n"),
}
PEERS = ("privacyguard", "sacroml")
HEADLINE_SIZE = 64 * 50_000 * 100  # every task runs on the largest cell up to this one (the cell)
MAX_LOGITS_BYTES = 2.0e9  # cells whose reference logits exceed this are left out (disk, memory, time here)
RUN_TIMEOUT = 600
CONTENDERS_SCRIPT = Path(__file__).with_name("speed_contenders.py")


def write_store(folder: Path, k: int, n: int, c: int, seed: int = 26) -> None:
    """Seeded synthetic outputs: per record a class, a difficulty and a member effect; per model a scale."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, n)
    rows = np.arange(n)
    hard = rng.standard_normal(n).astype(np.float32)
    profile = rng.standard_normal((n, c), dtype=np.float32)
    gain = (0.4 + 1.6 / (1 + np.exp(-2 * hard))).astype(np.float32)
    # every record IN for half the references; one reference trained on other data (offline's setting)
    keep = rng.random((k, n)).argsort(axis=0) < k // 2 if k > 1 else np.zeros((1, n), dtype=bool)
    target_keep = rng.random(n) < 0.5
    queried = rng.permutation(n) < n // 2

    def model(member: np.ndarray) -> np.ndarray:
        z = profile + 0.5 * rng.standard_normal((n, c), dtype=np.float32)
        z[rows, y] += (4.0 - 2.0 * hard) + rng.standard_normal(n, dtype=np.float32) + gain * member
        return np.float32(rng.uniform(0.85, 1.15)) * z

    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "labels.npy", y.astype(np.int64))
    np.save(folder / "target_logits.npy", model(target_keep))
    np.save(folder / "reference_keep.npy", keep)
    np.save(folder / "members.npy", np.flatnonzero(queried & target_keep))
    np.save(folder / "nonmembers.npy", np.flatnonzero(queried & ~target_keep))
    refs = np.lib.format.open_memmap(folder / "reference_logits.npy", mode="w+", dtype=np.float32, shape=(k, n, c))
    for j in range(k):
        refs[j] = model(keep[j])
    refs.flush()


# A small process starts each command and reports its rusage: Linux keeps a forked child's peak RSS at
# least its parent's at the fork, so a command forked straight from this (large) process would report ours.
TRAMPOLINE = """
import json, os, subprocess, sys
proc = subprocess.Popen(json.loads(sys.argv[1]), stdout=sys.stdout, stderr=subprocess.STDOUT)
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "cpu_s": usage.ru_utime + usage.ru_stime,
                  "rss_gb": usage.ru_maxrss * 1024 / 1e9}))
"""


def measure(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd``; its exit status, wall and CPU seconds, peak RSS (GB) of it and its children."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", TRAMPOLINE, json.dumps(cmd)], capture_output=True, text=True, env=env)
    lines = done.stdout.strip().splitlines() or ["{}"]
    try:
        got = json.loads(lines[-1])
    except json.JSONDecodeError:
        got = {"rc": done.returncode or 1, "cpu_s": float("nan"), "rss_gb": float("nan")}
    return {**got, "wall_s": time.perf_counter() - start, "last_line": (lines[-2] if len(lines) > 1 else "")[:200]}


def miaudit_runs(store: Path, task: str, work: Path) -> list[tuple[str, dict[str, Any], np.ndarray | None]]:
    """``miaudit score`` cold then warm on one fresh cache: (contender, measurement, query scores)."""
    mode, attack = MIAUDIT_ATTACK[task]
    cfg = work / f"{task}.yaml"
    cfg.write_text(
        f"outputs: {{layout: npz, path: {store}}}\nname: synthetic\nmode: {mode}\ncalibration: null\n"
        f"attacks: [{{name: {attack}}}]\n"
    )
    env = {**os.environ, "MIAUDIT_CACHE_DIR": str(work / f"cache-{task}")}
    runs = []
    for kind in ("cold", "warm"):
        out = work / f"out-{task}-{kind}"
        got = measure([sys.executable, "-m", "miaudit.cli", "score", str(cfg), "--out", str(out), "--force"], env)
        runs.append((f"miaudit ({kind})", got, _miaudit_scores(out, store) if got["rc"] == 0 else None))
    shutil.rmtree(work / f"cache-{task}", ignore_errors=True)
    return runs


def _miaudit_scores(out: Path, store: Path) -> np.ndarray:
    """The queries' scores in the floor's order (members then non-members, as in the store's index files)."""
    import pandas as pd

    frame = pd.read_parquet(out / "scores.parquet")
    col = next(c for c in frame.columns if c.endswith(".score"))
    by_record = dict(zip(frame["record"].to_numpy(), frame[col].to_numpy()))
    order = np.concatenate([np.load(store / "members.npy"), np.load(store / "nonmembers.npy")])
    return np.array([by_record[r] for r in order])


def contender_run(name: str, task: str, store: Path, work: Path) -> tuple[dict[str, Any], np.ndarray | None]:
    out = work / f"{name}-{task}.npy"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PEERS_PATH"), "") if p)}
    got = measure([sys.executable, str(CONTENDERS_SCRIPT), name, task, str(store), str(out)], env)
    return got, np.load(out) if got["rc"] == 0 and out.exists() else None


def peer_available(name: str) -> str | None:
    """None when the peer imports, else why not (its package missing)."""
    module = {"privacyguard": "privacy_guard", "sacroml": "sacroml.attacks.likelihood_attack"}[name]
    env = {**os.environ, "PYTHONPATH": os.environ.get("PEERS_PATH", "")}
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env)
    return None if probe.returncode == 0 else f"not installed ({module} does not import; pip install miaudit[bench])"


def cells(grid: Mapping[str, tuple[int, ...]]) -> list[tuple[int, int, int]]:
    return [(k, n, c) for c in grid["C"] for n in grid["N"] for k in grid["K"]]


def run_cell(k: int, n: int, c: int, tasks: tuple[str, ...], peers: dict[str, str | None], log: Callable) -> list:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="miaudit-speed-") as tmp:
        work = Path(tmp)
        store = work / "store"
        write_store(store, k, n, c)
        for task in tasks:
            if k < 2 and task in ("lira-online", "bavaria-n"):
                continue  # an IN and an OUT reference per record: two references at least
            results = miaudit_runs(store, task, work)
            reference = results[0][2]
            for name in ("numpy", *PEERS):
                if task == "bavaria-n":
                    break  # no published implementation to set beside it: miaudit's own timing only
                if name in PEERS and peers[name] is not None:
                    rows.append(_row(k, n, c, task, name, None, None, reference, skipped=peers[name]))
                    continue
                if name == "privacyguard" and task.startswith("rmia") and (n // 2) ** 2 * 8 > MAX_LOGITS_BYTES:
                    gb = (n // 2) ** 2 * 8 / 1e9
                    why = f"its RMIA compares every query with every population record: a {gb:.0f} GB matrix"
                    rows.append(_row(k, n, c, task, name, None, None, reference, skipped=why))
                    continue
                got, scores = contender_run(name, task, store, work)
                if got["rc"] == 3:
                    rows.append(_row(k, n, c, task, name, None, None, reference, skipped="no such attack"))
                    continue
                results.append((name, got, scores))
            for name, got, scores in results:
                rows.append(_row(k, n, c, task, name, got, scores, reference))
                log(f"[speed] K={k} N={n} C={c} {task} {name}: {rows[-1]['wall_s']} s, rc {got['rc']}")
    return rows


def _row(k, n, c, task, name, got, scores, reference, skipped: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"K": k, "N": n, "C": c, "task": task, "contender": name}
    if skipped is not None or got is None:
        return {**row, "skipped": skipped}
    queries = n // 2
    row |= {key: round(got[key], 3) for key in ("wall_s", "cpu_s", "rss_gb")}
    row["records_per_s"] = round(queries / got["wall_s"], 1)
    if got["rc"] != 0:
        return {**row, "failed": f"exit {got['rc']}: {got['last_line']}"}
    if scores is not None and reference is not None and len(scores) == len(reference):
        row["spearman_vs_miaudit"] = round(float(spearmanr(scores, reference)[0]), 6)
    return row


def growth_exponents(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per (task, contender): least-squares exponents of wall time in K, N and C over the cells it ran."""
    fits: dict[str, dict[str, float]] = {}
    for key in sorted({(r["task"], r["contender"]) for r in rows}):
        ran = [r for r in rows if (r["task"], r["contender"]) == key and "wall_s" in r and "failed" not in r]
        design = np.array([[1.0, np.log(r["K"]), np.log(r["N"]), np.log(r["C"])] for r in ran])
        if len(ran) < 5 or np.linalg.matrix_rank(design) < 4:
            continue
        coef = np.linalg.lstsq(design, np.log([r["wall_s"] for r in ran]), rcond=None)[0]
        fits[f"{key[0]} / {key[1]}"] = {"K": round(coef[1], 2), "N": round(coef[2], 2), "C": round(coef[3], 2)}
    return fits


def plan(grid: Mapping[str, tuple[int, ...]]) -> tuple[list[tuple[tuple[int, int, int], tuple[str, ...]]], list]:
    """(cell, tasks): every task on the largest cell of HEADLINE's size or below, first; then LiRA offline on
    every other cell (the growth fit), in order of size; and the cells left out (logits over MAX_LOGITS_BYTES)."""
    kept = sorted(
        (c for c in cells(grid) if c[0] * c[1] * c[2] * 4 <= MAX_LOGITS_BYTES), key=lambda c: c[0] * c[1] * c[2]
    )
    dropped = [c for c in cells(grid) if c not in kept]
    head = max((c for c in kept if c[0] * c[1] * c[2] <= HEADLINE_SIZE), key=lambda c: (c[0] * c[1] * c[2], c))
    rest = [(c, ("lira-offline",)) for c in kept if c != head]
    return [(head, TASKS), *rest], dropped  # the headline cell first: the table the issue asks for


def run_suite(out_dir: Path, hardware: dict[str, Any], quick: bool = False, log: Callable = print) -> dict[str, Any]:
    """The plan over the grid (QUICK_GRID with ``quick``); speed.json and speed.md rewritten after every cell."""
    from .speed_table import markdown

    grid = QUICK_GRID if quick else GRID
    start = time.perf_counter()
    peers = {name: peer_available(name) for name in PEERS}
    todo, dropped = plan(grid)
    results: dict[str, Any] = {
        "suite": "speed",
        "command": "miaudit bench speed" + ("-quick" if quick else ""),
        "hardware": hardware,
        "load_average_at_start": os.getloadavg(),
        "grid": grid,
        "dropped_cells": [{"K": k, "N": n, "C": c, "why": "reference logits over 2 GB"} for k, n, c in dropped],
        "peers": {name: why or "installed" for name, why in peers.items()},
        "rows": [],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    for (k, n, c), tasks in todo:
        results["rows"] += run_cell(k, n, c, tasks, peers, log)
        results["growth_exponents"] = growth_exponents(results["rows"])
        results["wall_seconds"] = time.perf_counter() - start
        results["load_average_at_end"] = os.getloadavg()
        (out_dir / "speed.json").write_text(json.dumps(results, indent=1))
        (out_dir / "speed.md").write_text(markdown(results))
    return results
