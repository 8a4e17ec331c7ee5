"""Scores-only audits: a run's outputs written in both layouts and scored back give the run's scores."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import miaudit
from miaudit import audits, pipeline
from miaudit.cli import app
from miaudit.config.run import RunConfig
from miaudit.errors import AttackRequirementError, ConfigError
from miaudit.experiment import export as scores_export
from miaudit.experiment import precomputed as scores_only

ATTACKS = [{"name": "lira"}, {"name": "rmia"}, {"name": "bavaria-n"}, {"name": "attack-r"}]


@pytest.fixture(scope="module")
def run(make_config: Callable[..., RunConfig], tmp_path_factory: pytest.TempPathFactory) -> audits.RunResult:
    cache = tmp_path_factory.mktemp("cache")
    cfg = make_config(references=2, attacks=ATTACKS, cache_dir=str(cache))
    pipeline.prepare(cfg)  # fills the cache: the run below reads float32 logits, as an export writes them
    return audits.run_experiment(pipeline.prepare(cfg))


def by_record(res: audits.RunResult, records: np.ndarray | None = None) -> dict[str, dict[int, float]]:
    ids = res.experiment.query_idx if records is None else records[res.experiment.query_idx]
    return {r.attack.label: dict(zip(ids.tolist(), r.result.scores.tolist())) for r in res.attacks}


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["npz", "lira"])
def test_both_layouts_give_the_runs_scores(run: audits.RunResult, layout: str, tmp_path: Path) -> None:
    where = scores_export.export(run.experiment, tmp_path / "outputs", layout)
    scored = miaudit.score({"outputs": {"layout": layout, "path": str(where)}, "attacks": ATTACKS}).run
    records = scores_export.from_experiment(run.experiment).records
    want, got = by_record(run), by_record(scored, records)
    assert list(got) == list(want)
    for label in want:
        assert got[label].keys() == want[label].keys()
        ids = sorted(want[label])
        np.testing.assert_allclose([got[label][i] for i in ids], [want[label][i] for i in ids], rtol=1e-12, atol=0)
    for a, b in zip(run.attacks, scored.attacks):
        assert a.metrics.auc == b.metrics.auc
    assert scored.experiment.calibrates  # the exported validation records calibrate, as in the run


@pytest.mark.slow
def test_no_index_files_every_record_is_a_query(run: audits.RunResult, tmp_path: Path) -> None:
    """The LiRA code's own setting: the target's keep mask is the membership; no population, so RMIA is refused."""
    where = scores_export.export(run.experiment, tmp_path / "lira", "lira")
    for name in ("members", "nonmembers", "validation", "records"):
        (where / f"{name}.npy").unlink()
    exp = scores_only.prepare(scores_only.as_config({"outputs": str(where), "attacks": ["lira"]}))
    assert len(exp.query_idx) == len(exp.dataset) and not len(exp.split.population)
    with pytest.raises(AttackRequirementError, match="rmia: needs population"):
        scores_only.prepare(scores_only.as_config({"outputs": str(where), "attacks": ["rmia"]}))


@pytest.mark.parametrize("attack", ["bmia", "gls", "qmia"])
def test_attacks_needing_models_are_refused_in_one_line(attack: str, tmp_path: Path) -> None:
    cfg = scores_only.as_config({"outputs": str(tmp_path / "absent.npz"), "attacks": ["lira", attack]})
    with pytest.raises(AttackRequirementError, match=f"^attacks.1: {attack} needs the") as e:
        scores_only.prepare(cfg)  # refused before the (absent) outputs are read
    assert "\n" not in str(e.value)


def test_bad_config_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="^outputs: Field required"):
        scores_only.as_config({"attacks": ["lira"]})
    bad = tmp_path / "score.yaml"
    bad.write_text("outputs: out.npz\nattacks: [lira\n")
    with pytest.raises(ConfigError, match="line 3, column 1") as e:  # the YAML reader of `miaudit run`
        scores_only.as_config(bad)
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_cli_score_writes_the_reports(run: audits.RunResult, tmp_path: Path) -> None:
    where = scores_export.export(run.experiment, tmp_path / "lira", "lira")
    conf = tmp_path / "score.yaml"
    conf.write_text(
        yaml.safe_dump(
            {
                "outputs": {"layout": "lira", "path": str(where)},
                "attacks": ["lira", "rmia"],
                "members": str(where / "members.npy"),
                "nonmembers": str(where / "nonmembers.npy"),
            }
        )
    )
    res = CliRunner().invoke(app, ["score", str(conf), "--out", str(tmp_path / "out"), "--set", "fdr=0.1"])
    assert res.exit_code == 0, res.output
    assert {"results.json", "report.md", "scores.csv", "roc.png"} <= {p.name for p in (tmp_path / "out").iterdir()}
    assert json.loads((tmp_path / "out" / "results.json").read_text())["config"]["fdr"] == 0.1  # --set, as in run
