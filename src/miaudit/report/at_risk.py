"""The records at risk as the reports show them, from results.json and the per-record table alone: at_risk.csv
(``flagged_table``) and report.html's preview of a record (``preview``: a thumbnail or its text). Which records are
named, by which attack and procedure, is decided once by ``miaudit.membership.at_risk``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..results import AuditReport
from .ranking import slug_of
from .table import ScoresTable


def flagged_table(results: AuditReport, frame: ScoresTable) -> ScoresTable:
    """at_risk.csv, from results.json and the per-record table alone: the records named at risk (column
    ``at_risk``), smallest q first (ties in the table's order, most exposed first): ID, membership where known,
    label, the attack that flagged them, the procedure, its p-value and q-value."""
    risk = results.records_at_risk
    row = next((a for a in results.attacks if risk is not None and a.label == risk.attack), None)
    if risk is None or row is None or risk.procedure is None or "at_risk" not in frame:
        return ScoresTable({"record": np.empty(0, dtype=np.int64)})
    s = slug_of(row.name, row.label, row.references)
    claim = risk.by_attack.get(row.label)
    suffix = "_screened" if claim is not None and claim.basis == "screened" else ""
    p, q = frame[f"{s}.p_value{suffix}"], frame[f"{s}.q_value{suffix}"]
    rows = np.flatnonzero(frame["at_risk"] == 1)
    rows = rows[np.argsort(q[rows], kind="stable")]
    shown = ("record", "set", "position", "original_record", "member", "label")
    cols: dict[str, np.ndarray] = {c: frame[c] for c in frame.columns if c in shown}
    n = len(frame)
    cols |= {
        "attack": np.full(n, row.label, dtype=object),
        "procedure": np.full(n, risk.procedure, dtype=object),
        "p_value": p,
        "q_value": q,
    }
    return ScoresTable(cols).take(rows)


THUMBNAIL_PIXELS = 48
TEXT_CHARACTERS = 120


def preview(dataset: Any, record: int) -> tuple[str, str] | None:
    """What a reviewer sees of a record: ("image", data URI) for images, ("text", truncated text) for texts,
    None for anything else (tabular rows, a scores-only audit without inputs)."""
    texts = getattr(dataset, "texts", None)
    if texts:
        text = str(texts[record])
        return "text", text if len(text) <= TEXT_CHARACTERS else text[: TEXT_CHARACTERS - 1] + "…"
    x = getattr(dataset, "x", None)
    if x is None or x.ndim not in (3, 4) or x.shape[0] <= record:
        return None
    img = np.asarray(x[record], dtype=np.float64)
    if img.ndim == 3:
        if img.shape[0] in (1, 3) and img.shape[-1] not in (1, 3):  # channels first (torch)
            img = np.moveaxis(img, 0, -1)
        if img.shape[-1] not in (1, 3):
            return None
        img = img[..., 0] if img.shape[-1] == 1 else img
    lo, hi = float(img.min()), float(img.max())
    img = (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img)
    return "image", thumbnail_uri(img)


def thumbnail_uri(img: np.ndarray) -> str:
    """A small PNG of an image in [0, 1] (grey or RGB) as a data: URI."""
    import base64
    import io

    from matplotlib.image import imsave

    buf = io.BytesIO()
    imsave(buf, img, format="png", cmap="gray", vmin=0.0, vmax=1.0)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
