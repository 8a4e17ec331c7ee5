"""scores.csv / scores.parquet: the per-record table, one row per query, most exposed first; the columns are
described in ``ranking.RECORD_COLUMNS`` and ``ranking.ATTACK_COLUMNS``."""

from __future__ import annotations

import numpy as np

from ..experiment.run import RunResult
from ..report.table import ScoresTable
from ..stats.multiple_testing import bh_qvalues
from .at_risk import Claim
from .ranking import headline_log_pvalues, risk_basis, risk_order, slug


def scores_frame(res: RunResult, found: list[Claim], head: Claim | None) -> ScoresTable:
    """The per-record risk table: one row per query, most exposed first; ``found``, ``head``: the run's claims of
    records at risk (``at_risk.named``, made once by ``decide.decide``)."""
    exp = res.experiment
    screened = {c.run.attack.label: c for c in found if c.screened is not None}
    # most exposed first: by the test that names the records at risk, on the p-values that named them
    basis = risk_basis(res, None if head is None else head.run.attack.label)
    order = risk_order(basis, head.log_p if head is not None and head.run is basis else None)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    cols = {"risk_rank": rank, "record": exp.query_idx, **exp.query_info}
    if exp.is_member is not None:
        cols["member"] = exp.is_member.astype(int)
    cols["label"] = exp.dataset.y[exp.query_idx]
    if head is not None:
        cols["at_risk"] = head.flagged.astype(int)
    for r in res.attacks:
        s = slug(r)
        cols[f"{s}.score"] = r.result.scores
        headline = headline_log_pvalues(r)
        if headline is not None:  # p_value / log_p: the headline (calibrated when the run calibrates)
            cols[f"{s}.p_value"], cols[f"{s}.log_p"] = np.exp(headline), headline
            cols[f"{s}.q_value"] = bh_qvalues(np.exp(headline))  # Benjamini-Hochberg: flagged at FDR q when <= q
        if (c := screened.get(r.attack.label)) is not None:
            cols[f"{s}.p_value_screened"], cols[f"{s}.q_value_screened"] = np.exp(c.log_p), c.q
        if r.result.log_pvalues_calibrated is not None and r.result.log_pvalues is not None:
            cols[f"{s}.p_value_raw"], cols[f"{s}.log_p_raw"] = np.exp(r.result.log_pvalues), r.result.log_pvalues
    return ScoresTable(cols).take(order)
