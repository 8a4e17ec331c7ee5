"""infer-dataset end to end on the tiny run: the command's files, its verdict first, its section typed and valid
against `miaudit schema`, a record outside the data refused in one line with nothing written; the verdict's
wording for each outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from miaudit.cli import app
from miaudit.dataset_inference import blind, calibrated, fraction, infer
from miaudit.dataset_inference import features as features_module
from miaudit.results import AuditReport

pytestmark = pytest.mark.slow  # every test here trains a model (or steps an optimizer)


def _config(tmp_path: Path, tiny_raw: dict[str, Any], suspect: list[int]) -> Path:
    raw = {**tiny_raw, "suspect": suspect, "validation": list(range(200, 260))}
    path = tmp_path / "infer.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_the_command_answers_and_writes_its_files(tmp_path: Path, tiny_raw: dict[str, Any]) -> None:
    cfg = _config(tmp_path, tiny_raw, list(range(0, 30)))
    result = CliRunner().invoke(app, ["infer-dataset", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()  # the progress lines on stderr come first here: CliRunner mixes the two
    at = next(i for i, line in enumerate(lines) if line.startswith(("Used:", "No evidence of use", "No claim:")))
    first = lines[at]
    assert lines[at + 1].startswith("Rests on: AUC") and lines[-1].startswith("wrote ")
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"results.json", "report.md", "report.html", "scores.csv"}
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    jsonschema.validate(doc, AuditReport.json_schema())
    d = AuditReport.load(tmp_path / "out" / "results.json").dataset_inference
    assert d is not None and d.n_suspect == 30 and d.n_validation == 60 and d.verdict == first
    assert 0 < d.p_value <= 1 and len(d.blind.ci) == 2 and d.assumptions
    assert (tmp_path / "out" / "report.md").read_text().splitlines()[2] == f"**{d.verdict}**"


def test_a_record_outside_the_data_is_refused_in_one_line(tmp_path: Path, tiny_raw: dict[str, Any]) -> None:
    cfg = _config(tmp_path, tiny_raw, [0, 1, 2, 10**9])
    result = CliRunner().invoke(app, ["infer-dataset", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "suspect: record 1000000000 is outside the data" in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1
    assert not (tmp_path / "out").exists()


def _test(auc: float, p: float) -> calibrated.SetTest:
    return calibrated.SetTest(auc, p, np.zeros(2), 999)


def test_verdict_sentences() -> None:
    calm = blind.BlindGuard(0.5, (0.4, 0.6), False, "lr")
    shifted = blind.BlindGuard(0.8, (0.7, 0.9), True, "lr")
    refs_calm = calibrated.ReferenceGuard(0.5, (0.43, 0.57), False)
    refs_apart = calibrated.ReferenceGuard(0.86, (0.81, 0.91), True)
    assert infer.verdict(None, _test(0.7, 0.001), shifted, None, 0.2).startswith("No claim: the suspect and validation")
    by_refs = infer.verdict(None, _test(0.6, 0.01), calm, None, 0.2, None, refs_apart)
    assert by_refs.startswith("No claim: the reference models") and "AUC 0.86 [0.81, 0.91]" in by_refs
    used = infer.verdict(True, _test(0.7, 0.001), calm, None, 0.2, None, refs_calm)
    assert used.startswith("Used:") and "p <= 0.001" in used and "beyond what reference models" in used
    assert "detects use of 20% of the set" in infer.verdict(False, _test(0.5, 0.4), calm, None, 0.2)
    assert "could not have detected use" in infer.verdict(False, _test(0.5, 0.4), calm, None, None)


def test_a_wide_fraction_interval_is_said_to_be_uninformative() -> None:
    calm = blind.BlindGuard(0.5, (0.4, 0.6), False, "lr")
    narrow = fraction.Fraction(0.9, (0.8, 1.0), 0.9, 0.86)
    wide = fraction.Fraction(0.9, (0.01, 0.98), 0.6, 0.59)
    assert "about 90% of it [80%, 100%] was used" in infer.verdict(True, _test(0.8, 0.001), calm, narrow, 0.2)
    said = infer.verdict(True, _test(0.6, 0.001), calm, wide, 0.9)
    assert "cannot tell how much of it was used" in said and "[1%, 98%], is wider than half" in said
    assert "about 90%" not in said


def test_no_false_power_statement_without_a_measured_leak() -> None:
    """Issue 54 item 11: references: 0 (the test's features only), or references that trained on some of the
    records (left out): "no evidence" says the power is unknown and why, never that the whole set's use could not
    have been detected, and never "no references" when there were some."""
    from miaudit.dataset_inference.features import Features
    from miaudit.dataset_inference.request import InferenceOptions

    rng = np.random.default_rng(3)
    values = rng.normal(size=(120, 3))
    is_suspect = np.arange(120) < 40
    x, y = rng.normal(size=(120, 4)), rng.integers(0, 3, 120)
    for left_out, why in ((False, "no reference models"), (True, "the references trained on some of these records")):
        m = infer.Measured(Features(["log_p_label", "margin", "neg_entropy"], values, 3), None, [], left_out)
        d, _ = infer.decide(m, is_suspect, x, y, 3, InferenceOptions(permutations=99), 0)
        assert d.used is False and d.power.basis == "unmeasured" and d.power.member_auc is None
        assert d.power.unmeasured_because is not None and d.power.unmeasured_because.startswith(why)
        assert "could not have detected" not in d.verdict and "its power is unknown" in d.verdict
        assert not d.calibrated and d.references_guard is None


def test_records_a_reference_trained_on_leave_the_references_out(tiny_config: Any) -> None:
    """A reference's own records look like members to it: with any of them among the suspects or the validation
    records the references are left out (reference-free signals only, no fraction), and said so."""
    from miaudit import pipeline
    from miaudit.dataset_inference import features

    exp = pipeline.prepare(tiny_config)
    val = exp.split.nonmembers[:8]
    mixed = infer.measure(exp, np.r_[exp.split.population[:8], val], val, 0)
    assert mixed.references_left_out and mixed.test.names == list(features.SIGNALS) and mixed.target_k1 is None
    clean = infer.measure(exp, np.r_[exp.split.members[:8], val], val, 0)
    assert not clean.references_left_out and len(clean.test.names) > len(features.SIGNALS)
    assert clean.target_k1 is not None and len(clean.pseudo) == 2


def test_the_python_front_door(tiny_raw: dict[str, Any], tmp_path: Path) -> None:
    import miaudit

    np.save(tmp_path / "v.npy", np.arange(200, 240))
    answer = miaudit.infer_dataset(tiny_raw, suspect=list(range(0, 20)), validation=tmp_path / "v.npy")
    assert answer.section.n_suspect == 20 and answer.section.n_validation == 40
    written = answer.report(tmp_path / "out")
    assert written.dataset_inference == answer.section and (tmp_path / "out" / "report.html").is_file()


def test_every_reference_the_config_names_is_used(tiny_raw: dict[str, Any]) -> None:
    """attacks: [attack-p] needs no reference, so `miaudit run` trains none; infer-dataset's features use the
    config's `references: 2` all the same (reference attacks among the features, a fraction estimated)."""
    from miaudit import config, pipeline

    raw = {**tiny_raw, "attacks": [{"name": "attack-p"}]}
    run = pipeline.prepare(config.from_dict(raw))
    assert run.references == []  # what `miaudit run` trains for these attacks: the target alone
    split = run.split
    answer = infer.from_config(raw, suspect=split.members[:30], validation=split.nonmembers[:40])
    assert answer.results.references == 2
    assert any(name not in features_module.SIGNALS for name in answer.section.features)
    assert answer.section.fraction is not None
