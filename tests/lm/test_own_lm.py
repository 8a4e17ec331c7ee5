"""Auditing a user's own causal LM: ``target: hf:PATH`` in a config and ``miaudit.audit(PATH or model, texts)``,
with references fine-tuned from ``train.base``; a tiny GPT-2 base and its fine-tuned copy built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from typer.testing import CliRunner

import miaudit
from miaudit import attack_plan
from miaudit.cli import app
from miaudit.config import run as config_run
from miaudit.errors import ConfigError, DataError
from miaudit.experiment import own_lm
from miaudit.lm import data, model
from miaudit.training.loop import train

from .conftest import WORDS

ROOT = Path(__file__).resolve().parents[2]
TRAIN = {"epochs": 2, "batch_size": 16, "lr": 0.01, "optimizer": "adamw"}
FT_EPOCHS = 12


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    rng = np.random.default_rng(1)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(6, 12)))) for _ in range(120)]


@pytest.fixture(scope="module")
def lms(tmp_path_factory: pytest.TempPathFactory, corpus: list[str]) -> tuple[Path, Path]:
    """(a base GPT-2 directory: untrained, word tokenizer over the corpus; the base fine-tuned on texts 0-29)."""
    root = tmp_path_factory.mktemp("lms")
    tokenizer = data.word_tokenizer(corpus, 40, 12)
    torch.manual_seed(0)
    base = model.build("gpt-tiny[max_length=12,width=16]", tokenizer)
    base.model.save_pretrained(root / "base")
    tokenizer.save_pretrained(root / "base")
    tuned = model.build(f"hf:{root / 'base'}", tokenizer)
    x = data.encode(tokenizer, corpus[:30], 12)
    train(tuned, x, np.zeros(30, dtype=np.int64), config_run.TrainConfig(**{**TRAIN, "epochs": FT_EPOCHS}), 0)
    tuned.model.save_pretrained(root / "tuned")
    tokenizer.save_pretrained(root / "tuned")
    return root / "base", root / "tuned"


@pytest.mark.slow
def test_own_lm_from_a_config_with_references_fine_tuned_from_the_base(tmp_path: Path, corpus, lms):
    base, tuned = lms
    pd.DataFrame({"text": corpus}).to_csv(tmp_path / "texts.csv", index=False)
    np.savetxt(tmp_path / "in.txt", np.arange(30), fmt="%d")
    np.savetxt(tmp_path / "out.txt", np.arange(30, 60), fmt="%d")
    raw = {
        "dataset": {"path": str(tmp_path / "texts.csv"), "text_column": "text"},
        "target": f"hf:{tuned}",
        "members": str(tmp_path / "in.txt"),
        "nonmembers": str(tmp_path / "out.txt"),
        "train": {**TRAIN, "epochs": FT_EPOCHS, "base": f"hf:{base}"},
        "references": 1,
        "attacks": ["attack-p", "zlib", "min-k-pp", "lira"],
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(app, ["run", str(tmp_path / "run.yaml"), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "out" / "results.json").read_text())
    assert out["target"]["source"] == "hf directory tuned" and out["model"] == f"hf:{tuned}"
    assert out["reference_model"] == f"hf:{base}" and (out["n_members"], out["n_nonmembers"]) == (30, 30)
    assert out["n_population"] + out["n_validation"] == 60 and "blind_baseline" in out
    aucs = {a["name"]: a["auc"] for a in out["attacks"]}
    # fine-tuned 12 epochs on its 30 members: its loss tells them apart (seeded, far from the bound)
    assert aucs["attack-p"] > 0.75 and aucs["lira"] > 0.75, aucs
    assert out["target"]["train_perplexity"] < out["target"]["test_perplexity"]
    # an LM's figures, not a classifier's accuracy; the log says where the references start as results.json does
    assert not any(k.endswith("accuracy") for k in out["target"]), out["target"]
    for name in ("report.md", "report.html"):
        report = (tmp_path / "out" / name).read_text()
        assert "train accuracy" not in report and "train loss" in report and "(perplexity" in report, name
    (start,) = [line for line in res.output.splitlines() if "reference model(s) (" in line]
    assert f"reference model(s) (hf:{base}," in start, start


@pytest.mark.slow
def test_own_lm_through_the_python_api_directory_and_loaded_model(corpus, lms):
    base, tuned = lms
    sets = {"members": corpus[:30], "nonmembers": corpus[30:60], "population": corpus[60:]}
    attacks = ["attack-p", "min-k", "lira"]
    by_path = miaudit.audit(str(tuned), **sets, attacks=attacks, train={**TRAIN, "base": str(base)})
    assert by_path.run.experiment.target.architecture == f"hf:{tuned}"
    assert by_path.run.blind_baseline is not None and by_path.metrics["lira (n=1)"]["auc"] > 0.75
    row = by_path.scores.iloc[0]
    assert row["set"] in ("members", "nonmembers") and isinstance(row["position"], (int, np.integer))
    loaded = model.build(f"hf:{tuned}", data.hf_tokenizer(f"hf:{tuned}")).model
    again = miaudit.audit(loaded, **sets, attacks=attacks, train={**TRAIN, "base": str(base)})
    # the same weights and texts, the same references (seeded): the same scores
    assert again.metrics["lira (n=1)"]["auc"] == by_path.metrics["lira (n=1)"]["auc"]
    assert again.run.experiment.target.architecture == "GPT2LMHeadModel"


@pytest.mark.slow
def test_own_lm_inputs_are_checked_in_one_line(tmp_path: Path, corpus, lms):
    base, tuned = lms
    with pytest.raises(DataError, match=r"^members: expected a sequence of texts \(str\), got str$"):
        miaudit.audit(str(tuned), members="one text", nonmembers=corpus[:5])
    with pytest.raises(DataError, match=r"^nonmembers: item 1 is a int, not a text$"):
        miaudit.audit(str(tuned), members=corpus[:5], nonmembers=["a text", 3])
    with pytest.raises(DataError, match=r"^members: 1 text\(s\) of fewer than two tokens"):
        miaudit.audit(str(tuned), members=[*corpus[:5], ""], nonmembers=corpus[5:10])
    with pytest.raises(ConfigError, match=r"^train\.base: .*nowhere is not a local directory with a config\.json"):
        config_run.from_dict({"model": f"hf:{tuned}", "train": {"base": str(tmp_path / "nowhere")}})
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(ConfigError, match=r"^train\.base: .*bert is not a causal LM"):
        config_run.from_dict({"train": {"base": str(tmp_path / "bert")}})
    with pytest.raises(
        ConfigError, match=r"^train\.base: the target miaudit trains is hf:.*base fine-tuned; model: gpt"
    ):
        config_run.from_dict({"model": "gpt-tiny", "train": {"base": str(base)}})
    with pytest.raises(ConfigError, match=r"^train\.base: fine-tunes causal language models; 'mlp' is not one"):
        config_run.from_dict({"model": "mlp", "train": {"base": str(base)}})
    with pytest.raises(ConfigError, match=r"^target\.checkpoint: required for 'mlp'"):
        config_run.from_dict({"target": {"architecture": "mlp"}})
    # train.base alone: the target miaudit trains is the base fine-tuned
    assert config_run.from_dict({"train": {"base": str(base)}}).model == f"hf:{base}"


@pytest.mark.slow
def test_without_a_base_the_references_are_the_targets_architecture_with_new_weights(corpus, lms):
    _, tuned = lms
    cfg = config_run.from_dict({"target": f"hf:{tuned}", "train": TRAIN})
    texts = data.from_texts(corpus, data.hf_tokenizer(f"hf:{tuned}"), 12, "texts")
    recipe = own_lm.reference_recipe(cfg, texts)
    target = model.build(f"hf:{tuned}", texts.tokenizer)
    fresh = recipe.build()
    assert recipe.cache_spec is not None and recipe.cache_spec["init"] == "fresh"
    assert recipe.architecture == f"hf:{tuned}, new weights"
    assert fresh.lm_head.weight.shape == target.lm_head.weight.shape
    assert not torch.equal(fresh.lm_head.weight, target.lm_head.weight)
    api_fresh = own_lm.TextSets.of(str(tuned)).recipe(cfg, None, None).build()  # the Python API's
    assert not torch.equal(api_fresh.lm_head.weight, target.lm_head.weight)


@pytest.mark.slow
def test_the_example_config_validates_on_the_files_its_script_writes(tmp_path: Path, monkeypatch, corpus, lms):
    base, tuned = lms
    shutil.copy(ROOT / "examples" / "own-lm.yaml", tmp_path)
    (tmp_path / "base").symlink_to(base)
    (tmp_path / "tuned").symlink_to(tuned)
    pd.DataFrame({"text": corpus}).to_csv(tmp_path / "texts.csv", index=False)
    np.savetxt(tmp_path / "members.txt", np.arange(30), fmt="%d")
    np.savetxt(tmp_path / "nonmembers.txt", np.arange(30, 60), fmt="%d")
    monkeypatch.chdir(tmp_path)  # hf: paths are read from the working folder, as the script runs it
    cfg = config_run.load(tmp_path / "own-lm.yaml")
    assert cfg.target is not None and cfg.target_architecture == "hf:tuned" and cfg.train.base == "hf:base"
    assert attack_plan.build(cfg).references == cfg.references


def test_a_gpt_tiny_checkpoint_and_queries_of_unknown_membership(tmp_path: Path, corpus):
    """``target: {architecture: gpt-tiny[...], checkpoint}``: the weights load into the model built over the same
    texts, and its outputs are the saved model's; queries give p-values and a ranking, no ROC."""
    from safetensors.torch import save_file

    spec = "gpt-tiny[max_length=12,width=16,vocab=40]"
    pd.DataFrame({"text": corpus}).to_csv(tmp_path / "texts.csv", index=False)
    tokenizer = data.word_tokenizer(corpus, 40, 12)  # what the config's data stage builds over the same texts
    torch.manual_seed(3)
    saved = model.build(spec, tokenizer)
    save_file(saved.state_dict(), str(tmp_path / "lm.safetensors"))
    np.savetxt(tmp_path / "queries.txt", np.arange(40), fmt="%d")
    cfg = {
        "dataset": {"path": str(tmp_path / "texts.csv"), "text_column": "text"},
        "target": {"architecture": spec, "checkpoint": str(tmp_path / "lm.safetensors")},
        "queries": str(tmp_path / "queries.txt"),
        "references": 0,
        "attacks": ["attack-p", "min-k"],
    }
    result = miaudit.run(cfg)
    exp = result.run.experiment
    assert exp.target.source == "checkpoint lm.safetensors" and exp.is_member is None
    with torch.no_grad():
        want = saved.eval()(torch.as_tensor(exp.dataset.x[:5])).numpy()
    np.testing.assert_allclose(exp.target.logits[:5], want, rtol=1e-5, atol=1e-6)
    assert result.metrics == {"attack-p": None, "min-k": None} and len(result.scores) == 40
