"""``miaudit bench lm``: causal-LM audits on AG News, trained from scratch and fine-tuned (docs/lm-audits.md).

- ``ag_news-gpt-tiny``: gpt-tiny trained from scratch on members drawn with the non-members from one pool
  of AG News texts (a seeded subset of the file), so the blind baseline should sit at chance.
- ``ag_news-finetune``: a gpt-tiny base pre-trained on one half of AG News (``FINETUNE_BASE``, built once),
  then target and references fine-tuned from it on texts of the other half (written once to
  ``FINETUNE_TEXTS``): the setting of a pre-trained LM fine-tuned on private documents.

Attacks at K = 0 (loss, zlib, Min-K%, Min-K%++), K = 1 (BMIA, the reference ratio, RMIA) and K = 4
(LiRA, RMIA, MR-BMIA); 3 seeds. Sized for 2 CPU cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

CACHE = Path("~/.cache/miaudit").expanduser()
FINETUNE_BASE = CACHE / "gpt-tiny-base-ag_news"
FINETUNE_TEXTS = CACHE / "ag_news-finetune-half.csv"
SUBSET = 1200  # texts per audit: 240 members, 240 non-members, 480 population, 240 validation
TRAIN = {"epochs": 8, "batch_size": 32, "lr": 0.001, "optimizer": "adamw", "weight_decay": 0.01}
FINETUNE_TRAIN = {**TRAIN, "epochs": 4}
BASE_EPOCHS = 4
BASE_TEXTS = 2000  # pre-training texts, from the first half
HALVES_SEED = 0x1A6  # fixes which half of AG News pre-trains the base


def rows(k_max: int) -> list[dict[str, Any]]:
    """K = 0, 1 and 4 (as far as ``k_max`` allows)."""
    out: list[dict[str, Any]] = [
        {"name": "attack-p", "signal": "loss", "label": "loss (attack-p)"},
        {"name": "zlib"},
        {"name": "min-k"},
        {"name": "min-k-pp"},
        {"name": "bmia", "references": 1},
        {"name": "lira", "references": 1, "label": "reference ratio (lira, n=1)"},
        {"name": "rmia", "references": 1},
    ]
    if k_max >= 4:
        out += [{"name": n, "references": 4} for n in ("lira", "rmia", "mr-bmia")]
    return out


def _halves() -> tuple[list[str], list[str]]:
    """AG News split in two halves by a fixed seed: (pre-training texts, audit texts)."""
    from miaudit.data import base, text

    data_dir = base.default_data_dir()
    if data_dir is None:
        raise SystemExit("bench lm: needs AG News (set MIAUDIT_DATA_DIR)")
    texts, _ = text.read_news(data_dir / text.AG_NEWS_FILE)
    order = np.random.default_rng(HALVES_SEED).permutation(len(texts))
    half = len(texts) // 2
    return [texts[i] for i in order[:half]], [texts[i] for i in order[half:]]


def build_finetune_base() -> None:
    """Pre-train the base once: gpt-tiny with a tokenizer over the first half's words, BASE_EPOCHS epochs on
    it; saved as a local Hugging Face directory (``model: hf:FINETUNE_BASE``), the other half as a CSV."""
    if (FINETUNE_BASE / "config.json").is_file() and FINETUNE_TEXTS.is_file():
        return
    import pandas as pd
    import torch

    from miaudit.config.run import TrainConfig
    from miaudit.lm import data, model
    from miaudit.training.loop import train

    pretrain, audit = _halves()
    pretrain = pretrain[:BASE_TEXTS]
    spec = "gpt-tiny"
    tokenizer = data.word_tokenizer(pretrain, 3000, 64)
    torch.manual_seed(HALVES_SEED)
    lm = model.build(spec, tokenizer)
    x = data.encode(tokenizer, pretrain, 64)
    train(lm, x, np.zeros(len(x), dtype=np.int64), TrainConfig(**{**TRAIN, "epochs": BASE_EPOCHS}), HALVES_SEED)
    lm.model.save_pretrained(FINETUNE_BASE)
    tokenizer.save_pretrained(FINETUNE_BASE)
    pd.DataFrame({"text": audit}).to_csv(FINETUNE_TEXTS, index=False)


DATASETS: dict[str, dict[str, Any]] = {
    "ag_news-gpt-tiny": {
        "dataset": {"name": "ag_news", "subset": SUBSET},
        "model": "gpt-tiny",
        "train": TRAIN,
        "references": 4,
    },
    "ag_news-finetune": {
        "dataset": {"path": str(FINETUNE_TEXTS), "text_column": "text", "subset": SUBSET},
        "model": f"hf:{FINETUNE_BASE}",
        "train": FINETUNE_TRAIN,
        "references": 4,
    },
}
