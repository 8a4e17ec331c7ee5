"""An LM audit end to end: gpt-tiny trained on a user's CSV texts, the LM attacks and the blind baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from miaudit.cli import app


def _config(tmp_path: Path, data: dict) -> str:
    raw = {
        "dataset": data,
        "model": "gpt-tiny[max_length=12,width=16,vocab=40]",
        "train": {"epochs": 2, "batch_size": 16, "lr": 0.01, "optimizer": "adamw"},
        "references": 1,
        "attacks": ["attack-p", "zlib", "min-k", "min-k-pp", "lira", {"name": "bmia", "samples": 50}],
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.mark.slow
def test_gpt_tiny_audit_of_csv_texts(tmp_path: Path, news_csv: Path):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app, ["run", _config(tmp_path, {"path": str(news_csv), "text_column": "body"}), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    results = json.loads((out / "results.json").read_text())
    aucs = {a["name"]: a["auc"] for a in results["attacks"]}
    assert set(aucs) == {"attack-p", "zlib", "min-k", "min-k-pp", "lira", "bmia"}
    assert all(0 <= v <= 1 for v in aucs.values())
    assert results["model"].startswith("gpt-tiny") and results["n_members"] == 32
    baseline = results["blind_baseline"]
    assert 0 <= baseline["auc"] <= 1 and "0.01" in baseline["tpr_at_fpr"]
    assert results["target"]["test_perplexity"] > 1 and "perplexity" in res.output
    assert "| blind baseline (text only) |" in (out / "report.md").read_text()
    assert "<h2>Blind baseline (text only)</h2>" in (out / "report.html").read_text()
    scores = pd.read_csv(out / "scores.csv")
    assert len(scores) == results["n_queries"] and scores.filter(like="score").notna().all().all()


def test_a_file_without_the_text_column_is_refused_in_one_line(tmp_path: Path, news_csv: Path):
    out = tmp_path / "out"
    res = CliRunner().invoke(
        app, ["run", _config(tmp_path, {"path": str(news_csv), "text_column": "text"}), "--out", str(out)]
    )
    assert res.exit_code == 2
    assert "dataset.text_column: news.csv has no column 'text' (columns: y, title, body)" in res.output
    assert len(res.output.strip().splitlines()) == 1 and not out.exists()
