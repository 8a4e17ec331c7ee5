"""``miaudit plan`` of an infer-dataset config: the record sets' sizes, the power table (power.py's own numbers),
the models of ``miaudit run`` on the config and their time; a record outside the data refused in one line before any
work; nothing trained, cached or written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from _cli import invoke, refused

import miaudit
from miaudit.config import describe
from miaudit.dataset_inference import power
from miaudit.forecast import inference_forecast
from miaudit.results import InferencePlan, ModelTime

SUSPECT, VALIDATION = list(range(30)), list(range(200, 240))


def _config(tmp_path: Path, tiny_raw: dict[str, Any], **keys: Any) -> Path:
    path = tmp_path / "infer.yaml"
    path.write_text(yaml.safe_dump({**tiny_raw, "suspect": SUSPECT, "validation": VALIDATION, **keys}))
    return path


def test_the_power_table_is_power_py_at_each_member_auc() -> None:
    table = inference_forecast.power_table(30, 40, 0.05)
    assert [row.member_auc for row in table] == list(inference_forecast.MEMBER_AUCS)
    for row in table:
        a = row.member_auc
        assert row.power_if_all_used == power.power_at(a, 1.0, 30, 40, 0.05)
        assert row.detectable_fraction == power.detectable_fraction(a, 30, 40, 0.05)
        assert row.smallest_suspect_set == power.smallest_suspect_set(a, 40, 0.05)
    # a larger leak is seen with more power, in a smaller set, at a smaller fraction
    powers = [row.power_if_all_used for row in table]
    assert powers == sorted(powers) and table[0].power_if_all_used < 0.5 < table[-1].power_if_all_used
    assert table[0].detectable_fraction is None and table[0].smallest_suspect_set is None  # 0.55: not with 40
    assert table[-1].smallest_suspect_set is not None and table[-1].smallest_suspect_set <= 30


def _plan(**keys: Any) -> InferencePlan:
    return InferencePlan(
        command="infer-dataset: the models of miaudit run", dataset="digits", n_records=300, n_suspect=30,
        n_validation=40, level=0.05, permutations=999, references=2, power=power.POWER,
        power_at=inference_forecast.power_table(30, 40, 0.05),
        models=[ModelTime(role="target", cached=False, seconds=2.0), ModelTime(role="reference 1/2", cached=True,
                                                                               seconds=0.0)],
        seconds_per_epoch={"target": 0.4}, estimated_training_seconds=2.0, **keys,
    )  # fmt: skip


def test_the_lines_read_the_typed_answer() -> None:
    said = inference_forecast.lines(_plan())
    assert said[0] == (
        "dataset inference on digits (300 records): 30 suspect and 40 validation records; level 0.05, "
        "999 permutations; 2 reference model(s)"
    )
    rows = said[3:8]
    assert rows[0].split() == ["0.55", "18%", "none", "none"]  # power_at(0.55, 1, 30, 40, 0.05) = 0.18
    assert rows[-1].split()[0] == "0.9" and rows[-1].split()[-1] == str(power.smallest_suspect_set(0.9, 40, 0.05))
    assert said[-1].startswith("training (infer-dataset: the models of miaudit run): about 2 s for 1 model(s)")


def test_the_answer_validates_against_the_printed_schema_and_refuses_unknown_keys() -> None:
    dumped = _plan().model_dump(mode="json", exclude_unset=True)
    assert jsonschema.Draft202012Validator(describe.printed_schema("inference-plan")).is_valid(dumped)
    with pytest.raises(ValueError, match="zz_renamed"):
        InferencePlan.model_validate({**dumped, "zz_renamed": 1})


def test_a_record_outside_the_data_is_refused_in_one_line(tmp_path: Path, tiny_raw: dict[str, Any]) -> None:
    path = _config(tmp_path, tiny_raw, suspect=[0, 1, 2, 5000])
    refused(invoke("plan", str(path)), "suspect: record 5000 is outside the data", "digits has 300 records")
    twice = invoke("plan", str(_config(tmp_path, tiny_raw)), "--set", "validation=[1, 2, 3, 1]")
    refused(twice, "validation: record 1 is listed more than once")
    refused(invoke("plan", str(_config(tmp_path, tiny_raw)), "--runs", "5"), "--runs", "not an infer-dataset config")


@pytest.mark.slow  # one epoch of each recipe is timed
def test_plan_of_an_infer_dataset_config(tmp_path: Path, tiny_raw: dict[str, Any], isolated_cache: Path) -> None:
    path = _config(tmp_path, tiny_raw)
    planned = miaudit.plan(path)
    assert isinstance(planned, InferencePlan)
    assert (planned.dataset, planned.n_records, planned.n_suspect, planned.n_validation) == ("digits", 300, 30, 40)
    assert planned.level == 0.05 and planned.permutations == 999 and planned.references == 2
    assert planned.power_at == inference_forecast.power_table(30, 40, 0.05)
    # the models of `miaudit run` on the config: the target and both references, none cached yet
    assert [(m.role, m.cached) for m in planned.models] == [
        ("target", False),
        ("reference 1/2", False),
        ("reference 2/2", False),
    ]
    assert planned.estimated_training_seconds > 0 and planned.queries is None
    assert not list(isolated_cache.rglob("meta.json"))  # trained nothing, cached no model
    # a dict plans the same; the command prints it, the level from inference.level
    assert isinstance(miaudit.plan(yaml.safe_load(path.read_text())), InferencePlan)
    res = invoke("plan", str(path), "--set", "inference.level=0.01")
    assert res.exit_code == 0, res.output
    out = res.output.splitlines()
    assert out[0].startswith("dataset inference on digits (300 records): 30 suspect and 40 validation records")
    assert "level 0.01" in out[0] and out[-1].startswith("training (infer-dataset: the models of miaudit run)")
    assert out[3].split()[:2] == ["0.55", f"{100 * power.power_at(0.55, 1.0, 30, 40, 0.01):.0f}%"]
    assert not list(isolated_cache.rglob("meta.json")) and not (tmp_path / "miaudit-runs").exists()
