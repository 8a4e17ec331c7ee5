"""Text records for an LM audit: the built-in ``ag_news`` texts or a user CSV/JSONL (``text_column``),
tokenised by the model's tokenizer and truncated to ``max_length`` tokens.

``x`` is float32 (n, 2, max_length): token ids and attention mask, as ``models/hf.py`` packs them;
``y`` is all 0 and ``n_classes`` 2, the one binary "decision" a sequence is to the classifier attacks
(``model.sequence_logits``). The texts themselves travel with the data set (``TextDataset.texts``):
the blind baseline reads them. ``gpt-tiny``'s word-level tokenizer is built from the audited corpus,
members and non-members pooled (as the TF-IDF features of ``data/text.py`` are): it fixes which words
the model can name, not what it learns about them. ``gpt-tiny[tokenizer=byte]`` reads UTF-8 bytes
instead: no vocabulary to build, nothing unknown, any language.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from .. import storage
from ..data.base import Dataset, LoadContext, default_data_dir, require_file
from ..data.text import AG_NEWS_FILE, AG_NEWS_SHA256, read_news
from ..errors import DataError, ModelError
from ..storage import default_cache_dir
from . import names
from .vocabulary import vocabulary

PAD, UNK, BOS = "[PAD]", "[UNK]", "<s>"


@dataclass(frozen=True)
class TextSource:
    """Where an audit's texts come from (the config's ``dataset:``) and how a subset is drawn (``seed``)."""

    name: str | None = "ag_news"
    path: Path | None = None
    text_column: str | None = None
    subset: int | None = None
    label: str = "ag_news"
    data_dir: Path | None = None
    cache_dir: Path | None = None
    seed: int = 0


class Tokenizer(Protocol):
    """What miaudit uses of a tokenizer: transformers' ``PreTrainedTokenizerFast`` (gpt-tiny's; an ``hf:``
    directory's ``AutoTokenizer``), or any object with these."""

    pad_token: str | None
    eos_token: str | None
    unk_token: str | None
    unk_token_id: int | None
    bos_token_id: int | None
    eos_token_id: int | None
    pad_token_id: int | None
    model_max_length: int

    def __call__(self, text: str | list[str], **options: object) -> Mapping[str, Any]: ...

    def __len__(self) -> int: ...

    def get_vocab(self) -> dict[str, int]: ...

    def batch_decode(self, sequences: list[list[int]], skip_special_tokens: bool = ...) -> list[str]: ...

    def save_pretrained(self, save_directory: str | os.PathLike[str]) -> object: ...


@dataclass(frozen=True, eq=False)
class TextDataset(Dataset):
    """A Dataset of tokenised texts, with the texts and the tokenizer that made ``x``."""

    texts: tuple[str, ...] = ()
    tokenizer: Any = None  # transformers' PreTrainedTokenizerFast (or any tokenizer with __call__ and decode)
    tokenizer_key: str = ""  # what fixes the tokenizer, for cache keys


def read_texts(name: str | None, path: Path | None, text_column: str | None, ctx: LoadContext) -> list[str]:
    """The texts: ag_news's title + description, or a CSV/JSONL file's ``text_column``."""
    if path is None:
        if name != "ag_news":
            raise DataError(f"dataset: {name!r} has no texts; a language model audits ag_news or a CSV/JSONL file")
        return read_news(require_file(ctx, AG_NEWS_FILE, AG_NEWS_SHA256, "ag_news"))[0]
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"dataset.path: file {path} not found")
    if text_column is None:
        raise DataError(f"dataset.text_column: name the column of {path.name} that holds the texts")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        elif suffix in (".jsonl", ".json"):
            frame = pd.read_json(path, lines=suffix == ".jsonl", dtype=False)
        else:
            raise DataError(f"dataset.path: a language model reads .csv or .jsonl texts, not {suffix!r}")
    except ValueError as e:
        raise DataError(f"dataset.path: cannot read {path.name} ({str(e).splitlines()[0][:100]})") from None
    if text_column not in frame.columns:
        shown = ", ".join(map(str, frame.columns[:10]))
        raise DataError(f"dataset.text_column: {path.name} has no column {text_column!r} (columns: {shown})")
    return frame[text_column].fillna("").astype(str).tolist()


