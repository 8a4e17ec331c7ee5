"""Which records a run names at risk, by which attack and which FDR procedure (docs/concepts.md, records at risk).

Per attack with a pooled null (``experiment.pseudo_targets``): p-values among the references' null scores, the
procedure checked on the pseudo-targets (whose membership is known) before it is applied to the target: Storey's
adaptive BH where its realized FDP there is at most the level, else plain BH. The headline attack is the one that
flags the most pseudo-target members with a realized FDP at most the level there: chosen without looking at the
target's membership, and without the selection over attacks that picking the most target flags would be. Attacks
without a pooled null keep BH on their calibrated (or raw) p-values; without a validated pooled claim the headline
is the attack that ranks the most exposed records (``ranking.risk_basis``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..stats import fdr, pooled_null
from .ranking import headline_log_pvalues, risk_basis


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
    null = pooled_null.pool(pseudo)
    log_p = pooled_null.log_pvalues(run.result.scores, null)
    storey = pooled_null.validate(pseudo, level, "storey-bh")
    use_storey = storey is not None and storey.fdp.value <= level
    procedure = "storey-bh" if use_storey else "bh"
    validation = storey if use_storey else pooled_null.validate(pseudo, level, "bh")
    p = np.exp(log_p)
    q = fdr.procedure_qvalues(p, procedure)
    pi0 = fdr.storey_null_share(p) if use_storey else None
    return Claim(run, True, log_p, procedure, q, validation, int(null.size), pi0, level)


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
    """The headline claim: the validated pooled claim with the most pseudo-target members flagged, else the claim
    of the attack ranking the most exposed records (``ranking.risk_basis``), else the first."""
    validated = [c for c in found if c.pooled and c.validated]
    if validated:
        return max(validated, key=lambda c: c.validation.true_discoveries if c.validation else 0)  # first on ties
    basis = risk_basis(res)
    return next((c for c in found if c.run is basis), next(iter(found), None))


def headline(res: RunResult) -> tuple[list[Claim], Claim | None]:
    """Every attack's claim and the one the run headlines."""
    found = claims(res)
    return found, chosen(res, found)
