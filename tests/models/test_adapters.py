"""Other libraries' models (models/adapters.py, models/hf.py): the features/head split, name checks, and
end-to-end audits with BMIA, LiRA and GLS of a torchvision ResNet-18 on images and a tiny BERT on text."""

from __future__ import annotations

import csv
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit import audits
from miaudit.config import run as config
from miaudit.errors import ConfigError, MiauditError, ModelError
from miaudit.models import adapters, build_model
from miaudit.models.library import parse, split_last_linear
from miaudit_bench.tiny_bert import build as build_tiny_bert

needs_transformers = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="needs transformers (pip install 'miaudit[hf]')"
)
needs_timm = pytest.mark.skipif(
    importlib.util.find_spec("timm") is None, reason="needs timm (pip install 'miaudit[timm]')"
)
WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam", "mu"]


def test_names_parse_with_options() -> None:
    assert parse("torchvision:resnet18") == ("torchvision", "resnet18", {})
    assert parse("hf:/a/b[max_length=32]") == ("hf", "/a/b", {"max_length": "32"})
    assert parse("torchvision:resnet18[cifar_stem=true, weights=w.pt]")[2] == {"cifar_stem": "true", "weights": "w.pt"}
    assert adapters.is_adapter_name("timm:x") and not adapters.is_adapter_name("pkg.mod:factory")
    with pytest.raises(ModelError, match="key=value"):
        parse("torchvision:resnet18[cifar_stem]")


def test_split_last_linear_keeps_the_forward() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    x = torch.randn(5, 4)
    expected = net(x)
    body, head = split_last_linear(net, 3)
    assert head.out_features == 3 and isinstance(body[2], nn.Identity)
    torch.testing.assert_close(head(body(x)), expected)


@pytest.mark.parametrize("name", ["torchvision:resnet18", "torchvision:resnet18[cifar_stem=true]"])
def test_torchvision_resnet18_exposes_features_and_head(name: str) -> None:
    model = build_model(name, (3, 16, 16), 4).eval()
    x = torch.randn(3, 3 * 16 * 16)  # flat records are viewed as images, like the built-in CNNs
    features = model.features(x)
    assert features.shape == (3, 512) and isinstance(model.head, nn.Linear) and model.head.out_features == 4
    torch.testing.assert_close(model(x), model.head(features))


def test_torchvision_names_and_inputs_are_checked() -> None:
    with pytest.raises(ModelError, match="no classification model"):
        build_model("torchvision:resnet_nope", (3, 16, 16), 4)
    with pytest.raises(ModelError, match="image inputs"):
        build_model("torchvision:resnet18", (64,), 4)
    with pytest.raises(MiauditError, match="not found"):
        config.from_dict({"model": "torchvision:resnet18[weights=/nonexistent.safetensors]"})
    with pytest.raises(MiauditError, match="config.json"):
        config.from_dict({"model": "hf:/nonexistent-dir"})
    assert config.from_dict({"model": "torchvision:resnet18"}).model == "torchvision:resnet18"


def test_torchvision_local_weights_load_without_the_classifier(tmp_path: Path) -> None:
    import torchvision
    from safetensors.torch import save_file

    torch.manual_seed(1)
    source = torchvision.models.resnet18(num_classes=10)
    save_file({k: v.contiguous() for k, v in source.state_dict().items()}, str(tmp_path / "w.safetensors"))
    model = build_model(f"torchvision:resnet18[weights={tmp_path / 'w.safetensors'}]", (3, 16, 16), 4)
    torch.testing.assert_close(model.body.conv1.weight, source.conv1.weight)
    assert model.head.out_features == 4  # a 10-class classifier does not fit 4 classes: fresh


@pytest.mark.slow
@needs_timm
def test_timm_model_exposes_features_and_head() -> None:
    model = build_model("timm:resnet10t", (3, 16, 16), 4).eval()
    x = torch.randn(2, 3, 16, 16)
    torch.testing.assert_close(model(x), model.head(model.features(x)))


