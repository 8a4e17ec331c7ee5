"""AuditReport against real outputs: ``miaudit run``, ``score`` and ``dp-audit`` results.json read back equal
(dump -> load -> dump), validated by the published JSON Schema; a results.json of the previous format (no
``schema_version``) migrated, or refused in one line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from miaudit import api, report
from miaudit.config import run as config
from miaudit.errors import DataError
from miaudit.membership import decide
from miaudit.results import SCHEMA_VERSION, AuditReport
from tests.conftest import TINY_RUN

SCHEMA = jsonschema.Draft202012Validator(AuditReport.json_schema())


def schema_errors(data: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in SCHEMA.iter_errors(data)]


def assert_round_trip(written: AuditReport, out: Path) -> dict[str, Any]:
    """The file on disk: schema_version first, valid against the schema, and read back to the same report."""
    text = (out / "results.json").read_text()
    on_disk = json.loads(text)
    assert next(iter(on_disk)) == "schema_version" and on_disk["schema_version"] == SCHEMA_VERSION
    assert schema_errors(on_disk) == []
    again = AuditReport.load(out / "results.json")
    assert again == written and again.dump() == on_disk
    assert again.to_json() == text  # key order included: the same file
    return on_disk


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[AuditReport, Path]:
    raw = {**copy.deepcopy(TINY_RUN), "attacks": [{"name": "attack-p"}, {"name": "attack-r"}, {"name": "gls"}]}
    out = tmp_path_factory.mktemp("run") / "out"
    return api.run(raw).report(out), out


@pytest.mark.slow
def test_a_run_round_trips_and_carries_each_attacks_kind(run_dir: tuple[AuditReport, Path]) -> None:
    written, out = run_dir
    on_disk = assert_round_trip(written, out)
    assert {a["name"]: a["kind"] for a in on_disk["attacks"]} == {
        "attack-p": "test",
        "attack-r": "test",
        "gls": "ranking",
    }
    assert [a.name for a in written.tests] == ["attack-p", "attack-r"]  # the ranking is no membership test
    assert written.verdict is not None and written.verdict.statement == on_disk["verdict"]["statement"]


@pytest.mark.slow
def test_the_previous_format_is_migrated(run_dir: tuple[AuditReport, Path], tmp_path: Path) -> None:
    """A file written before schema_version (the same keys, no version, no kind) reads as the current one."""
    written, out = run_dir
    old = json.loads((out / "results.json").read_text())
    del old["schema_version"]
    for row in old["attacks"]:
        del row["kind"]
    (tmp_path / "results.json").write_text(json.dumps(old, indent=1))
    assert AuditReport.load(tmp_path / "results.json") == written  # kinds read off the rows
    assert report.load_results(tmp_path / "results.json") == written  # kinds from the registry


@pytest.mark.slow
def test_a_previous_format_row_that_cannot_say_its_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    """Membership unknown and no p-values: the old row cannot tell a test from a ranking without the registry."""
    raw = {**copy.deepcopy(TINY_RUN), "attacks": [{"name": "gls"}]}
    old = api.run(raw).to_json()
    old["membership"] = "unknown"
    del old["schema_version"]
    for row in old["attacks"]:
        for key in ("kind", "auc", "ppv"):
            row.pop(key, None)
    (tmp_path / "results.json").write_text(json.dumps(old))
    with pytest.raises(DataError) as e:
        AuditReport.load(tmp_path / "results.json")
    assert str(tmp_path / "results.json") in str(e.value) and "attacks.0 (gls)" in str(e.value)
    assert "\n" not in str(e.value)
    assert report.load_results(tmp_path / "results.json").attacks[0].kind == "ranking"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(schema_version="2"), "schema_version .2. is not a layout version"),
        (lambda d: d.update(schema_version=-1), "schema_version -1 is not a layout version"),
        (lambda d: d.pop("attacks"), "attacks: Field required"),
        (lambda d: d["attacks"][0].update(kind="oracle"), "attacks.0.kind"),
        (lambda d: d.update(surprise=1), "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_file_that_is_no_results_json_is_refused_in_one_line(
    run_dir: tuple[AuditReport, Path], tmp_path: Path, change: Any, said: str
) -> None:
    data = json.loads((run_dir[1] / "results.json").read_text())
    change(data)
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=said) as e:
        AuditReport.load(tmp_path / "results.json")
    assert "\n" not in str(e.value) and str(tmp_path / "results.json") in str(e.value)


def test_a_file_that_is_no_json_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(DataError, match="not a readable results.json"):
        AuditReport.load(tmp_path / "results.json")


@pytest.mark.slow
def test_a_scores_only_audit_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    k, n, c = 4, 200, 10
    y = rng.integers(0, c, n)
    keep = rng.random((k, n)).argsort(axis=0).argsort(axis=0) < k // 2
    target_keep = rng.permutation(n) < n // 2

    def logits(member: np.ndarray) -> np.ndarray:
        z = rng.standard_normal((n, c))
        z[np.arange(n), y] += 3 + 2 * member
        return z.astype(np.float32)

    np.save(tmp_path / "labels.npy", y)
    np.save(tmp_path / "target_logits.npy", logits(target_keep))
    np.save(tmp_path / "target_keep.npy", target_keep)
    np.save(tmp_path / "reference_keep.npy", keep)
    np.save(tmp_path / "reference_logits.npy", np.stack([logits(m) for m in keep]))
    cfg = {"outputs": {"layout": "npz", "path": str(tmp_path)}, "name": "synthetic", "mode": "offline",
           "attacks": [{"name": "lira"}]}  # fmt: skip
    written = api.score(cfg).report(tmp_path / "out")
    on_disk = assert_round_trip(written, tmp_path / "out")
    assert on_disk["attacks"][0]["kind"] == "test" and written.membership_known and written.dataset == "synthetic"


@pytest.mark.slow
def test_a_white_box_dp_audit_writes_through_the_same_writer(tmp_path: Path) -> None:
    """``miaudit dp-audit`` without input-space canaries: no attack, the DP section typed, the same file format."""
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    from miaudit.dp import output

    dp = {"epsilon": 2.0, "delta": 1e-5, "max_grad_norm": 1.0}
    raw = {**copy.deepcopy(TINY_RUN), "canaries": {"count": 20, "kind": "dirac", "guesses": 6}}
    raw["train"] = {**raw["train"], "dp": dp}
    written = output.audit(config.from_dict(raw), tmp_path / "dp", written=decide.written)
    on_disk = assert_round_trip(written, tmp_path / "dp")
    audit = written.dp_audit
    assert audit is not None and audit.kind == "one-run" and written.attacks == []
    assert audit.tests and audit.bounds and audit.verdict == on_disk["dp_audit"]["verdict"]
    assert written.dp_audited and (tmp_path / "dp" / "scores.csv").read_text().startswith("canary,member,score,guess")


FIXTURES = Path(__file__).parent / "fixtures"
PREVIOUS = FIXTURES / "results_v1_digits_tiny.json"  # `miaudit run` (digits, 2 references, attack-p and lira) at v1


def test_a_results_json_of_the_previous_layout_still_loads() -> None:
    """The committed results.json of schema_version 1 (sections open to undeclared keys) reads as the current
    version: every key it holds is declared, so nothing is dropped and the same values come back."""
    old = json.loads(PREVIOUS.read_text())
    assert old["schema_version"] == 1 < SCHEMA_VERSION
    loaded = AuditReport.load(PREVIOUS)
    assert loaded.schema_version == SCHEMA_VERSION
    assert loaded.dump() == {**old, "schema_version": SCHEMA_VERSION}
    assert loaded.records_at_risk is not None and loaded.records_at_risk.pseudo_targets is not None
    fdp = loaded.records_at_risk.pseudo_targets.realized_fdp
    assert fdp is not None and fdp.procedure == old["records_at_risk"]["pseudo_targets"]["realized_fdp"]["procedure"]
    assert schema_errors(loaded.dump()) == []


def current(path: Path) -> dict[str, Any]:
    return {**json.loads(path.read_text()), "schema_version": SCHEMA_VERSION}


@pytest.mark.parametrize("section", ["target", "calibration", "verdict", "records_at_risk", "environment"])
def test_an_unknown_key_inside_a_section_is_refused_naming_it(tmp_path: Path, section: str) -> None:
    data = current(PREVIOUS)
    data[section]["zz_renamed"] = 1
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        AuditReport.load(tmp_path / "results.json")
    first = str(e.value).splitlines()[0]
    assert f"{section}.zz_renamed: Extra inputs are not permitted" in first


def test_an_unknown_key_deep_in_a_section_is_refused_naming_its_path(tmp_path: Path) -> None:
    data = current(PREVIOUS)
    data["records_at_risk"]["by_attack"]["lira (n=2)"]["zz_renamed"] = 1
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"records_at_risk\.by_attack\.lira \(n=2\)\.zz_renamed"):
        AuditReport.load(tmp_path / "results.json")


def test_a_newer_file_loads_with_its_unknown_keys_left_out_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file of a later layout (a higher schema_version) reads: the keys this version does not know are
    dropped, each named in one warning; the keys it knows keep their values."""
    data = current(PREVIOUS)
    data["schema_version"] = SCHEMA_VERSION + 1
    data["target"]["zz_new"] = 1
    data["zz_new_section"] = {"a": 1}
    (tmp_path / "results.json").write_text(json.dumps(data))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert loaded.target.train_accuracy == data["target"]["train_accuracy"]
    assert "zz_new" not in loaded.target.model_dump() and loaded.schema_version == SCHEMA_VERSION
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "Target.zz_new" in caplog.text and "AuditReport.zz_new_section" in caplog.text


