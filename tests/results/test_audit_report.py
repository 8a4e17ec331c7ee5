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


def test_a_version_1_file_reads_as_the_current_version(run_dir: tuple[AuditReport, Path], tmp_path: Path) -> None:
    """Version 2 only added optional keys (``dp_audit.training``): a version 1 file reads as it is."""
    written, out = run_dir
    old = json.loads((out / "results.json").read_text())
    (tmp_path / "results.json").write_text(json.dumps({**old, "schema_version": 1}, indent=1))
    assert AuditReport.load(tmp_path / "results.json") == written


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


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: d.update(schema_version=99), "schema_version 99"),
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


def test_a_white_box_dp_audit_writes_through_the_same_writer(tmp_path: Path) -> None:
    """``miaudit dp-audit`` without input-space canaries: no attack, the DP section typed, the same file format."""
    pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
    from miaudit.dp import output

    dp = {"epsilon": 2.0, "delta": 1e-5, "max_grad_norm": 1.0}
    raw = {**copy.deepcopy(TINY_RUN), "canaries": {"count": 20, "kind": "dirac", "guesses": 6}}
    raw["train"] = {**raw["train"], "dp": dp}
    written = output.audit(config.from_dict(raw), tmp_path / "dp")
    on_disk = assert_round_trip(written, tmp_path / "dp")
    audit = written.dp_audit
    assert audit is not None and audit.kind == "one-run" and written.attacks == []
    assert audit.tests and audit.bounds and audit.verdict == on_disk["dp_audit"]["verdict"]
    assert written.dp_audited and (tmp_path / "dp" / "scores.csv").read_text().startswith("canary,member,score,guess")
