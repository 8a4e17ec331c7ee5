"""gpt-tiny's tokenizers: word-level (from the corpus) and byte-level (``gpt-tiny[tokenizer=byte]``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import miaudit
from miaudit.config import run as config_run
from miaudit.errors import ConfigError, ModelError
from miaudit.lm import data, names

TEXTS = ["Café au lait, 3 €", "北京 — tab\tand\nnewline", "  two  spaces ", "emoji 🙂 ok"]


def test_byte_tokenizer_round_trips_any_text_with_nothing_unknown():
    tok = data.byte_tokenizer(64)
    assert len(tok) == 259  # 256 bytes + [PAD], [UNK], <s>
    for text in TEXTS:
        ids = tok(text)["input_ids"]
        assert ids[0] == tok.bos_token_id and len(ids) == 1 + len(text.encode("utf-8"))
        assert tok.unk_token_id not in ids and min(ids[1:]) >= 3
        assert tok.decode(ids, skip_special_tokens=True) == text
    # the packed records decode to the texts too (what zlib reads), truncated at max_length bytes
    x = data.encode(tok, TEXTS, 12)
    decoded = tok.batch_decode(
        [r[m > 0].astype(int).tolist() for r, m in zip(x[:, 0], x[:, 1])], skip_special_tokens=True
    )
    assert decoded[0] == "Café au la" and decoded[2] == "  two  spac"  # 11 bytes after <s> ("é" is two)


def test_tokenizer_option_is_checked():
    assert names.gpt_tiny_options("gpt-tiny[tokenizer=byte,max_length=32]").tokenizer == "byte"
    assert names.gpt_tiny_options("gpt-tiny").tokenizer == "word"
    with pytest.raises(ModelError, match=r"tokenizer='bpe' in 'gpt-tiny\[tokenizer=bpe\]' is not one of word, byte"):
        names.gpt_tiny_options("gpt-tiny[tokenizer=bpe]")
    with pytest.raises(ConfigError, match=r"^model: vocab= in .* sizes the word tokenizer; tokenizer=byte has 256"):
        config_run.from_dict({"model": "gpt-tiny[tokenizer=byte,vocab=500]"})


def test_word_tokenizer_keeps_reserved_words():
    tok = data.word_tokenizer(["the cat sat", "the dog"], 8, 10, reserved=("zebra", "7"))
    assert {"zebra", "7", "the"} <= set(tok.get_vocab()) and len(tok) == 8
    assert tok.unk_token_id not in tok("zebra 7")["input_ids"]


@pytest.mark.slow
def test_an_audit_with_the_byte_tokenizer(news_csv: Path):
    result = miaudit.run(
        {
            "dataset": {"path": str(news_csv), "text_column": "body"},
            "model": "gpt-tiny[tokenizer=byte,max_length=48,width=16]",
            "train": {"epochs": 2, "batch_size": 16, "lr": 0.01, "optimizer": "adamw"},
            "references": 1,
            "attacks": ["attack-p", "zlib", "min-k-pp", "lira"],
        }
    )
    exp = result.run.experiment
    assert len(exp.dataset.tokenizer) == 259 and exp.target.architecture.startswith("gpt-tiny[tokenizer=byte")
    assert all(0 <= m["auc"] <= 1 for m in result.metrics.values()) and result.run.blind_baseline is not None
    texts = pd.read_csv(news_csv)["body"]
    assert exp.dataset.texts[0] == texts[0] and result.scores.filter(like="score").notna().all().all()
