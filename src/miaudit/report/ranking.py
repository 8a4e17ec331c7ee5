"""The per-record risk ranking as the reports read it from results.json (``basis_row``: which attack orders the
records, the rule ``membership.ranking.risk_basis`` applies to a run) and the per-record table's columns."""

from __future__ import annotations

import re

from ..attacks import recommended, registry
from ..results import AttackRow, AuditReport, Kind
from .table import ScoresTable


def attack_kind(name: str) -> Kind:
    """An attack's kind (membership test or risk ranking), a fact of its registry entry (``AttackInfo.kind``;
    a name the registry does not know, e.g. in an older results.json, is a test). results.json's rows carry it
    (``attacks[].kind``), so their readers ask the row, not the name."""
    return "ranking" if registry.is_ranking(name) else "test"


def slug_of(name: str, label: str, references: int) -> str:
    """The column prefix of an attack row from its results.json name, label and references."""
    extended = label != (f"{name} (n={references})" if references else name)  # a user's or a twin's
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label if extended else f"{name}_n{references}").strip("_")


def basis_row(results: AuditReport, named: str | None = None) -> AttackRow:
    """``membership.ranking.risk_basis`` read from results.json: the row whose output orders the per-record table."""
    return results.attacks[basis_index([(a.name, a.label, a.references) for a in results.attacks], named)]


def basis_index(rows: list[tuple[str, str, int]], named: str | None) -> int:
    """The risk basis's rule on (name, label, references) rows: the row's position."""
    found = [i for i, (_, label, _) in enumerate(rows) if named is not None and label == named]
    if found:
        return found[0]
    for name in recommended.RISK_BASIS:
        at = [i for i, row in enumerate(rows) if row[0] == name]
        if at:
            return max(at, key=lambda i: rows[i][2])
    return 0


def row_slug(row: AttackRow) -> str:
    """The column prefix of a results.json attack row in the per-record table."""
    return slug_of(row.name, row.label, row.references)


def ranked_by(basis: AttackRow, frame: ScoresTable, named: str | None) -> tuple[str, list[str], str]:
    """The column the records are ranked by, the columns shown beside it, and why this attack ranks them."""
    s = row_slug(basis)
    screened = named == basis.label and f"{s}.p_value_screened" in frame.columns
    if screened:
        col, extra = f"{s}.p_value_screened", [f"{s}.q_value_screened"]
    elif basis.p_values is not None and f"{s}.p_value" in frame.columns:
        col, extra = f"{s}.p_value", [c for c in (f"{s}.q_value",) if c in frame.columns]
    else:
        col, extra = f"{s}.score", []
    why = ", the test that names the records at risk" if named == basis.label else ""
    return col, extra, why


RECORD_COLUMNS = {
    "risk_rank": "1 = most exposed: by the p-values of the test that names the records at risk "
    "(records_at_risk.attack in results.json: its records flagged are the top ranks), ties by its score; without "
    "records at risk, the preferred test (MR-BMIA, BMIA, LiRA, BaVarIA-n, GLS, else the first attack)",
    "record": "the record's row in the data set",
    "set": "Python API: which argument the record came from (members, nonmembers, queries)",
    "position": "Python API: the record's row in that argument",
    "original_record": "miaudit score: the record's id in the original data (the layout's records)",
    "member": "1 when the target trained on the record (only when membership is known)",
    "label": "the record's class",
    "at_risk": "1 when the record is named at risk at the run's FDR (records_at_risk in results.json: its attack, "
    "procedure and p-values)",
}
ATTACK_COLUMNS = {  # per attack row, after its column name (<name>_n<K>, or its label when one is given)
    "score": "the attack's score: higher is more likely a member",
    "p_value": "the p-value to quote (tests only): calibrated when the run calibrates, else the attack's own",
    "log_p": "its natural log, exact where the p-value underflows",
    "q_value": "Benjamini-Hochberg q-value of p_value over the queries: the record is flagged at FDR q when <= q",
    "p_value_screened": "conformal p-value among the calibration records a screen on the references kept "
    "(records_at_risk.screen); empty where the screen did not keep the record",
    "q_value_screened": "q-value of p_value_screened under the procedure records_at_risk names (Storey's adaptive "
    "BH over the screened queries): flagged at FDR q when <= q",
    "p_value_raw": "the attack's own p-value before calibration (calibrated tests only)",
    "log_p_raw": "its natural log",
}
