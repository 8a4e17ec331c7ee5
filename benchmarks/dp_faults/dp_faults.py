"""Which planted DP-SGD faults the one-run verdict catches, and by which observer (issue 36, item 5).

Part ``run``: for each declared epsilon and each fault, ``miaudit dp-audit`` on digits with the dpblack check's
one-run config (the ``mlp``, 30 epochs, batch 64, lr 0.05, clip 1; 300 crafted black-box canaries with 50
guesses each way, 2,000 white-box gradient canaries with 100; LiRA and RMIA with 2 references; confidence 0.95,
delta 1e-5, Holm over the three observers), one JSON line per audit, appended as it finishes:
- ``none``: correct DP-SGD;
- ``clip: none``, ``clip: after_mean``, ``sampling: {accounted_rate_factor: 4}``, ``noise: per_epoch``,
  ``public_pass: true``, ``noise_scale: 0.5`` (``train.dp.planted_fault``; training/dp_faults.py).
With ``--many-run``: ``miaudit dp-audit --runs 100`` instead (black-box, the crafted read-out of
``dp.worst_case``, 16 canaries per run, the same DP-SGD, the fault planted by ``training.dp_stacked``).
Part ``table``: benchmarks/dp_faults/dp_faults.md from the JSON lines.

    python benchmarks/dp_faults/dp_faults.py run --eps 1 --out benchmarks/dp_faults/dp_faults.jsonl  # a process per eps
    python benchmarks/dp_faults/dp_faults.py run --many-run --eps 1 4 8
    python benchmarks/dp_faults/dp_faults.py table
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

RESULTS = Path(__file__).parent  # this study's folder: its results
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


RUNS = 100  # --many-run: pairs of runs
READING = (
    "Reading (session 9, from the rows above): the one-run white-box canaries see the noise and the accounting "
    "(sampling, per_epoch), never the clipping (their gradient is added after it); the one-run black-box canaries "
    "see clipping skipped at eps 1 (RMIA) but, at eps 4, 100 of 100 right guesses cannot reject the claim (the most "
    "50 guesses each way and Holm over three observers can show is 3.16 < 3.66): power, not sight. The many-run "
    "audit from the crafted start sees both clipping faults at eps 1 and 4 (its guesses are raised until the bound "
    "can exceed the claim, `multi_run.powered`). At eps 8 no audit can reject the claim at all: with 3,200 slots "
    "even every one of the most guesses right shows at most about 6.2 < 7.30. Not caught anywhere: `public_pass` "
    "(one plain epoch before 30 noisy ones: a canary's unclipped step in it moves the crafted read-out as much as "
    "~8 clipped ones, against ~30 sampled ones in DP-SGD, too little; a read-out feature of 100 instead of 8 "
    "caught it at eps 1 (0.972 > 0.912) and missed at eps 4 by one guess (195/196, 3.655 < 3.660) but cut the "
    "correct eps-8 bound from 1.72 to 1.04, so the feature stays 8) and half the noise at eps 1 (white-box "
    "149/200, Holm p 0.55; many-run 0.43)."
)


def config(fault: dict[str, Any] | None, eps: float, seed: int, many: bool) -> dict[str, Any]:
    """The dpblack check's one-run config (its ``cfg``), with the fault planted; ``many``: its DP-SGD alone."""
    dp: dict[str, Any] = {"epsilon": eps, "delta": 1e-5, "max_grad_norm": 1.0}
    if fault is not None:
        dp["planted_fault"] = fault
    if many:
        return {"dataset": "digits", "model": "mlp", "seed": seed, "split": SPLIT,
                "train": {"epochs": 30, "batch_size": 64, "lr": 0.05, "dp": dp}}  # fmt: skip
    return {
        "dataset": "digits", "model": "mlp", "seed": seed, "references": 2, "split": SPLIT,
        "train": {"epochs": 30, "batch_size": 64, "lr": 0.05, "dp": dp},
        "canaries": {"count": 300, "kind": "crafted", "guesses": 50, "gradient": 2000, "gradient_guesses": 100},
        "attacks": [{"name": "lira", "references": 2}, {"name": "rmia", "references": 2}],
    }  # fmt: skip


def audit(name: str, eps: float, seed: int, out: Path, many: bool = False) -> dict[str, Any]:
    from miaudit.config import run as run_config
    from miaudit.dp import output

    cfg = run_config.from_dict(config(FAULTS[name], eps, seed, many))
    start, cpu = time.perf_counter(), time.process_time()
    where = out / f"{name}-{eps:g}-{seed}-{many}".replace(" ", "_").replace(":", "")
    res = output.audit(cfg, where, runs=RUNS if many else None, say=lambda s: None)
    a = res.dp_audit
    assert a is not None and (many or a.tests is not None)
    head = a.bounds[0] if many and a.bounds else None
    observers = [
        {"threat_model": "black-box", "observer": "many-run", "correct": head.correct, "guesses": head.guesses,
         "holm_p": float("nan"), "rejected": bool(a.violated), "bound": head.epsilon_lower_bound}
    ] if head is not None else []  # fmt: skip
    return {
        "audit": f"many-run (R = {RUNS})" if many else "one-run",
        "fault": name,
        "eps": eps,
        "seed": seed,
        "violated": bool(a.violated),
        "epsilon_lb": a.epsilon_lb,
        "claim": a.compared_with.epsilon if a.compared_with else min((a.accounted or {}).values()),
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
            for t in a.tests or []
        ]
        + observers,
        "verdict": a.verdict,
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - start,
    }


