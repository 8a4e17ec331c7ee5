"""Which planted DP-SGD faults the one-run verdict catches, and by which observer (issue 36, item 5).

Part ``run``: for each declared epsilon and each fault, ``miaudit dp-audit`` on digits with the dpblack check's
one-run config (the ``mlp``, 30 epochs, batch 64, lr 0.05, clip 1; 300 crafted black-box canaries with 50
guesses each way, 2,000 white-box gradient canaries with 100; LiRA and RMIA with 2 references; confidence 0.95,
delta 1e-5, Holm over the three observers), one JSON line per audit, appended as it finishes:
- ``none``: correct DP-SGD;
- ``clip: none``, ``clip: after_mean``, ``sampling: {accounted_rate_factor: 4}``, ``noise: per_epoch``,
  ``public_pass: true``, ``noise_scale: 0.5`` (``train.dp.planted_fault``; training/dp_faults.py).
Part ``table``: benchmarks/results/dp_faults.md from the JSON lines.

    python benchmarks/dp_faults.py run --eps 1 --out benchmarks/results/dp_faults.jsonl   # one process per eps
    python benchmarks/dp_faults.py table
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).parent / "results"
SPLIT = {"target_train": 0.5, "target_test": 0.2, "population": 0.3, "validation": 0.0}
FAULTS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "clip: none": {"clip": "none"},
    "clip: after_mean": {"clip": "after_mean"},
    "sampling: rate factor 4": {"sampling": {"accounted_rate_factor": 4}},
    "noise: per_epoch": {"noise": "per_epoch"},
    "public_pass": {"public_pass": True},
    "noise_scale: 0.5": {"noise_scale": 0.5},
}


def config(fault: dict[str, Any] | None, eps: float, seed: int) -> dict[str, Any]:
    """The dpblack check's one-run config (its ``cfg``), with the fault planted."""
    dp: dict[str, Any] = {"epsilon": eps, "delta": 1e-5, "max_grad_norm": 1.0}
    if fault is not None:
        dp["planted_fault"] = fault
    return {
        "dataset": "digits", "model": "mlp", "seed": seed, "references": 2, "split": SPLIT,
        "train": {"epochs": 30, "batch_size": 64, "lr": 0.05, "dp": dp},
        "canaries": {"count": 300, "kind": "crafted", "guesses": 50, "gradient": 2000, "gradient_guesses": 100},
        "attacks": [{"name": "lira", "references": 2}, {"name": "rmia", "references": 2}],
    }  # fmt: skip


def audit(name: str, eps: float, seed: int, out: Path) -> dict[str, Any]:
    from miaudit.config import run as run_config
    from miaudit.dp import output

    cfg = run_config.from_dict(config(FAULTS[name], eps, seed))
    start, cpu = time.perf_counter(), time.process_time()
    res = output.audit(cfg, out / f"{name}-{eps:g}-{seed}".replace(" ", "_").replace(":", ""), say=lambda s: None)
    a = res.dp_audit
    assert a is not None and a.tests is not None
    return {
        "fault": name,
        "eps": eps,
        "seed": seed,
        "violated": bool(a.violated),
        "epsilon_lb": a.epsilon_lb,
        "claim": a.compared_with.epsilon if a.compared_with else None,
        "observers": [
            {
                "threat_model": t.threat_model,
                "observer": t.observer,
                "correct": t.correct,
                "guesses": t.guesses,
                "holm_p": t.holm_adjusted_p_value,
                "rejected": t.rejected,
                "bound": t.bonferroni_bound,
            }
            for t in a.tests
        ],
        "verdict": a.verdict,
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - start,
    }


def _cell(t: dict[str, Any]) -> str:
    mark = "**caught**" if t["rejected"] else "not caught"
    return f"{t['correct']}/{t['guesses']}, Holm p {t['holm_p']:.2g}, {mark}, bound {t['bound']:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    names = ["white-box", "lira", "rmia"]

    def which(t: dict[str, Any]) -> str:
        return "white-box" if t["threat_model"] == "white-box" else ("lira" if "lira" in t["observer"] else "rmia")

    lines = [
        "# Planted faults: which the one-run verdict catches (`benchmarks/dp_faults.py`)",
        "",
        "Command: `python benchmarks/dp_faults.py run --eps E` (E = 1 and 4, one process each, in parallel) then "
        "`python benchmarks/dp_faults.py table`. digits, seed 0, the dpblack check's one-run config (script "
        "docstring); confidence 0.95, delta 1e-5, Holm over the three observers; an observer's bound is its "
        "binomial bound Bonferroni-corrected over the observers. Claim: the tightest accounted epsilon of the "
        "DP-SGD as the accountant was told (the sampling fault's accountant is told the smaller rate). Hardware: "
        "2 CPU cores, no GPU, torch 1 thread, the two processes side by side. One seed per cell: a caught / not "
        "caught at the margin can flip with the seed.",
        "",
        "| declared eps | fault | claim | white-box (gradient canaries) | black-box LiRA (crafted) "
        "| black-box RMIA (crafted) | verdict | headline bound | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: (r["eps"], list(FAULTS).index(r["fault"]))):
        cells = {which(t): _cell(t) for t in r["observers"]}
        flag = "violation" if r["violated"] else "no violation"
        lines.append(
            f"| {r['eps']:g} | {r['fault']} | {r['claim']:.3f} | "
            + " | ".join(cells.get(n, "-") for n in names)
            + f" | {flag} | {r['epsilon_lb']:.3f} | {r['wall_s']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("part", choices=["run", "table"])
    p.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--faults", nargs="+", default=list(FAULTS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS / "dp_faults.jsonl")
    args = p.parse_args()
    if args.part == "table":
        rows = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
        (RESULTS / "dp_faults.md").write_text(table(rows))
        return
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for eps in args.eps:
            for name in args.faults:
                row = audit(name, eps, args.seed, Path(tmp))
                print(json.dumps(row), flush=True)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
