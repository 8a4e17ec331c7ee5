"""The per-record risk ranking of a run: which attack orders the records (``risk_basis``, the rule
``report.ranking.basis_row`` reads back from results.json), each record's exposure and their order."""

from __future__ import annotations

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..report.ranking import basis_index, slug_of


def slug(run: AttackRun) -> str:
    """Column-safe name of an attack row, e.g. 'lira_n8'."""
    return slug_of(run.attack.name, run.attack.label, run.attack.references)


def risk_basis(res: RunResult, named: str | None = None) -> AttackRun:
    """The attack row whose output orders the per-record risk table: the attack the records at risk are named by
    (``named``: results.json's ``records_at_risk.attack``, the audit's strongest test), else the first of
    ``recommended.RISK_BASIS`` that ran (with the most references), else the first row."""
    return res.attacks[basis_index([(r.attack.name, r.attack.label, r.attack.references) for r in res.attacks], named)]


def risk_values(run: AttackRun) -> np.ndarray:
    """Higher = more exposed: -log p where the attack is a test, else its score."""
    lp = run.result.log_pvalues
    return run.result.scores if lp is None else -lp


def risk_order(run: AttackRun, log_p: np.ndarray | None = None) -> np.ndarray:
    """The queries, most exposed first: by ``log_p`` (the p-values that named the records at risk; the records
    flagged are then the top ranks), else by ``risk_values``; ties by the attack's score, then by position."""
    primary = risk_values(run) if log_p is None else -np.asarray(log_p, dtype=np.float64)
    score = np.nan_to_num(np.asarray(run.result.scores, dtype=np.float64), nan=-np.inf)
    primary = np.nan_to_num(np.asarray(primary, dtype=np.float64), nan=-np.inf)
    return np.lexsort((np.arange(len(primary)), -score, -primary))


def headline_log_pvalues(run: AttackRun) -> np.ndarray | None:
    """The p-values miaudit headlines: calibrated where the run calibrated them, else the raw ones."""
    calibrated = run.result.log_pvalues_calibrated
    return calibrated if calibrated is not None else run.result.log_pvalues


# The columns of scores.csv and scores.parquet and what they hold: the docs' list is generated from here
# (docs/gen_reference.py), and a test holds a real run's columns to it.
