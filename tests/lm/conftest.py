"""A tiny causal LM for the LM tests (gpt-tiny on a few hundred tokens, built in well under a second) and a
user CSV of random word texts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from miaudit.lm import data, model

TEXTS = [
    "the cat sat on the mat",
    "a dog ran in the park",
    "the market fell on monday",
    "stocks rose as oil fell",
    "the team won the cup final",
    "rain is expected on the coast",
    "a new phone was shown today",
    "the dog and the cat played",
] * 3


@pytest.fixture(scope="module")
def tiny_lm() -> tuple[model.CausalLM, np.ndarray]:
    """(an untrained gpt-tiny of width 8 over the texts' words, the packed texts (24, 2, 10))."""
    tokenizer = data.word_tokenizer(TEXTS, 40, 10)
    torch.manual_seed(0)
    lm = model.build("gpt-tiny[max_length=10,width=8,layers=2]", tokenizer)
    return lm, data.encode(tokenizer, TEXTS, 10)


WORDS = [
    "the",
    "a",
    "team",
    "market",
    "stock",
    "goal",
    "season",
    "price",
    "oil",
    "bank",
    "cup",
    "win",
    "rose",
    "fell",
    "on",
    "in",
    "of",
    "and",
    "said",
    "new",
]


@pytest.fixture
def news_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(6, 12)))) for _ in range(160)]
    path = tmp_path / "news.csv"
    pd.DataFrame({"y": 0, "title": "t", "body": texts}).to_csv(path, index=False)
    return path
