"""results.json's ``answer``: one shape for the four audits' answers. Its verdicts come from a fixed set per question;
each audit's package builds it from its decision (the words ``--fail-on`` reads); its summary names no procedure;
a file written before it still loads; the consoles of dp-audit, unlearn and infer-dataset print it first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _results import INFERENCE_SECTION, version_1_results
from pydantic import ValidationError

from miaudit.dataset_inference import answer as inference_answer
from miaudit.dp import answer as dp_answer
from miaudit.report import console
from miaudit.results import VERDICTS, Answer, AuditReport, ComparedWith, DatasetInference, DPAudit, ObserverTest
from miaudit.results.answer import PROCEDURE_NAMES

NAMED = re.compile("|".join(PROCEDURE_NAMES), re.IGNORECASE)


def test_the_verdict_words_are_fixed_per_question() -> None:
    assert VERDICTS == {
        "membership": ("leaks", "no_leak_detected"),
        "dp": ("violation", "no_violation", "no_claim"),
        "unlearning": ("verified", "not_forgotten", "over_forgotten", "no_claim"),
        "dataset_inference": ("used", "no_evidence", "no_claim"),
    }
    common = dict(statistic="x", value=1.0, summary="s", detail="d", evidence="dp_audit")
    assert Answer(question="dp", verdict="violation", **common).verdict == "violation"
    with pytest.raises(ValidationError, match="expected one of violation, no_violation, no_claim"):
        Answer(question="dp", verdict="leaks", **common)


def _dp(violated: bool | None, claim: float | None, lb: float, power: float, p: float) -> DPAudit:
    test = ObserverTest(observer="attack-p", threat_model="black-box", p_value=p, holm_adjusted_p_value=p,
                        rejected=bool(violated), bonferroni_bound=lb, bonferroni_max_attainable=power, correct=9,
                        guesses=10, canaries=100)  # fmt: skip
    return DPAudit(
        kind="one-run", verdict="the procedure's sentence (Holm over 1 observer)", epsilon_lb=lb, confidence=0.95,
        delta=1e-5, violated=violated, max_attainable=power, tests=[test],
        compared_with=None if claim is None else ComparedWith(claim="declared", epsilon=claim),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("violated", "claim", "lb", "power", "word", "said"),
    [
        (True, 1.0, 2.5, 4.0, "violation", "breaks its declared epsilon 1"),
        (False, 1.0, 0.2, 4.0, "no_violation", "No breach of the declared epsilon 1 found"),
        (False, 8.0, 0.2, 4.0, "no_violation", "too little to catch a breach"),
        (False, None, 0.2, 4.0, "no_claim", "No epsilon claimed"),
    ],
)
def test_a_dp_answer_reads_the_audits_decision(
    violated: bool, claim: float | None, lb: float, power: float, word: str, said: str
) -> None:
    a = dp_answer.answered(_dp(violated, claim, lb, power, 0.01 if violated else 0.9))
    assert a.answer is not None and a.answer.verdict == word and said in a.answer.summary
    assert a.answer.value == lb and a.answer.level == 0.05 and a.answer.p_value == (0.01 if violated else 0.9)
    assert not NAMED.search(a.answer.summary) and a.answer.detail == a.verdict  # the procedure: in the detail


@pytest.mark.parametrize(("used", "word"), [(True, "used"), (False, "no_evidence"), (None, "no_claim")])
def test_a_dataset_inference_answer_reads_used(used: bool | None, word: str) -> None:
    d = inference_answer.answered(DatasetInference.model_validate({**INFERENCE_SECTION, "used": used}))
    assert d.answer is not None and d.answer.verdict == word and d.answer.summary == d.verdict
    assert d.answer.p_value == d.p_value and d.answer.value == d.auc and "permutation" in d.answer.detail


def test_a_file_without_answers_still_loads(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps(version_1_results(dataset_inference=INFERENCE_SECTION)))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert loaded.dataset_inference is not None and loaded.answer is None


def _written(tmp_path: Path) -> AuditReport:
    d = inference_answer.answered(DatasetInference.model_validate(INFERENCE_SECTION))
    return AuditReport.model_validate({**version_1_results(), "schema_version": 5, "verdict": None,
                                       "dataset_inference": d.model_dump()})  # fmt: skip


def test_the_console_answers_in_three_lines_and_explains_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _written(tmp_path)
    assert results.answer is not None and results.answer.verdict == "used"
    console.answer_summary(results, tmp_path)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(lines) == 3 and lines[0] == results.answer.summary and not NAMED.search("\n".join(lines))
    assert lines[1].startswith("Rests on: AUC") and "--explain" in lines[2]
    console.answer_summary(results, tmp_path, explain=True)
    explained = capsys.readouterr().out
    assert results.answer.detail in explained and "permutation" in explained
