"""``benchmarks/results/speed.md`` from ``speed.json``: contenders side by side per task, every cell, growth."""

from __future__ import annotations

from typing import Any

HEADLINE = (64, 50_000, 100)


def _fmt(row: dict[str, Any], cold: dict[str, Any] | None) -> str:
    if "skipped" in row:
        return f"| {row['contender']} | skipped: {row['skipped']} | | | | | |"
    if "failed" in row:
        return f"| {row['contender']} | failed ({row['failed'][:80]}) after {row['wall_s']:.1f} s | | | | | |"
    ratio = f"{row['wall_s'] / cold['wall_s']:.2f}x" if cold and "wall_s" in cold else ""
    rho = row.get("spearman_vs_miaudit", "")
    return (
        f"| {row['contender']} | {row['wall_s']:.1f} | {row['cpu_s']:.1f} | {_gb(row)} | "
        f"{row['records_per_s']:,.0f} | {ratio} | {rho} |"
    )


def _gb(row: dict[str, Any]) -> str:
    return f"{row['rss_gb']:.2f}" if "rss_gb" in row else "-"


def _headline(rows: list[dict[str, Any]]) -> tuple[int, int, int]:
    cells = {(r["K"], r["N"], r["C"]) for r in rows}
    return HEADLINE if HEADLINE in cells else max(cells, key=lambda c: c[0] * c[1] * c[2])


def markdown(results: dict[str, Any]) -> str:
    rows = results["rows"]
    hw = results["hardware"]
    load = ", ".join(f"{x:.1f}" for x in results["load_average_at_start"])
    lines = [
        "# Scoring speed: miaudit beside a plain numpy floor and the peers",
        "",
        f"`{results['command']}`; seeded synthetic float32 logits (seed 26) in miaudit's npz layout, half the",
        "records queried, half population; every contender in its own process (wall, CPU, peak RSS of that",
        "process); miaudit cold = `miaudit score` on a fresh cache (signals computed and stored), warm = again.",
        f"Hardware: {hw.get('cpu')}, {hw.get('cores')} cores, shared with other jobs (load average {load} at the",
        "start): single timings are noisy, compare ratios within a cell. Ratio = the contender's wall time /",
        "miaudit cold's (below 1: faster than miaudit). Spearman: its scores' ranks against miaudit's.",
        f"Peers: {', '.join(f'{k}: {v}' for k, v in results['peers'].items())}.",
        "",
        *(line for note in results.get("notes", []) for line in (f"**Note.** {note}", "")),
    ]
    if results["dropped_cells"]:
        dropped = ", ".join(f"K={d['K']} N={d['N']:,} C={d['C']}" for d in results["dropped_cells"])
        lines += [f"Left out: {dropped} (reference logits over 2 GB: not feasible on this machine).", ""]
    k, n, c = _headline(rows)
    lines += [f"## K = {k}, N = {n:,}, C = {c}", ""]
    for task in dict.fromkeys(r["task"] for r in rows):
        here = [r for r in rows if (r["K"], r["N"], r["C"], r["task"]) == (k, n, c, task)]
        if not here:
            continue
        cold = next((r for r in here if r["contender"] == "miaudit (cold)"), None)
        lines += [f"**{task}**", "", "| contender | wall s | CPU s | peak RSS GB | records/s | ratio | Spearman |"]
        lines += ["|---|---|---|---|---|---|---|", *(_fmt(r, cold) for r in here), ""]
    lines += [
        "## Every cell (wall seconds; ratio to miaudit cold)",
        "",
        "| K | N | C | task | " + " | ".join(names := list(dict.fromkeys(r["contender"] for r in rows))) + " |",
        "|---" * (4 + len(names)) + "|",
    ]
    for cell in dict.fromkeys((r["K"], r["N"], r["C"], r["task"]) for r in rows):
        got = {r["contender"]: r for r in rows if (r["K"], r["N"], r["C"], r["task"]) == cell}
        cold = got.get("miaudit (cold)", {}).get("wall_s")
        cols = []
        for name in names:
            r = got.get(name, {})
            w = r.get("wall_s")
            cols.append("-" if w is None or "failed" in r else f"{w:.1f}" + (f" ({w / cold:.2f}x)" if cold else ""))
        lines.append(f"| {cell[0]} | {cell[1]:,} | {cell[2]} | {cell[3]} | " + " | ".join(cols) + " |")
    lines += ["", "## Growth of wall time (least-squares exponents of K, N, C)", "", "| task / contender | K | N | C |"]
    lines += ["|---|---|---|---|"] + [
        f"| {key} | {e['K']} | {e['N']} | {e['C']} |" for key, e in results["growth_exponents"].items()
    ]
    return "\n".join(lines) + "\n"
