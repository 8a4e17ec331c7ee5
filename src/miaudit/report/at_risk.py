"""Which records a run names at risk, by which attack and which FDR procedure (docs/concepts.md, records at risk).

Per attack with a pooled null (``experiment.pseudo_targets``): p-values among the references' null scores, put on
the target's scale and tail-calibrated on its calibration records (``stats.pooled_null``), flagged by
Benjamini-Hochberg. Storey's adaptive BH needs exactly valid p-values, which the pooled tail (an extrapolation below
the calibration records' resolution) is not, so it is used where the p-values are conformal ranks (calibrated
claims). The procedure is run on every pseudo-target against the pool of the others, where membership is known:
a pooled claim is validated when its realized FDP there is at most the level. The headline attack is the verdict's
when its pooled claim is validated (one story: the attack that leaks most names the records), else the first
validated pooled claim by ``ranking.risk_basis``'s preference, else the risk-basis attack on its own p-values.
The verdict picks its attack on the target's membership; the FDR does not cover that choice, which is why the
realized FDP on the target (membership known) stands beside every count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..results import CalibrationCheck
from ..stats import fdr, pooled_null
from .leak_verdict import verdict
from .ranking import headline_log_pvalues, risk_basis
from .table import ScoresTable


@dataclass(frozen=True)
class Claim:
    """One attack's records at risk at the run's FDR."""

    run: AttackRun
    pooled: bool  # p-values from the references' null pool; False: calibrated or raw (the attack's headline)
    log_p: np.ndarray
    procedure: str  # a key of fdr.PROCEDURES
    q: np.ndarray
    validation: pooled_null.Validation | None  # the procedure on the pseudo-targets (pooled only)
    null_size: int  # pooled null scores (0: not pooled)
    pi0: float | None  # Storey's null-share estimate on the target's p-values
    level: float  # the run's FDR
    target_check: CalibrationCheck | None = (
        None  # the target's calibration records against the scaled pool, before the tail
    )
    # calibration corrects it (pooled_null.calibration_check)

    @property
    def flagged(self) -> np.ndarray:
        return self.q <= self.level

    @property
    def validated(self) -> bool:
        return self.validation is not None and self.validation.fdp.value <= self.level


def _pooled(run: AttackRun, level: float) -> Claim | None:
    pseudo = run.pseudo_targets
    if not pseudo:
        return None
    cal = run.calibration_scores  # the target's known non-members: its null's scale and tail
    n_cal = None if cal is None or not np.isfinite(cal).any() else int(np.isfinite(cal).sum())
    log_p = pooled_null.target_log_pvalues(run.result.scores, cal if n_cal else None, pseudo)
    null = pooled_null.pool(pseudo, scaled=n_cal is not None)
    validation = pooled_null.validate(pseudo, level, "bh", n_cal)
    q = fdr.procedure_qvalues(np.exp(log_p), "bh")
    check = pooled_null.calibration_check(cal, null) if n_cal and cal is not None else None
    return Claim(run, True, log_p, "bh", q, validation, int(null.size), None, level, check)


def _headline(run: AttackRun, level: float) -> Claim | None:
    """BH on the attack's own p-values; Storey's adaptive BH where they are conformal (calibrated)."""
    log_p = headline_log_pvalues(run)
    if log_p is None:
        return None
    p = np.exp(log_p)
    if run.result.log_pvalues_calibrated is None:
        return Claim(run, False, log_p, "bh", fdr.bh_qvalues(p), None, 0, None, level)
    pi0 = fdr.storey_null_share(p)
    return Claim(run, False, log_p, "storey-bh", fdr.procedure_qvalues(p, "storey-bh"), None, 0, pi0, level)


def claims(res: RunResult) -> list[Claim]:
    """Each attack's claim: pooled where the references give a null pool, else on its headline p-values."""
    level = float(res.experiment.cfg.fdr)
    out = []
    for run in res.attacks:
        claim = _pooled(run, level) or _headline(run, level)
        if claim is not None:
            out.append(claim)
    return out


def chosen(res: RunResult, found: list[Claim]) -> Claim | None:
    """The headline claim (module docstring)."""
    v = verdict(res)
    basis = risk_basis(res)
    validated = [c for c in found if c.pooled and c.validated]
    named = [c for c in validated if v is not None and c.run.attack.label == v.attack]
    if named or validated:
        return (named or [c for c in validated if c.run is basis] or validated)[0]
    unpooled = [c for c in found if not c.pooled] or found
    return next((c for c in unpooled if c.run is basis), next(iter(unpooled), None))


def named(res: RunResult) -> tuple[list[Claim], Claim | None]:
    """Every attack's claim and the one the run headlines."""
    found = claims(res)
    return found, chosen(res, found)


def flagged_table(res: RunResult, head: Claim | None) -> ScoresTable:
    """at_risk.csv: the flagged records, smallest q first: ID, membership where known, label, the attack that
    flagged them, its p-value and q-value."""
    exp = res.experiment
    if head is None:
        return ScoresTable({"record": np.empty(0, dtype=np.int64)})
    rows = np.flatnonzero(head.flagged)
    rows = rows[np.argsort(head.q[rows], kind="stable")]
    cols: dict[str, np.ndarray] = {"record": exp.query_idx, **exp.query_info}
    if exp.is_member is not None:
        cols["member"] = exp.is_member.astype(int)
    n = len(exp.query_idx)
    cols |= {
        "label": exp.dataset.y[exp.query_idx],
        "attack": np.full(n, head.run.attack.label, dtype=object),
        "procedure": np.full(n, head.procedure, dtype=object),
        "p_value": np.exp(head.log_p),
        "q_value": head.q,
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
