"""Hand-written results.json content the results, report and unlearning tests share: the smallest version-1 file
(the keys every run has; no verdict, as version 1's DP audits wrote none) and a dataset_inference section."""

from __future__ import annotations

from typing import Any

from miaudit.report.records import environment


def version_1_results(**sections: Any) -> dict[str, Any]:
    """The keys every results.json of schema_version 1 has, then ``sections``."""
    return {
        "schema_version": 1,
        "miaudit_version": "0",
        "created": "2026-01-01T00:00:00+00:00",
        "dataset": "digits",
        "data_fingerprint": "x",
        "n_records": 10,
        "model": "mlp",
        "seed": 0,
        "target": {"source": "trained"},
        "calibration": {"calibrated": False, "records": 0},
        "attacks": [],
        "config": {},
        "environment": environment("cpu").model_dump(),
        **sections,
    }


INFERENCE_SECTION: dict[str, Any] = {
    "verdict": "Used: ...",
    "used": True,
    "p_value": 0.001,
    "level": 0.05,
    "auc": 0.9,
    "direction": 0.4,
    "calibrated": True,
    "permutations": 999,
    "n_suspect": 100,
    "n_validation": 300,
    "features": ["margin"],
    "fraction": {"estimate": 0.9, "ci": [0.8, 1.0], "member_auc": 0.93, "suspect_auc": 0.9},
    "blind": {"auc": 0.5, "ci": [0.43, 0.57], "shifted": False, "classifier": "lr"},
    "references_guard": {"auc": 0.52, "ci": [0.45, 0.59], "shifted": False},
    "power": {
        "basis": "references",
        "member_auc": 0.93,
        "power": 0.8,
        "smallest_suspect_set": 3,
        "detectable_fraction": 0.19,
        "power_if_all_used": 1.0,
    },
    "assumptions": ["exchangeable"],
}
