"""compare.json's model (``results.Comparison``): written as built, read back equal, unknown keys refused."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import ValidationError

from miaudit.results import AttackChange, Change, ComparedData, Comparison


def comparison() -> Comparison:
    tpr = Change(a=0.2, b=0.05, difference=0.05 - 0.2, ci=[-0.2, -0.1])
    auc = Change(a=0.7, b=0.6, difference=0.6 - 0.7, ci=[-0.15, -0.05])
    row = AttackChange(attack="lira (n=2)", verdict="lira (n=2): B leaks less than A", auc=auc,
                       tpr_at_fpr={"0.01": tpr})  # fmt: skip
    return Comparison(a="runs/a", b="runs/b", warnings=[], paired=True, pairing="paired", confidence=0.95,
                      data=ComparedData(a="digits", b="digits", same=True), resamples=1000, attacks=[row],
                      only_in_a=[], only_in_b=["gls"])  # fmt: skip


def test_compare_json_is_the_model_in_the_order_built_and_reads_back_equal() -> None:
    c = comparison()
    written = json.loads(c.to_json())
    assert list(written) == ["a", "b", "warnings", "paired", "pairing", "confidence", "data", "resamples",
                             "attacks", "only_in_a", "only_in_b"]  # fmt: skip
    assert list(written["attacks"][0]) == ["attack", "verdict", "auc", "tpr_at_fpr"]
    assert Comparison.model_validate(written) == c and Comparison.model_validate(written).to_json() == c.to_json()
    assert not list(jsonschema.Draft202012Validator(Comparison.json_schema()).iter_errors(written))


def test_an_unknown_key_in_compare_json_is_refused_naming_it() -> None:
    written = json.loads(comparison().to_json())
    written["attacks"][0]["auc"]["zz_renamed"] = 1
    with pytest.raises(ValidationError, match=r"attacks\.0\.auc\.zz_renamed"):
        Comparison.model_validate(written)
    assert not jsonschema.Draft202012Validator(Comparison.json_schema()).is_valid(written)