def word_tokenizer(texts: list[str], size: int, max_length: int, reserved: tuple[str, ...] = ()) -> Tokenizer:
    """A word-level tokenizer over [PAD], [UNK], <s>, the ``reserved`` words and the most frequent lower-cased
    words of ``texts`` (ties by first appearance), ``size`` in all; every text starts with <s>, so its first
    word is predicted too."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    special = [PAD, UNK, BOS]
    fixed = special + [w for w in dict.fromkeys(reserved) if w not in special]
    vocab = fixed + [w for w in vocabulary(texts, size - len(fixed)) if w not in fixed]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token=UNK))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, 2)])
    tok.decoder = decoders.WordPiece()  # joins words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token=UNK, pad_token=PAD, bos_token=BOS, eos_token=BOS, model_max_length=max_length
    )


def byte_tokenizer(max_length: int) -> Tokenizer:
    """One token per UTF-8 byte (GPT-2's byte-to-character map, no merges) and [PAD], [UNK], <s>: every text
    is encoded whole, nothing is unknown, and decoding gives the text back exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    special = [PAD, UNK, BOS]
    symbols = special + sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE({s: i for i, s in enumerate(symbols)}, [], unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, 2)])
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token=UNK, pad_token=PAD, bos_token=BOS, eos_token=BOS, model_max_length=max_length
    )


def tiny_tokenizer(texts: list[str], spec: str, reserved: tuple[str, ...] = ()) -> Tokenizer:
    """gpt-tiny's tokenizer (``tokenizer=word``: over ``texts``' words and the ``reserved`` ones; ``byte``:
    UTF-8 bytes)."""
    opts = names.gpt_tiny_options(spec)
    if opts.tokenizer == "byte":
        return byte_tokenizer(opts.max_length)
    return word_tokenizer(texts, opts.vocab, opts.max_length, reserved)


def hf_tokenizer(spec: str) -> Tokenizer:
    from ..models.hf import require_transformers

    path = names.hf_path(spec)
    try:
        return require_transformers().AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as e:
        raise ModelError(f"model: no tokenizer in {path} ({str(e).splitlines()[0][:120]})") from None


def encode(tokenizer: Tokenizer, texts: list[str], max_length: int) -> np.ndarray:
    """float32 (n, 2, max_length): token ids and attention mask, padded and truncated. A tokenizer without
    a pad token pads with its end-of-text token (masked out either way)."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    enc = tokenizer(list(texts), padding="max_length", truncation=True, max_length=max_length, return_tensors="np")
    return np.stack([enc["input_ids"], enc["attention_mask"]], axis=1).astype(np.float32)


def max_length_for(spec: str, tokenizer: Tokenizer) -> int:
    if names.is_gpt_tiny(spec):
        return names.gpt_tiny_options(spec).max_length
    limit = tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else names.DEFAULT_MAX_LENGTH
    return names.hf_max_length(spec) or min(limit, names.DEFAULT_MAX_LENGTH)


def load(source: TextSource, spec: str, drop_short: bool = True, reserved: tuple[str, ...] = ()) -> TextDataset:
    """The config's texts (a seeded ``subset`` as ``data.load`` draws it), tokenised for model ``spec``. Texts
    of fewer than two tokens (nothing to predict) are dropped, unless ``drop_short`` is False (index files
    count the rows). ``reserved``: words gpt-tiny's word tokenizer must hold (the canaries')."""
    d = source
    ctx = LoadContext(
        data_dir=Path(d.data_dir).expanduser() if d.data_dir else default_data_dir(),
        cache_dir=Path(d.cache_dir).expanduser() if d.cache_dir else default_cache_dir(),
    )
    texts = read_texts(d.name, d.path, d.text_column, ctx)
    if d.subset is not None and d.subset < len(texts):
        order = np.random.default_rng(np.random.SeedSequence([d.seed, 0x5B5])).permutation(len(texts))
        texts = [texts[i] for i in np.sort(order[: d.subset])]
    if names.is_gpt_tiny(spec):
        tokenizer, length = tiny_tokenizer(texts, spec, reserved), names.gpt_tiny_options(spec).max_length
        key = storage.key(tokenizer.get_vocab())[:16]
    else:
        tokenizer = hf_tokenizer(spec)
        length, key = max_length_for(spec, tokenizer), ""
    return from_texts(texts, tokenizer, length, d.label, key, drop_short)


def from_texts(
    texts: list[str], tokenizer: Tokenizer, length: int, name: str, key: str = "", drop_short: bool = True
) -> TextDataset:
    """``texts`` tokenised (ids and mask, ``length`` tokens) as a TextDataset, those of fewer than two tokens
    dropped when ``drop_short``."""
    x = encode(tokenizer, texts, length)
    keep = x[:, 1].sum(axis=1) >= (2 if drop_short else 0)
    if keep.sum() < 20:
        raise DataError(f"dataset: {int(keep.sum())} texts of at least two tokens; an LM audit needs at least 20")
    return TextDataset(
        name=name,
        x=x[keep],
        y=np.zeros(int(keep.sum()), dtype=np.int64),
        n_classes=2,
        texts=tuple(t for t, k in zip(texts, keep, strict=True) if k),
        tokenizer=tokenizer,
        tokenizer_key=key,
    )


def short_records(ds: Dataset) -> np.ndarray:
    """Indices of the records with fewer than two tokens: nothing for the model to predict."""
    return np.flatnonzero(ds.x[:, 1].sum(axis=1) < 2)
