"""Which records a run names at risk, by which attack and which FDR procedure (docs/concepts.md, records at risk).

One attack names the records, chosen by a rule that reads no membership: the first attack ``attacks: auto`` chose
(it ranks the candidates on the references as pseudo-targets) that has calibration scores; without an auto choice,
the risk ranking's preferred test (``ranking.risk_basis``). Its records are flagged by ``stats.screened``: conformal
p-values among the calibration records, within a screen that reads only the references (their mean loss on each
record, the top half of the queries and calibration records together), Storey's adaptive BH at the run's FDR over
the screened queries. Every other attack's count under the same procedure is listed beside it (``by_attack``) and
never takes its place. Without calibration records an attack's raw p-values go through BH, said to be uncalibrated.
The design and its measurements: benchmarks/atrisk2/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..stats import multiple_testing, screened, signals
from .ranking import risk_basis

Basis = Literal["screened", "raw"]
VULNERABILITY = "the references' mean loss"


@dataclass(frozen=True)
class Screen:
    """Which queries and calibration records are tested, from the references alone."""

    vulnerability: str
    fraction: float
    queries: np.ndarray  # bool per query
    calibration: np.ndarray  # bool per calibration record
    query_vulnerability: np.ndarray | None = None  # the references' mean loss per query (the worst case reuses it)


@dataclass(frozen=True)
class Claim:
    """One attack's records at risk at the run's FDR."""

    run: AttackRun
    basis: Basis  # screened conformal p-values (``stats.screened``), or the attack's raw p-values
    log_p: np.ndarray  # NaN where the query is not tested (outside the screen)
    procedure: str  # a key of fdr.PROCEDURES
    q: np.ndarray  # NaN where not tested
    level: float  # the run's FDR
    screened: screened.Screened | None = None  # basis "screened": the procedure's numbers
    where: Screen | None = None  # basis "screened": the records it tested

    @property
    def flagged(self) -> np.ndarray:
        return np.nan_to_num(self.q, nan=np.inf) <= self.level


def screen(res: RunResult) -> Screen | None:
    """The references' mean loss on the queries and on the calibration records, and the records it keeps
    (``stats.screened.screen``); without references every record is kept. None without calibration records."""
    exp = res.experiment
    if not getattr(exp, "calibrates", False):
        return None
    inputs = exp.attack_inputs()
    cal = inputs.require(exp.calibration_part)
    nq, nc = len(inputs.queries.labels), len(cal.labels)
    if not exp.references:
        return Screen("none (no references)", 1.0, np.ones(nq, bool), np.ones(nc, bool))

    def mean_loss(records: object) -> np.ndarray:
        losses = signals.compute("loss", records.ref_logits, records.labels)  # type: ignore[attr-defined]
        return np.nanmean(np.asarray(losses, dtype=np.float64), axis=0)

    on_queries = mean_loss(inputs.queries)
    keep_q, keep_c = screened.screen(on_queries, mean_loss(cal), screened.SCREEN_FRACTION)
    return Screen(VULNERABILITY, screened.SCREEN_FRACTION, keep_q, keep_c, on_queries)


def _claim(run: AttackRun, level: float, where: Screen | None) -> Claim | None:
    cal = run.calibration_scores
    if where is not None and cal is not None and len(cal) == len(where.calibration):
        found = screened.screened_conformal(run.result.scores, cal, where.queries, where.calibration, level)
        return Claim(run, "screened", found.log_p, screened.PROCEDURE, found.q, level, found, where)
    if run.result.log_pvalues is None:
        return None
    lp = run.result.log_pvalues
    return Claim(run, "raw", lp, "bh", multiple_testing.bh_qvalues(np.exp(lp)), level)


def claims(res: RunResult, where: Screen | None) -> list[Claim]:
    """Each membership test's claim (risk rankings left out): screened conformal where the run calibrates
    (``where``: ``screen(res)``), else BH on its raw p-values."""
    level = float(res.experiment.cfg.fdr)
    out = []
    for run in res.attacks:
        if run.attack.info.is_ranking:
            continue
        claim = _claim(run, level, where)
        if claim is not None:
            out.append(claim)
    return out


def attack_rule(res: RunResult) -> str:
    """How the headline attack is chosen, in words (``chosen``)."""
    if res.attack_choice is not None and res.attack_choice.chosen:
        return "the first attack attacks: auto chose on the references as pseudo-targets (no membership read)"
    return "the risk ranking's preferred test (MR-BMIA, BMIA, LiRA, BaVarIA-n, else the first)"


def chosen(res: RunResult, found: list[Claim]) -> Claim | None:
    """The headline claim, fixed before any membership is read (module docstring): calibrated claims first."""
    pool = [c for c in found if c.basis == "screened"] or found
    if not pool:
        return None
    names = res.attack_choice.chosen if res.attack_choice is not None else []
    for name in names:
        rows = [c for c in pool if c.run.attack.name == name]
        if rows:
            return max(rows, key=lambda c: c.run.attack.references)
    basis = risk_basis(res)
    return next((c for c in pool if c.run is basis), pool[0])


def named(res: RunResult, where: Screen | None) -> tuple[list[Claim], Claim | None]:
    """Every attack's claim and the one the run headlines."""
    found = claims(res, where)
    return found, chosen(res, found)
