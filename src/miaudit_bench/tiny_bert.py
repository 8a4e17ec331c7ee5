"""A small BERT built from scratch, saved as a local Hugging Face directory for ``model: hf:PATH``.

For the text path where no pretrained checkpoint is at hand (tests, the ``realmodels`` benchmark on
2 CPU cores): a word-level tokenizer over a given vocabulary (``vocabulary`` picks the most frequent
words of a corpus) and a randomly initialised ``BertForSequenceClassification``. Nothing is
downloaded. A real audit points ``model: hf:`` at the user's own fine-tuned checkpoint instead.
"""

from __future__ import annotations

from pathlib import Path

import torch

from miaudit.lm.vocabulary import vocabulary  # noqa: F401  (re-exported: tiny_bert.vocabulary)

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build(
    directory: Path,
    words: list[str],
    n_labels: int,
    *,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    max_length: int = 32,
    seed: int = 0,
) -> Path:
    """Save a word-level tokenizer over ``words`` and a BERT of ``layers`` x ``hidden`` (initial weights from
    ``seed``) into ``directory``; returns it. miaudit trains the model itself (``train:``); every model of a
    run starts from this one saved initialisation, as fine-tuning from one checkpoint does."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast
    from transformers.utils import logging

    logging.disable_progress_bar()  # "Writing model shards" is noise in a benchmark's log

    vocab = SPECIAL + [w for w in dict.fromkeys(words) if w not in SPECIAL]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    special = {"unk_token": "[UNK]", "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]"}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, mask_token="[MASK]", model_max_length=max_length, **special)
    fast.save_pretrained(directory)
    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=max_length,
    )
    cfg.num_labels = n_labels  # a property of transformers' configs (it sets id2label), not a constructor field
    BertForSequenceClassification(cfg).save_pretrained(directory)
    return Path(directory)
