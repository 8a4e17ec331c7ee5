"""Which records a run names at risk, by which attack and which FDR procedure (docs/concepts.md, records at risk).

Per attack with a pooled null (``experiment.pseudo_targets``): p-values among the references' null scores, the
procedure checked on the pseudo-targets (whose membership is known) before it is applied to the target: Storey's
adaptive BH where its realized FDP there is at most the level, else plain BH. A pooled claim is validated when that
realized FDP is at most the level and the target's calibration records (its known non-members) are not
significantly more often at pooled p <= 0.01 than 1%. The headline attack follows a fixed order, not the results
(picking the attack with the most flags would be a selection the FDR does not cover): ``chosen``. Attacks without
a pooled null keep BH on their calibrated (or raw) p-values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..stats import fdr, pooled_null
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
    target_check: dict | None = None  # the target's calibration records against the pool (pooled_null)

    @property
    def flagged(self) -> np.ndarray:
        return self.q <= self.level

    @property
    def validated(self) -> bool:
        fails_on_target = self.target_check is not None and self.target_check["anti_conservative"]
        return self.validation is not None and self.validation.fdp.value <= self.level and not fails_on_target


def _pooled(run: AttackRun, level: float) -> Claim | None:
    pseudo = run.pseudo_targets
    if not pseudo:
        return None
    cal = run.calibration_scores  # the target's null scale; without it, every model's scores as they are
    scaled = cal is not None and bool(np.isfinite(cal).any())
    null = pooled_null.pool(pseudo, scaled)
    target = pooled_null.standardized(run.result.scores, cal) if scaled and cal is not None else run.result.scores
    log_p = pooled_null.log_pvalues(target, null)
    storey = pooled_null.validate(pseudo, level, "storey-bh", scaled)
    use_storey = storey is not None and storey.fdp.value <= level
    procedure = "storey-bh" if use_storey else "bh"
    validation = storey if use_storey else pooled_null.validate(pseudo, level, "bh", scaled)
    p = np.exp(log_p)
    q = fdr.procedure_qvalues(p, procedure)
    pi0 = fdr.storey_null_share(p) if use_storey else None
    check = pooled_null.calibration_check(cal, null) if scaled and cal is not None else None
    return Claim(run, True, log_p, procedure, q, validation, int(null.size), pi0, level, check)


def _headline(run: AttackRun, level: float) -> Claim | None:
    log_p = headline_log_pvalues(run)
    if log_p is None:
        return None
    return Claim(run, False, log_p, "bh", fdr.bh_qvalues(np.exp(log_p)), None, 0, None, level)


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
    """The headline claim, by a fixed order (no look at any result): the attack ranking the most exposed records
    (``ranking.risk_basis``) when its pooled claim is validated, else the first validated pooled claim in the run's
    order, else the risk-basis attack's claim on its own p-values, else the first."""
    basis = risk_basis(res)
    validated = [c for c in found if c.pooled and c.validated]
    if validated:
        return next((c for c in validated if c.run is basis), validated[0])
    unpooled = [c for c in found if not c.pooled] or found
    return next((c for c in unpooled if c.run is basis), next(iter(unpooled), None))


def headline(res: RunResult) -> tuple[list[Claim], Claim | None]:
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
