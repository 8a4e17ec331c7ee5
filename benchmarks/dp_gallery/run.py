"""The DP gallery (issue 48): which audit catches each user training function's bug at which claimed epsilon, and how
often correct user code is flagged.

Every audit is ``miaudit.dp_audit(fn, ...)`` (the one-run audit of a user's DP training function: black-box, the
final model only) on digits: the gallery's model (``miaudit_bench.dp_gallery:small``), 300 crafted canaries with 50
guesses each way, 2 references trained by the function, confidence 0.95 (Holm over the 7 observers of attacks: auto).
Part ``gallery``: every gallery function (``miaudit_bench.dp_gallery.GALLERY``) at claimed epsilon 1 and 8, the seeds
given. Part ``alarms``: the correct functions (plain torch and Opacus) at claimed epsilon 1 and 8 over the seeds
given. Each audit appends one JSON line as it finishes (a cut run keeps what it did); ``table`` writes README tables.

    nice -n 19 python benchmarks/dp_gallery/run.py gallery --seeds 0 --out benchmarks/dp_gallery/gallery.jsonl
    nice -n 19 python benchmarks/dp_gallery/run.py alarms --seeds 0-19 --out benchmarks/dp_gallery/alarms.jsonl
    python benchmarks/dp_gallery/run.py table
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

HERE = Path(__file__).parent
EPSILONS = (1.0, 8.0)
STRUCTURAL_EPSILONS = (1.0, 4.0, 8.0)
CANARIES = {"count": 300, "kind": "crafted", "guesses": 50}
WHITE_BOX = 2000  # part whitebox: gradient canaries joined to an Opacus optimizer by miaudit.dp_observe


def seeds_of(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def audit(name: str, epsilon: float, seed: int, gradient: int | None = None) -> dict[str, object]:
    """One audit of gallery function ``name`` claiming ``epsilon``: the verdict, the bound, each observer's test.
    ``gradient``: that many white-box gradient canaries too (joined by the function's ``miaudit.dp_observe``)."""
    import miaudit
    from miaudit_bench import dp_gallery

    start = time.perf_counter()
    report = miaudit.dp_audit(
        dp_gallery.at(name, epsilon), data="digits", epsilon=epsilon, delta=dp_gallery.DELTA, seed=seed,
        model="miaudit_bench.dp_gallery:small", references=2, say=lambda line: None,
        canaries={**CANARIES, **({"gradient": gradient} if gradient else {})},
    )  # fmt: skip
    a = report.dp_audit
    assert a is not None and a.tests is not None and a.training is not None and a.compared_with is not None
    return {
        "function": name,
        "claimed_epsilon": epsilon,
        "seed": seed,
        "violated": a.violated,
        "epsilon_lb": a.epsilon_lb,
        "max_attainable": a.max_attainable,
        "tested_against": {"claim": a.compared_with.claim, "epsilon": a.compared_with.epsilon},
        "rejected_by": [t.observer for t in a.tests if t.rejected],
        "best": max(((t.correct, t.observer) for t in a.tests), default=None),
        "tests": {t.observer: [t.correct, t.guesses, round(t.holm_adjusted_p_value, 4)] for t in a.tests},
        "accountant": a.training.accountant,
        "white_box_steps": a.training.white_box_steps,
        "canary_accuracy_in_out": [getattr(a, "canary_accuracy_in", None), getattr(a, "canary_accuracy_out", None)],
        "test_accuracy": a.target_test_accuracy,
        "seconds": round(time.perf_counter() - start, 1),
        "hardware": f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s)",
    }


