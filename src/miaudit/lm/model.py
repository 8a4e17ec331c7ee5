"""A causal LM as miaudit's models see it: records in, one two-class "sequence logit" row out.

``CausalLM`` wraps any ``AutoModelForCausalLM`` (``gpt-tiny``: a GPT-2 of the configured size, randomly
initialised; ``hf:PATH``: the directory's weights, which training then fine-tunes) with its tokenizer.
``forward(x)`` returns (n, 2) float32 logits [l, log(1 - exp(l))] with l the record's mean token
log-likelihood: softmax gives (exp(l), 1 - exp(l)) and the record's label is 0, so the cross-entropy
the training loop minimises is exactly -l (the LM loss), and every classifier signal is a function of
l: loss = -l, confidence = exp(l) (the geometric-mean token probability), hinge = rescaled logit =
logit(exp(l)). ``token_outputs`` gives the per-token view (``tokens.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import torch
import torch.nn as nn

from ..errors import ModelError
from . import names
from .names import MAX_MEAN_LOGLIK

if TYPE_CHECKING:
    from .data import Tokenizer

RECORDS_PER_PASS = 64  # records per forward pass: bounds the (records, tokens, vocabulary) logits held


class TransformersLM(Protocol):
    """What ``CausalLM`` uses of a transformers causal LM (a ``PreTrainedModel``; transformers is optional)."""

    @property
    def base_model(self) -> nn.Module: ...

    def get_output_embeddings(self) -> nn.Module | None: ...

    def get_input_embeddings(self) -> nn.Module: ...

    def save_pretrained(self, save_directory: str | os.PathLike[str]) -> None: ...


class CausalLM(nn.Module):
    """A causal LM with its tokenizer; ``lm_head`` the output layer, ``body`` what feeds it."""

    def __init__(self, model: TransformersLM, tokenizer: Tokenizer):
        super().__init__()
        self.model = model  # a transformers PreTrainedModel
        self.tokenizer = tokenizer
        head = model.get_output_embeddings()
        if not isinstance(head, nn.Linear):
            raise ModelError(f"model: {type(model).__name__} has no linear output layer (get_output_embeddings)")
        self.lm_head: nn.Linear = head

    @property
    def tied(self) -> bool:
        """Whether the output layer shares its weight with the input embedding (GPT-2 does)."""
        return self.lm_head.weight is self.model.get_input_embeddings().weight

    def token_outputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(features (n, T-1, d) the head reads at positions 0..T-2, next tokens (n, T-1), their mask (n, T-1))."""
        ids, mask = x[:, 0].long(), x[:, 1].long()
        hidden = self.model.base_model(input_ids=ids, attention_mask=mask).last_hidden_state
        return hidden[:, :-1], ids[:, 1:], mask[:, 1:]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([sequence_logits(self.mean_loglik(part)) for part in _parts(x)])

    def mean_loglik(self, x: torch.Tensor) -> torch.Tensor:
        """(n,) each record's mean log-likelihood of its tokens after the first."""
        features, targets, mask = self.token_outputs(x)
        logp = torch.log_softmax(self.lm_head(features).float(), dim=-1).gather(-1, targets[..., None])[..., 0]
        return (logp * mask).sum(1) / mask.sum(1).clamp(min=1)

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:  # torch's overloads, as torch types them
        """The weights with a tied output layer's weight a copy: safetensors (the store) refuses shared memory."""
        state = super().state_dict(*args, **kwargs)
        seen: set[int] = set()
        for key, value in state.items():
            if value.data_ptr() in seen:
                state[key] = value.clone()
            seen.add(value.data_ptr())
        return state


def sequence_logits(mean_loglik: torch.Tensor) -> torch.Tensor:
    """(n,) mean token log-likelihoods -> (n, 2) logits [l, log(1 - exp(l))], l held below 0."""
    ell = mean_loglik.clamp(max=MAX_MEAN_LOGLIK)
    log1mexp = torch.where(ell > -0.6931, torch.log(-torch.expm1(ell)), torch.log1p(-torch.exp(ell)))
    return torch.stack([ell, log1mexp], dim=1)


def _parts(x: torch.Tensor) -> Iterator[torch.Tensor]:
    return iter(x.split(RECORDS_PER_PASS)) if len(x) else iter([x])


def _transformers():  # deferred: importing this module stays free of transformers until a model is built
    from ..models.hf import require_transformers

    return require_transformers()


def build(spec: str, tokenizer: Tokenizer, fresh: bool = False) -> CausalLM:
    """A fresh ``gpt-tiny`` (weights from torch's current seed) or the ``hf:`` directory's causal LM (``fresh``:
    its architecture with new weights from torch's current seed)."""
    if names.is_gpt_tiny(spec):
        opts = names.gpt_tiny_options(spec)
        t = _transformers()
        config = t.GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=opts.max_length,
            n_embd=opts.width,
            n_layer=opts.layers,
            n_head=max(1, opts.width // 32),
            # std 1/sqrt(width): GPT-2's 0.02 is sized for 768 wide; at 64 it starts near-uniform and a few
            # epochs give a unigram model, whose predictive hardly varies with the context
            initializer_range=1 / math.sqrt(opts.width),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            resid_pdrop=0.0,  # no dropout: pre-training of LLMs mostly uses none, and the audit is of the weights
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
        return CausalLM(t.GPT2LMHeadModel(config), tokenizer)
    path, auto = names.hf_path(spec), _transformers().AutoModelForCausalLM
    try:
        if fresh:
            config = _transformers().AutoConfig.from_pretrained(str(path), local_files_only=True)
            model = auto.from_config(config)
        else:
            model = auto.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as e:
        raise ModelError(f"model: cannot load hf:{path} as a causal LM ({str(e).splitlines()[0][:120]})") from None
    return CausalLM(model, tokenizer)