def _cell(t: dict[str, Any]) -> str:
    mark = "**caught**" if t["rejected"] else "not caught"
    return f"{t['correct']}/{t['guesses']}, Holm p {t['holm_p']:.2g}, {mark}, bound {t['bound']:.2f}"


def table(rows: list[dict[str, Any]]) -> str:
    def which(t: dict[str, Any]) -> str:
        if t["observer"] == "many-run":
            return "many-run"
        return "white-box" if t["threat_model"] == "white-box" else ("lira" if "lira" in t["observer"] else "rmia")

    lines = [
        "# Planted faults: which the DP verdict catches (`benchmarks/dp_faults/dp_faults.py`)",
        "",
        "Commands: `python benchmarks/dp_faults/dp_faults.py run --eps E` (E = 1 and 4, one process each, in "
        "parallel), `python benchmarks/dp_faults/dp_faults.py run --many-run --eps 1 4 8`, then "
        "`python benchmarks/dp_faults/dp_faults.py table`. "
        "digits, seed 0, the dpblack check's DP-SGD (the `mlp`, 30 epochs, batch 64, lr 0.05, clip 1, delta 1e-5); "
        "confidence 0.95. Claim: the tightest accounted epsilon of the DP-SGD as the accountant was told (the "
        "sampling fault's accountant is told the smaller rate). Hardware: 2 CPU cores (Intel Xeon, AVX-512), no "
        "GPU, torch 1 thread. One seed per cell: a caught / not caught at the margin can flip with the seed.",
        "",
        "## One run (`miaudit dp-audit`: the check's one-run config)",
        "",
        "300 crafted black-box canaries (50 guesses each way) scored by LiRA and RMIA with 2 references, 2,000 "
        "white-box gradient canaries (100 each way); Holm over the three observers; an observer's bound is its "
        "binomial bound, Bonferroni-corrected over the observers.",
        "",
        "| declared eps | fault | claim | white-box (gradient canaries) | black-box LiRA (crafted) "
        "| black-box RMIA (crafted) | verdict | headline bound | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    order = list(FAULTS)
    one = [r for r in rows if r.get("audit", "one-run") == "one-run"]
    for r in sorted(one, key=lambda r: (r["eps"], order.index(r["fault"]))):
        cells = {which(t): _cell(t) for t in r["observers"]}
        flag = "**violation**" if r["violated"] else "no violation"
        lines.append(
            f"| {r['eps']:g} | {r['fault']} | {r['claim']:.3f} | "
            + " | ".join(cells.get(n, "-") for n in ("white-box", "lira", "rmia"))
            + f" | {flag} | {r['epsilon_lb']:.3f} | {r['wall_s']:.0f} |"
        )
    many = [r for r in rows if r.get("audit", "one-run") != "one-run"]
    if many:
        lines += [
            "",
            f"## Many runs (`miaudit dp-audit --runs {RUNS}`: the crafted read-out, 16 canaries per run)",
            "",
            f"{2 * RUNS} models of the crafted read-out (`dp.worst_case`) trained by stacked DP-SGD with the fault "
            "planted (`training.dp_stacked`); Steinke et al.'s binomial bound over the 3,200 (run, canary) slots, "
            "guesses each way fixed from the hyperparameters and the claim before training (`multi_run.plan`, "
            "`multi_run.powered`).",
            "",
            "| declared eps | fault | claim | right / guesses | bound | verdict | wall s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in sorted(many, key=lambda r: (r["eps"], order.index(r["fault"]))):
            t = r["observers"][0]
            flag = "**violation**" if r["violated"] else "no violation"
            lines.append(
                f"| {r['eps']:g} | {r['fault']} | {r['claim']:.3f} | {t['correct']}/{t['guesses']} | "
                f"{t['bound']:.3f} | {flag} | {r['wall_s']:.0f} |"
            )
    lines += ["", "## Summary: caught by (verdict of each audit)", ""] + summary(rows, which) + ["", READING]
    return "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]], which: Any) -> list[str]:
    """Per fault and declared epsilon: the audits whose verdict flags it, and by which observer."""
    epsilons = sorted({r["eps"] for r in rows})
    head = "| fault | " + " | ".join(f"declared eps {e:g}" for e in epsilons) + " |"
    out = [head, "|---" * (len(epsilons) + 1) + "|"]

    def who(r: dict[str, Any]) -> str:
        kind = r.get("audit", "one-run").split(" ")[0]
        if kind != "one-run":
            return kind
        return f"{kind} ({', '.join(which(t) for t in r['observers'] if t['rejected'])})"

    for name in [f for f in FAULTS if f != "none"] + ["none"]:
        cells = []
        for e in epsilons:
            mine = [r for r in rows if r["fault"] == name and r["eps"] == e]
            caught = "; ".join(who(r) for r in mine if r["violated"]) or "not flagged"
            ran = ", ".join(sorted(r.get("audit", "one-run").split(" ")[0] for r in mine))
            cells.append(f"{caught} (ran: {ran})" if mine else "-")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("part", choices=["run", "table"])
    p.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--faults", nargs="+", default=list(FAULTS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS / "dp_faults.jsonl")
    p.add_argument("--many-run", action="store_true")
    args = p.parse_args()
    if args.part == "table":
        rows = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
        (RESULTS / "dp_faults.md").write_text(table(rows))
        return
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        for eps in args.eps:
            for name in args.faults:
                row = audit(name, eps, args.seed, Path(tmp), args.many_run)
                print(json.dumps(row), flush=True)
                with args.out.open("a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
