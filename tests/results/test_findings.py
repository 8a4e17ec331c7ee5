"""results.findings.RecordsAtRisk: extra keys refused (extra="forbid"), and a section written before issue 45 (the
pooled null's keys, from location seed 0's results.json) still read."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from miaudit.results.findings import RecordsAtRisk

BEFORE_45: dict[str, Any] = {
    "fdr": 0.05,
    "attack": "pair-lr (n=4)",
    "count": 80,
    "procedure": "bh",
    "assumes": "Benjamini-Hochberg: valid for independent or positively dependent (PRDS) p-values",
    "p_values": "pooled null: rank among 8016 scores of 4 references as pseudo-targets",
    "expected_false_discoveries_at_most": 4.0,
    "smallest_p_value": 0.00012473493825620557,
    "pseudo_targets": {
        "count": 4,
        "null_scores": 8016,
        "realized_fdp": {
            "procedure": "bh",
            "value": 0.009,
            "ci": [0.0019, 0.026],
            "flagged": 335,
            "non_members": 3,
            "above_level": False,
            "worst_pseudo_target": 0.013,
            "members_flagged": 332,
        },  # fmt: skip
    },
    "realized_fdp": {"value": 0.0125, "ci": [0.0003, 0.068], "flagged": 80, "non_members": 1, "above_level": False},
    "n_calibration_records": 1002,
    "calibration_records_needed": 40079,
    "by_attack": {
        "bavaria-n (n=4)": {
            "count": 81,
            "procedure": "bh",
            "pooled": True,
            "pseudo_target_fdp": 0.018,
            "calibration_records_at_pooled_p_0.01": {
                "records": 1002,
                "share_at_p_0.01": 0.022,
                "ci": [0.0138, 0.033],
                "anti_conservative": True,
            },  # fmt: skip
            "count_calibrated": 0,
            "at_floor": 23,
        }
    },
    "note": "80 of 2004 records flagged at FDR 0.05 by pair-lr (n=4) (...)",
}


def test_a_section_written_before_issue_45_reads_back_to_the_same_keys() -> None:
    r = RecordsAtRisk.model_validate(BEFORE_45)
    assert r.why_none is None and r.by_attack["bavaria-n (n=4)"].calibration_check is not None
    assert r.model_dump(exclude_unset=True) == BEFORE_45


def test_unknown_keys_are_refused_at_every_level() -> None:
    with pytest.raises(ValidationError, match="extra"):
        RecordsAtRisk.model_validate({**BEFORE_45, "flagged_by_verdict": 3})
    claim = {**BEFORE_45["by_attack"]["bavaria-n (n=4)"], "surprise": 1}
    with pytest.raises(ValidationError, match="extra"):
        RecordsAtRisk.model_validate({**BEFORE_45, "by_attack": {"x": claim}})
