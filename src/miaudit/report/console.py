"""What the console shows of an audit's results when ``miaudit run`` or ``miaudit score`` ends: the verdict,
the notes, the attack choice, a table (metrics with intervals, or the ranking of queries of unknown membership)
and the records at risk. Tables print whole, however wide, when the output is no terminal."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from rich import box
from rich.console import Console
from rich.table import Table

from .. import progress
from ..errors import MiauditError
from ..results import Answer, AuditReport, Metrics
from . import dp_section, inference, sections, unlearning

T = TypeVar("T")


def command(work: Callable[[], T], out: Path, quiet: bool, verbose: bool) -> T:
    """A command that lives beside its package (``miaudit unlearn``, ``miaudit infer-dataset``) run as ``miaudit.cli``'s
    are: logging at --quiet / --verbose; bad input one line on stderr, exit 2; Ctrl-C or SIGTERM one line saying
    what was kept, exit 130 or 143 (the shell's codes)."""
    err = Console(stderr=True)
    progress.SESSION["trained"] = 0  # what this command trains: an interrupt reports it
    progress.configure_logging(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    try:
        return work()
    except MiauditError as e:
        refuse(e)
    except KeyboardInterrupt:
        from ..data import default_cache_dir

        err.print(progress.interrupted(default_cache_dir(), out), highlight=False, soft_wrap=True)
        raise SystemExit(143 if isinstance(sys.exc_info()[1], progress.Terminated) else 130) from None


def refuse(e: Exception) -> NoReturn:
    """Bad input: one line on stderr naming the field, exit 2 (every command's)."""
    Console(stderr=True).print(f"[bold red]error:[/bold red] {e}", highlight=False, soft_wrap=True)
    raise SystemExit(2) from None


def summary(results: AuditReport, out: Path, start: float, explain: bool = False) -> None:
    """What ``miaudit run`` and ``miaudit score`` print when done: the answer a newcomer reads in ten seconds, the
    verdict first, then the notes, the attacks ``auto`` ran, the table and the records at risk, each in plain words;
    the procedures and their numbers stay in report.md, unless ``explain`` (``--explain``, ``-v``) prints them here."""
    for line in _verdict_lines(results, explain):
        _say(line)
    for note in results.notes or []:  # then what the numbers below do not promise
        Console().print(f"[bold yellow]note:[/bold yellow] {note}", highlight=False, soft_wrap=True)
    for line in sections.choice_lines(results, table=False) if explain else _choice_line(results):
        _say(line)
    _print_table(_metrics_table(results) if results.membership_known else _ranking_table(results))
    if said := _records_at_risk(results, explain):
        _say(said)
    more = "" if explain else "; how each answer was reached: report.md, or --explain"
    _say(f"wrote {out}/ in {time.perf_counter() - start:.0f} s{more}")


def answer_summary(results: AuditReport, out: Path, explain: bool = False) -> None:
    """What ``miaudit dp-audit``, ``unlearn`` and ``infer-dataset`` print when done: the answer (``results.answer``)
    a newcomer reads in ten seconds: its plain sentence, the number it rests on, where the files went. With
    ``explain`` (``--explain``, ``-v``): the procedure and its numbers (the answer's ``detail``), then the lines
    report.md opens with."""
    answer = results.answer
    if answer is None or explain:
        lines = [*(answer_lines(answer, explained=True) if answer else []), *_explained(results)]
        for line in [*lines, f"wrote {out}/"]:
            _say(line.replace("**", ""))
        return
    for line in [*answer_lines(answer), f"wrote {out}/; how the answer was reached: report.md, or --explain"]:
        _say(line)


def answer_lines(answer: Answer, explained: bool = False) -> list[str]:
    """The answer's sentence and the number it rests on (``explained``: and its procedure)."""
    rests = f"Rests on: {answer.statistic} " + ("n/a" if answer.value is None else f"{answer.value:.3g}")
    if answer.p_value is not None:
        rests += f", p = {answer.p_value:.2g}" + ("" if answer.level is None else f" (level {answer.level:g})")
    return [answer.summary, rests, *([f"How: {answer.detail}"] if explained else [])]


def _explained(results: AuditReport) -> list[str]:
    """The lines under an explained answer: each audit's report.md opening, its section's own words."""
    if results.dataset_inference is not None:  # its sentence is the answer's: the power line
        return inference.explain_lines(results.dataset_inference)[1:]
    if results.unlearning is not None:  # its sentence is in the answer's detail: the AUCs and the records named
        return unlearning.explain_lines(results)[1:]
    a = results.dp_audit  # its verdict sentence is the answer's detail: the f-DP test and the bounds
    return [] if a is None else [a.gdp_test.statement if a.gdp_test else "", dp_section.console_line(a)]


def _say(line: str) -> None:
    """One line of the summary, unwrapped; nothing for an empty one (report.md's paragraph breaks)."""
    if line:
        Console().print(line, highlight=False, markup=False, soft_wrap=True)


def _verdict_lines(results: AuditReport, explain: bool) -> list[str]:
    """The verdict: its plain sentence (``summary``), or with ``explain`` the statement report.md heads with, the
    procedure's numbers in it. A DP audit's DP verdict (its own section's words) comes first."""
    v = results.verdict
    if explain or v is None or v.summary is None or results.dp_audited:
        return [line.replace("**", "") for line in sections.verdict_lines(results) if line]
    return [f"Verdict: {v.summary}"]


def _choice_line(results: AuditReport) -> list[str]:
    """``attacks: auto`` in one line: what it ran, and how it chose without reading the target's membership."""
    choice = results.attack_choice
    if not choice:
        return []
    if not choice.chosen:
        return [f"Attacks: auto, {choice.why}."]
    return [f"Attacks: auto ran {', '.join(choice.chosen)}, the strongest with the references as stand-in targets."]


def _records_at_risk(results: AuditReport, explain: bool) -> str:
    """The records at risk in one sentence (``summary``), or with ``explain`` (and in files older than the summary)
    the procedure and its numbers (``note``); in canary words in a DP audit."""
    risk = results.records_at_risk
    if risk is not None and risk.summary and not explain:
        said = f"Records at risk: {risk.summary}"
        return sections.canary_words(said) if results.dp_audited else said
    note = sections.records_at_risk_note(results)
    return f"records at risk: {note}" if note else ""


def _print_table(table: Table) -> None:
    """Print a table whole: rich cuts it to 80 columns ('0.…') when the output is no terminal, so a pipe or a
    log file gets it as wide as its widest row."""
    console = Console()
    if not console.is_terminal:
        wide = console.options.update_width(10_000)  # measured without the 80-column cap
        console = Console(width=max(console.width, console.measure(table, options=wide).maximum))
    console.print(table)


def _metrics_table(results: AuditReport) -> Table:
    t = results.target
    table = Table(
        title=f"{results.dataset}: target train/test "
        + (
            f"perplexity {t.train_perplexity:.1f}/{t.test_perplexity:.1f}"  # an LM's accuracy means nothing
            if t.train_perplexity is not None and t.test_perplexity is not None
            else f"accuracy {t.train_accuracy:.3f}/{t.test_accuracy:.3f}"
        ),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    levels = sorted(results.attacks[0].tpr_at_fpr or {}, key=float)  # the standard ones and min_fpr
    for col in ("attack", "AUC", *(f"TPR@{100 * float(k):g}%" for k in levels)):  # seconds: the log lines above
        table.add_column(col, justify="right" if col != "attack" else "left", no_wrap=True)
    # a risk ranking is no membership test (report.md: its own section)
    rows: list[tuple[str, Metrics]] = [(a.label, a) for a in results.tests]
    rows += [("blind baseline (text only)", results.blind_baseline)] if results.blind_baseline else []
    for label, a in rows:
        table.add_row(label, f"{a.auc:.3f}", *(_tpr_cell(a, k, results) for k in levels))
    unreliable = sorted({k for a in results.attacks for k in a.unreliable_fpr_levels or []})
    table.caption = "TPR in percent [95% interval]" + (
        f"; † unreliable: fewer than 10 false positives at FPR {', '.join(unreliable)}" if unreliable else ""
    )
    return table


def _tpr_cell(a: Metrics, level: str, results: AuditReport) -> str:
    lo, hi = (a.tpr_at_fpr_ci or {})[level]
    mark = "†" if level in (getattr(a, "unreliable_fpr_levels", None) or []) else ""
    return f"{100 * (a.tpr_at_fpr or {})[level]:.1f} [{100 * lo:.1f},{100 * hi:.1f}]{mark}"


def _ranking_table(results: AuditReport) -> Table:
    """Queries of unknown membership: no ROC, the records each attack puts most at risk."""
    table = Table(title=f"{results.dataset}: {results.n_queries} queries, membership unknown (no ROC)")
    risk = results.records_at_risk
    at_risk = f"at risk (FDR {risk.fdr if risk else 0.05:g})"
    for col in ("attack", at_risk, "raw p < 0.01", "raw p < 0.05", "most exposed records", "attack s"):
        table.add_column(col, justify="left" if col in ("attack", "most exposed records") else "right")
    by_attack = risk.by_attack if risk else {}
    for a in results.attacks:
        flagged = [str(a.n_p_below[k]) if a.n_p_below is not None else "-" for k in ("0.01", "0.05")]
        counted = str(by_attack[a.label].flagged_count) if a.label in by_attack else "-"
        exposed = ", ".join(map(str, (a.most_exposed or [])[:5]))
        table.add_row(a.label, counted, *flagged, exposed, f"{a.seconds.attack:.2f}")
    return table
