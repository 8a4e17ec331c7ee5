"""``miaudit plan``'s answer (``results.AuditPlan``): what ``forecast.lines`` prints from, its schema strict."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import ValidationError

from miaudit import forecast
from miaudit.results import AuditPlan, LevelPower, MembersForHalfwidth, ModelTime


def planned(workers: int | None = None) -> AuditPlan:
    level = LevelPower(tpr_halfwidth_at_tpr={"0.01": 0.02, "0.05": 0.04, "0.2": 0.07}, smallest_detectable_tpr=0.06,
                       false_positives_allowed=3, nonmembers_for_reliable_level=1000)  # fmt: skip
    return AuditPlan(
        dataset="digits", n_members=359, n_nonmembers=359, n_population=719, attacks=["lira (n=2)"], verdict_tests=3,
        levels={"0.01": level}, members_for_halfwidth=MembersForHalfwidth(halfwidth=0.01, at_tpr=0.05, members=1825),
        command="run", models=[ModelTime(role="target", cached=False, seconds=2.0, in_worker=False),
                               ModelTime(role="reference 1/2", cached=True, seconds=0.0, in_worker=False)],
        seconds_per_epoch={"target": 0.4}, **({} if workers is None else {"workers": workers}),
        estimated_training_seconds=2.0,
    )  # fmt: skip


def test_plan_lines_read_the_typed_answer() -> None:
    said = forecast.lines(planned())
    assert said[0].startswith("digits: 359 members, 359 non-members, 719 population; attacks lira (n=2)")
    assert "3 false positives allowed (unreliable: 10 need 1000 non-members)" in said[1]
    assert said[2] == "members for TPR 5% +-1: 1825"
    assert said[3].startswith("training (run): about 2 s for 1 model(s) to train; 1 of 2 in the cache")
    assert "in 4 worker processes" in forecast.lines(planned(workers=4))[-1]


def test_the_answer_validates_against_its_schema_and_refuses_unknown_keys() -> None:
    dumped = json.loads(planned().model_dump_json(exclude_unset=True))
    assert jsonschema.Draft202012Validator(AuditPlan.json_schema()).is_valid(dumped)
    dumped["levels"]["0.01"]["zz_renamed"] = 1
    with pytest.raises(ValidationError, match=r"levels\.`0\.01`\.zz_renamed"):
        AuditPlan.model_validate(dumped)