def _images(tmp_path: Path, n: int = 100, side: int = 8) -> Path:
    """A CIFAR-like set: 4 classes of noisy colour patterns."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, n)
    patterns = rng.normal(size=(4, 3, side, side))
    x = (patterns[y] + rng.normal(scale=2.0, size=(n, 3, side, side))).astype(np.float32)
    np.savez(tmp_path / "images.npz", x=x, y=y)
    return tmp_path / "images.npz"


def _finite_aucs(result: audits.RunResult) -> dict[str, float]:
    aucs = {run.attack.name: run.metrics.auc for run in result.attacks}
    assert all(math.isfinite(v) for v in aucs.values()), aucs
    return aucs


ATTACKS = [{"name": "bmia", "references": 1, "samples": 50}, {"name": "lira", "references": 1}, {"name": "gls"}]


@pytest.mark.slow
def test_torchvision_resnet18_audit_end_to_end(tmp_path: Path) -> None:
    cfg = config.from_dict(
        {
            "dataset": {"path": str(_images(tmp_path))},
            "model": "torchvision:resnet18",
            "train": {"epochs": 1, "batch_size": 32, "lr": 0.05},
            "references": 1,
            "attacks": ATTACKS,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    assert set(_finite_aucs(audits.run_config(cfg))) == {"bmia", "lira", "gls"}


def tiny_bert(directory: Path, words: list[str], n_labels: int = 4) -> Path:
    """A 2-layer, 32-wide BERT with a word-level tokenizer over ``words``, saved as a local directory."""
    return build_tiny_bert(directory, words, n_labels, max_length=16)


@pytest.mark.slow
@needs_transformers
def test_hf_model_tokenises_and_splits(tmp_path: Path) -> None:
    path = tiny_bert(tmp_path / "bert", WORDS)
    encode = adapters.tokenizer_for(f"hf:{path}[max_length=8]")
    x = encode(["alpha beta", "gamma unknownword delta"])
    assert x.shape == (2, 2, 8) and x.dtype == np.float32
    assert x[0, 0, :4].tolist() == [2, 5, 6, 3] and x[0, 1].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    model = build_model(f"hf:{path}", x.shape[1:], 3).eval()
    xt = torch.as_tensor(x)
    assert model.features(xt).shape == (2, 32) and model.head.out_features == 3
    torch.testing.assert_close(model(xt), model.head(model.features(xt)))
    with pytest.raises(ModelError, match="tokenised text"):
        build_model(f"hf:{path}", (3, 8, 8), 3)


def _news_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int = 160) -> Path:
    """A generated AG News file (class, title, description), its checksum pinned for the test."""
    from miaudit.data import base, text

    rng = np.random.default_rng(0)
    folder = tmp_path / "data" / "ag_news"
    folder.mkdir(parents=True)
    with open(folder / "test.csv", "w", newline="") as f:
        for i in range(n):
            label = i % 4
            words = [WORDS[3 * label + int(j)] for j in rng.integers(0, 3, 3)] + list(rng.choice(WORDS, 3))
            csv.writer(f).writerow([label + 1, " ".join(words[:2]), " ".join(words[2:])])
    monkeypatch.setattr(text, "AG_NEWS_SHA256", base.sha256_file(folder / "test.csv"))
    return folder.parent


@pytest.mark.slow
@needs_transformers
def test_hf_tiny_bert_audit_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tiny_bert(tmp_path / "bert", WORDS)
    cfg = config.from_dict(
        {
            "dataset": {"name": "ag_news", "data_dir": str(_news_dir(tmp_path, monkeypatch))},
            "model": f"hf:{path}[max_length=12]",
            "train": {"epochs": 2, "batch_size": 16, "lr": 0.05},
            "references": 1,
            "attacks": ATTACKS,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    result = audits.run_config(cfg)
    assert result.experiment.dataset.x.shape[1:] == (2, 12)  # token ids and mask, by the model's tokenizer
    assert set(_finite_aucs(result)) == {"bmia", "lira", "gls"}


def test_hf_needs_text_shaped_records_before_training() -> None:
    with pytest.raises((ConfigError, ModelError)):
        config.from_dict({"model": "hf:"})
