"""Which model names are causal language models, and the options of the built-in ``gpt-tiny``.

``gpt-tiny[max_length=64,vocab=3000,layers=2,width=64,tokenizer=word]``: every option optional
(``tokenizer=byte``: one token per UTF-8 byte, no ``vocab``). ``hf:PATH`` is a
causal LM when its config.json names a ``...ForCausalLM`` or ``...LMHeadModel`` architecture (a
sequence classifier stays with ``models/hf.py``). No transformers import here: configs validate fast.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import ModelError

GPT_TINY = "gpt-tiny"
_GPT_TINY = re.compile(r"gpt-tiny(?:\[(?P<options>[^\[\]]*)\])?")
CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")
DEFAULT_MAX_LENGTH = 64
MAX_MEAN_LOGLIK = -1e-7  # log(1 - exp(l)) needs l < 0: a text fitted to float precision is held just below


TOKENIZERS = ("word", "byte")


@dataclass(frozen=True)
class TinyGPTOptions:
    """The built-in model's size: tokens per record, word vocabulary (specials included), blocks, width, and
    its tokenizer: ``word`` (the most frequent words of the texts) or ``byte`` (UTF-8 bytes)."""

    max_length: int = DEFAULT_MAX_LENGTH
    vocab: int = 3000
    layers: int = 2
    width: int = 64
    tokenizer: str = "word"


def is_gpt_tiny(spec: str) -> bool:
    return _GPT_TINY.fullmatch(spec.strip()) is not None


def gpt_tiny_options(spec: str) -> TinyGPTOptions:
    """The options of ``gpt-tiny[key=value,...]``; a one-line ModelError for an unknown key or a bad value."""
    m = _GPT_TINY.fullmatch(spec.strip())
    if m is None:
        raise ModelError(f"model: {spec!r} is not gpt-tiny[key=value,...]")
    known = {f.name for f in fields(TinyGPTOptions)}
    values: dict[str, Any] = {}
    for item in filter(None, (m["options"] or "").split(",")):
        key, _, raw = (s.strip() for s in item.partition("="))
        if key not in known:
            raise ModelError(f"model: unknown option {key!r} in {spec!r}; known: {sorted(known)}")
        if key == "tokenizer":
            if raw not in TOKENIZERS:
                raise ModelError(f"model: tokenizer={raw!r} in {spec!r} is not one of {', '.join(TOKENIZERS)}")
            values[key] = raw
        elif not raw.isdigit() or int(raw) < 2:
            raise ModelError(f"model: {key}={raw!r} in {spec!r} is not an integer >= 2")
        else:
            values[key] = int(raw)
    if values.get("tokenizer") == "byte" and "vocab" in values:
        raise ModelError(f"model: vocab= in {spec!r} sizes the word tokenizer; tokenizer=byte has 256 bytes")
    return TinyGPTOptions(**values)


def hf_path(spec: str) -> Path | None:
    """The directory of ``hf:PATH[...]`` (None for any other name)."""
    if not spec.startswith("hf:"):
        return None
    return Path(spec[3:].split("[", 1)[0]).expanduser()


def hf_max_length(spec: str) -> int | None:
    """``hf:PATH[max_length=N]``'s N, else None (``models/hf.py`` checks the option's form)."""
    m = re.search(r"\[(?:[^\]]*,)?\s*max_length\s*=\s*(\d+)", spec)
    return int(m.group(1)) if m else None


def is_causal_lm(spec: str | None) -> bool:
    """Whether ``spec`` names a causal LM: ``gpt-tiny[...]``, or an ``hf:`` directory whose config.json
    declares a causal-LM architecture."""
    if spec is None:
        return False
    if is_gpt_tiny(spec):
        return True
    path = hf_path(spec)
    if path is None or not (path / "config.json").is_file():
        return False
    try:
        architectures = json.loads((path / "config.json").read_text()).get("architectures") or []
    except (OSError, ValueError):
        return False
    return any(str(a).endswith(CAUSAL_SUFFIXES) for a in architectures)


def base_spec(value: str) -> str:
    """``train.base``'s value as ``hf:PATH``, checked to be a local causal LM directory (a bare path is taken
    as ``hf:PATH``); a one-line ValueError saying what the directory lacks."""
    spec = value.strip() if value.strip().startswith("hf:") else f"hf:{value.strip()}"
    path = hf_path(spec)
    assert path is not None  # spec starts with hf:
    if not (path / "config.json").is_file():
        raise ValueError(f"{path} is not a local directory with a config.json (a causal LM saved by transformers)")
    if not is_causal_lm(spec):
        raise ValueError(
            f"{path} is not a causal LM: its config.json names no ...{' or ...'.join(CAUSAL_SUFFIXES)} architecture"
        )
    return spec


def check_vocabulary(spec: str, tokens: int, field: str) -> None:
    """A ModelError naming ``field`` when the ``hf:`` directory's vocabulary cannot hold ``tokens`` token ids
    (the audited model's tokenizer): fine-tuning it on those ids would index past its embedding."""
    path = hf_path(spec)
    assert path is not None
    try:
        size = json.loads((path / "config.json").read_text()).get("vocab_size")
    except (OSError, ValueError):
        size = None
    if isinstance(size, int) and size < tokens:
        raise ModelError(
            f"{field}: {spec} has a vocabulary of {size} tokens, the audited model's tokenizer {tokens}; fine-tune "
            "from the base the model was fine-tuned from"
        )