def structural(name: str, epsilon: float, seed: int, epochs: int) -> dict[str, object]:
    """What a run of gallery function ``name`` shows directly (``miaudit.dp.structural``, no canaries, no attack):
    the function trains a target on a seeded half of digits and, as a reference, a model on the other half with
    another torch seed (as ``dp-audit`` does with ``references: function``); the defects of the target's run."""
    import numpy as np

    from miaudit.config.dp_training import AccountantFacts
    from miaudit.data import load
    from miaudit.dp import structural as st
    from miaudit.models.io import import_factory
    from miaudit_bench import dp_gallery

    dp_gallery.EPOCHS = epochs  # the CPU budget (README); the checks do not depend on the epochs
    dp_gallery.ACCOUNTANT = "rdp"  # calibrates in milliseconds where PRV takes a minute; the checks need no exact sigma
    recipe = dp_gallery.GALLERY[name]
    if recipe.accounted_epochs:  # more_epochs: accounted for a third of the epochs trained, as at 10 of 30
        dp_gallery.GALLERY[name] = replace(recipe, accounted_epochs=max(1, epochs // 3))
    ds = load("digits")
    order = np.random.default_rng(seed).permutation(len(ds))
    halves = order[: len(ds) // 2], order[len(ds) // 2 :]
    factory = import_factory(dp_gallery.model_of(name))
    fn = dp_gallery.at(name, epsilon)
    start = time.perf_counter()
    traces, facts = [], []
    for i, idx in enumerate(halves):
        torch.manual_seed(1000 * seed + i)  # miaudit seeds torch per model
        model = factory(ds.input_shape, ds.n_classes)
        with st.watch(model, ds.n_classes, len(idx)) as trace:
            facts.append(fn(model, ds.x[idx], ds.y[idx]))
        traces.append(trace)
    found, unchecked = st.defects(traces[0], traces[1:], AccountantFacts.model_validate(facts[0]), name)
    return {
        "function": name,
        "claimed_epsilon": epsilon,
        "seed": seed,
        "epochs": epochs,
        "defects": [d.kind for d in found],
        "details": [d.detail for d in found],
        "unchecked": unchecked,
        "seconds": round(time.perf_counter() - start, 1),
    }


def run(
    names: list[str],
    seeds: list[int],
    out: Path,
    one: Callable[[str, float, int], dict[str, object]],
    epsilons: tuple[float, ...] = EPSILONS,
) -> None:
    """``one(name, epsilon, seed)`` for every seed, claim and function, each row appended to ``out`` as it ends."""
    torch.set_num_threads(1)
    for seed in seeds:
        for epsilon in epsilons:
            for name in names:
                row = one(name, epsilon, seed)
                with out.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                said = row["defects"] if "defects" in row else f"violated {row['violated']} lb {row['epsilon_lb']:.3f}"
                print(f"{name} eps {epsilon:g} seed {seed}: {said} ({row['seconds']} s)", flush=True)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def gallery_table(rows: list[dict], part: str) -> list[str]:
    """One row per (function, claimed epsilon, seed): the verdict, the headline bound and its power, the observers
    rejecting the claim, the best observer's guesses right (of 100 black-box; white-box of 200)."""
    if not rows:
        return []
    head = "| function | claimed eps (seed) | flagged | bound of at most | observers rejecting | best right"
    lines = ["", f"### {part}", "", head + " | test accuracy |", "|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["function"], r["claimed_epsilon"], r["seed"])):
        best = max(r["tests"].items(), key=lambda kv: kv[1][0] / kv[1][1])
        lines.append(
            f"| {r['function']} | {r['claimed_epsilon']:g} ({r['seed']}) | {'**yes**' if r['violated'] else 'no'} "
            f"| {r['epsilon_lb']:.2f} of {r['max_attainable']:.2f} | {', '.join(r['rejected_by']) or '-'} "
            f"| {best[1][0]}/{best[1][1]} ({best[0]}) | {r['test_accuracy']:.2f} |"
        )
    return lines


def structural_table(rows: list[dict], alarms: list[dict]) -> list[str]:
    """Per function, the defects its run shows at each claimed epsilon; then the correct functions over seeds."""
    if not rows:
        return []
    lines = ["", "### structural", "", "| function | " + " | ".join(f"claimed {e:g}" for e in STRUCTURAL_EPSILONS)]
    lines[-1] += " |"
    lines.append("|---|" + "---|" * len(STRUCTURAL_EPSILONS))
    for name in sorted({r["function"] for r in rows}):
        cells = []
        for eps in STRUCTURAL_EPSILONS:
            got = [r for r in rows if r["function"] == name and r["claimed_epsilon"] == eps]
            cells.append(", ".join(f"**{k}**" for k in got[0]["defects"]) or "none" if got else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    every = rows + alarms
    correct = [r for r in every if r["function"] in ("correct", "opacus", "public_init", "opacus_public_init")]
    if correct:
        lines += ["", "| correct function | claimed eps | seeds | runs with a defect |", "|---|---|---|---|"]
        for name in sorted({r["function"] for r in correct}):
            for eps in STRUCTURAL_EPSILONS:
                got = [r for r in correct if r["function"] == name and r["claimed_epsilon"] == eps]
                if got:
                    seeds = sorted(r["seed"] for r in got)
                    flagged = sum(bool(r["defects"]) for r in got)
                    lines.append(f"| {name} | {eps:g} | {seeds[0]}-{seeds[-1]} ({len(got)}) | {flagged} |")
    return lines


def table() -> str:
    """The gallery tables (black-box; white-box through the Opacus hook) and the false-alarm counts."""
    lines: list[str] = []
    for part in ("gallery", "whitebox"):
        lines += gallery_table(read(HERE / f"{part}.jsonl"), part)
    lines += structural_table(read(HERE / "structural.jsonl"), read(HERE / "structural_alarms.jsonl"))
    rows = read(HERE / "alarms.jsonl")
    if rows:
        lines += ["", "### alarms", "", "| correct function | claimed eps | seeds | flagged | largest bound |",
                  "|---|---|---|---|---|"]  # fmt: skip
        for name in sorted({r["function"] for r in rows}):
            for eps in EPSILONS:
                got = [r for r in rows if r["function"] == name and r["claimed_epsilon"] == eps]
                if got:
                    seeds = sorted(r["seed"] for r in got)
                    flagged, top = sum(r["violated"] for r in got), max(r["epsilon_lb"] for r in got)
                    lines.append(f"| {name} | {eps:g} | {seeds[0]}-{seeds[-1]} ({len(got)}) | {flagged} | {top:.2f} |")
    return "\n".join(lines)


def main() -> None:
    from miaudit_bench import dp_gallery

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["gallery", "alarms", "whitebox", "structural", "table"])
    p.add_argument("--epochs", type=int, default=30, help="structural: the functions' epochs")
    p.add_argument("--seeds", default="0")
    p.add_argument("--only", nargs="*", help="these gallery functions only")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.part == "table":
        print(table())
        return
    if args.part == "structural":
        names = args.only or list(dp_gallery.GALLERY)
        out = args.out or HERE / "structural.jsonl"
        run(names, seeds_of(args.seeds), out, lambda n, e, s: structural(n, e, s, args.epochs), STRUCTURAL_EPSILONS)
        return
    default = {"gallery": list(dp_gallery.GALLERY), "alarms": ["correct", "opacus"]}
    names = args.only or default.get(args.part, ["opacus", "opacus_more_epochs"])
    gradient = WHITE_BOX if args.part == "whitebox" else None
    run(names, seeds_of(args.seeds), args.out or HERE / f"{args.part}.jsonl", lambda n, e, s: audit(n, e, s, gradient))


if __name__ == "__main__":
    main()
