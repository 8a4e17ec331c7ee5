"""Typed results of each command, hand-built with the numbers the gate's tests need (no audit runs)."""

from __future__ import annotations

from typing import Any

from _results import version_1_results

from miaudit.results import AuditReport, BlindTest, DatasetInference, DPAudit, RecordsAtRisk, Verdict
from miaudit.results.unlearning import Method, UnlearningSection


def row(label: str, auc: float, tpr01: float, lo01: float) -> dict[str, Any]:
    return {
        "name": label, "label": label, "kind": "test", "references": 2, "params": {}, "p_values": "calibrated",
        "seconds": {"reference_training": 0, "attack": 0}, "auc": auc, "auc_ci": [auc - 0.05, auc + 0.05],
        "tpr_at_fpr": {"0.001": tpr01 / 2, "0.01": tpr01, "0.05": 2 * tpr01},
        "tpr_at_fpr_ci": {"0.001": [0, tpr01], "0.01": [lo01, tpr01 + 0.05], "0.05": [tpr01, 3 * tpr01]},
    }  # fmt: skip


def membership(leaks: bool = True, at_risk: int | None = 3) -> AuditReport:
    """A run's results: two attacks (the second the stronger), a verdict, the records at risk."""
    base = AuditReport.from_dict(
        {
            **version_1_results(attacks=[row("lira", 0.6, 0.04, 0.02), row("rmia", 0.7, 0.08, 0.05)]),
            "schema_version": 5,
            "verdict": None,
        }  # fmt: skip
    )
    verdict = Verdict(statement="...", leaks=leaks, attack="rmia", fpr_level=0.01, tpr=0.08, p_value=1e-6,
                      adjusted_p_value=6e-6)  # fmt: skip
    risk = RecordsAtRisk(fdr=0.05, attack="rmia", count=at_risk, why_none=None if at_risk is not None else "no test")
    return base.model_copy(update={"verdict": verdict, "records_at_risk": risk})


def other(**sections: Any) -> AuditReport:
    return AuditReport.from_dict(version_1_results()).model_copy(update=sections)


def dp(violated: bool | None, eps: float = 2.5) -> AuditReport:
    a = DPAudit(kind="one-run", verdict="...", epsilon_lb=eps, confidence=0.95, delta=1e-5, violated=violated,
                declared_epsilon=1.0)  # fmt: skip
    return other(dp_audit=a)


def unlearned(verdict: str) -> AuditReport:
    u = UnlearningSection.model_construct(verdict=verdict, p_value=0.002, p_remembered=0.001, p_over_forgotten=0.999,
                                          level=0.05, remembered=[1, 2, 3, 4], forget=list(range(50)),
                                          method=Method(name="noop", label="noop"))  # fmt: skip
    return other(unlearning=u)


def inferred(used: bool | None) -> AuditReport:
    blind = BlindTest(auc=0.51, ci=[0.45, 0.57], shifted=False, classifier="lr")
    d = DatasetInference.model_construct(used=used, p_value=0.001, level=0.05, auc=0.9, fraction=None, n_suspect=100,
                                         n_validation=300, blind=blind)  # fmt: skip
    return other(dataset_inference=d)


CONFIGS = {  # a config of each command that reads in milliseconds (no work is done: each is refused first)
    "run": {"dataset": "digits"},
    "score": {"outputs": {"layout": "npz", "path": "absent.npz"}, "attacks": ["lira"]},
    "dp-audit": {"dataset": "digits"},
    "unlearn": {"dataset": "digits", "unlearning": {"forget": 10, "method": "noop"}},
    "infer-dataset": {"dataset": "digits", "suspect": [1, 2, 3], "validation": [4, 5, 6]},
}
