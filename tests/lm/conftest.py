"""A tiny causal LM for the LM tests: gpt-tiny on a few hundred tokens, built in well under a second."""

from __future__ import annotations

import numpy as np
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