def test_a_newer_file_that_breaks_a_declared_key_is_refused_saying_it_is_newer(tmp_path: Path) -> None:
    data = current(PREVIOUS)
    data["schema_version"] = SCHEMA_VERSION + 1
    data["target"]["source"] = 7
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match=rf"target.source.*newer than this miaudit's {SCHEMA_VERSION}"):
        AuditReport.load(tmp_path / "results.json")


def test_a_version_1_file_with_a_key_its_open_sections_kept_loads_naming_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Version 1's sections kept keys they did not declare: such a file still loads, the key left out and named."""
    old = json.loads(PREVIOUS.read_text())
    old["verdict"]["zz_kept"] = "a key a version-1 writer was free to add"
    (tmp_path / "results.json").write_text(json.dumps(old))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert loaded.verdict is not None and loaded.verdict.statement == old["verdict"]["statement"]
    assert "Verdict.zz_kept" in caplog.text and "schema_version 1" in caplog.text


@pytest.mark.slow
def test_the_schema_requires_the_verdict_and_states_the_ranges(run_dir: tuple[AuditReport, Path]) -> None:
    """Issue 49, item 11: a results.json without its verdict, with a negative count or a rate outside [0, 1]
    fails the published schema (and the reader); a null verdict (no membership test) passes."""
    good = json.loads((run_dir[1] / "results.json").read_text())
    assert schema_errors(good) == [] and AuditReport.json_schema()["required"].count("verdict") == 1
    row = good["attacks"][-1]
    bad = {
        "no verdict": {k: v for k, v in good.items() if k != "verdict"},
        "negative count": {**good, "records_at_risk": {**good["records_at_risk"], "count": -1}},
        "TPR 7": {**good, "attacks": [{**row, "tpr_at_fpr": {**row["tpr_at_fpr"], "0.01": 7.0}}]},
        "AUC below 0": {**good, "attacks": [{**row, "auc": -0.1}]},
        "negative records": {**good, "n_records": -3},
    }
    for what, case in bad.items():
        assert schema_errors(case), what
        with pytest.raises(DataError):
            AuditReport.from_dict(case)
    assert schema_errors({**good, "verdict": None}) == []


def test_a_file_of_schema_version_4_loads_without_the_summaries(tmp_path: Path) -> None:
    """Version 5 added verdict.summary/.detail and records_at_risk.summary, optional: a version-4 file reads as it
    is, and the console says its records at risk by the note it holds."""
    from miaudit.report import console

    data = {**json.loads(PREVIOUS.read_text()), "schema_version": 4}
    (tmp_path / "results.json").write_text(json.dumps(data))
    loaded = AuditReport.load(tmp_path / "results.json")
    assert loaded.verdict is not None and loaded.verdict.summary is None and loaded.verdict.detail is None
    assert loaded.records_at_risk is not None and loaded.records_at_risk.summary is None
    said = console._records_at_risk(loaded, explain=False)
    assert said == f"records at risk: {loaded.records_at_risk.note}"
    assert console._verdict_lines(loaded, explain=False) == [f"Verdict: {loaded.verdict.statement}"]
