"""results.json: what a run found, with its parameters, environment and data fingerprint."""

from __future__ import annotations

import json

import numpy as np

from .. import metrics
from .._version import __version__
from ..pipeline import AttackRun, RunResult
from .ranking import risk_values

UNKNOWN_MEMBERSHIP_NOTE = (
    "membership of the queries is unknown: no ROC metrics; each attack's p-values and "
    "the risk ranking (scores.csv, column risk_rank) are the result"
)


def results_json(res: RunResult) -> dict:
    exp, cfg = res.experiment, res.experiment.cfg
    known = exp.membership_known
    out = {
        "miaudit_version": __version__,
        "dataset": cfg.dataset.label,
        "n_records": len(exp.dataset),
        "membership": "known" if known else "unknown",
        "n_queries": len(exp.query_idx),
        "n_members": int(exp.is_member.sum()) if known else None,
        "n_nonmembers": int((~exp.is_member).sum()) if known else None,
        "n_population": len(exp.split.population),
        "n_validation": len(exp.split.validation),
        "model": exp.target.architecture or cfg.model,
        "reference_model": (exp.references[0].architecture or cfg.reference_architecture) if exp.references else None,
        "mode": cfg.mode,
        "seed": cfg.seed,
        "references": len(exp.references),
        "target": {**exp.target_accuracy(), "training_seconds": exp.target.seconds, "source": exp.target.source},
        "reference_models": [
            {"train_accuracy": r.train_accuracy, "seconds": r.seconds, "cached": r.cached} for r in exp.references
        ],
        "attacks": [
            {
                "name": r.attack.name,
                "label": r.attack.label,
                "references": r.attack.references,
                "params": r.attack.params.model_dump(mode="json", exclude={"label"}),
                **(r.metrics.to_json() if known else ranking_json(r, exp.query_idx)),
                "seconds": r.seconds,
            }
            for r in res.attacks
        ],
        "config": json.loads(cfg.model_dump_json()),
    }
    return out if known else {**out, "note": UNKNOWN_MEMBERSHIP_NOTE}


def ranking_json(run: AttackRun, query_idx: np.ndarray, top: int = 10) -> dict:
    """Without membership there is no ROC: the most exposed records and how many each test flags."""
    out = {
        "most_exposed": [int(i) for i in query_idx[np.argsort(-risk_values(run), kind="stable")[:top]]],
        "n_nan_scores": int(np.isnan(run.result.scores).sum()),
    }
    if run.result.log_pvalues is not None:
        out["n_p_below"] = {str(a): int((run.result.log_pvalues < np.log(a)).sum()) for a in metrics.ALPHAS}
    return out
