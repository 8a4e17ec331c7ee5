"""Per-record membership signals computed from logits, in float64.

Every function takes logits of shape (..., N, C) and labels of shape (N,) and
returns an array of shape (..., N). Leading axes (e.g. K reference models) are
broadcast, so the same code scores the target and a stack of references. ``compute``
also takes a ``LogitStack`` (K references' logits left in the store's memory maps) and
computes the signal model by model, in chunks of records.
"""

from __future__ import annotations

from enum import Enum

import numpy as np
from scipy.special import logsumexp

from .logitstack import LogitStack

__all__ = ["Signal", "hinge", "rescaled_logit", "loss", "confidence", "SIGNALS", "compute", "oriented"]


class Signal(str, Enum):
    """The per-record score an attack reads off a model's logits (a ``str`` so configs spell it plainly)."""

    hinge = "hinge"
    rescaled_logit = "rescaled_logit"
    loss = "loss"
    confidence = "confidence"


def _true_class(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    idx = np.broadcast_to(labels, logits.shape[:-1])[..., None]
    return np.take_along_axis(logits, idx, axis=-1)[..., 0]


def _others(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Logits with the true class replaced by -inf (so it drops out of max and logsumexp)."""
    out = np.array(logits, dtype=np.float64, copy=True)
    idx = np.broadcast_to(labels, out.shape[:-1])[..., None]
    np.put_along_axis(out, idx, -np.inf, axis=-1)
    return out


def hinge(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """f_y(x) - max_{y' != y} f_{y'}(x): the default score (BMIA paper, section 3)."""
    logits = np.asarray(logits, dtype=np.float64)
    return _true_class(logits, labels) - _others(logits, labels).max(axis=-1)


def rescaled_logit(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """LiRA's log(p_y / (1 - p_y)) = f_y - logsumexp_{y' != y} f_{y'}, stable for p_y near 1."""
    logits = np.asarray(logits, dtype=np.float64)
    return _true_class(logits, labels) - logsumexp(_others(logits, labels), axis=-1)


def loss(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Cross-entropy -log p_y = log(1 + exp(-rescaled logit)).

    Through the rescaled logit, not logsumexp(f) - f_y: that difference rounds to
    exactly 0 once p_y is within 1e-16 of 1, tying every confident record.
    """
    return np.logaddexp(0.0, -rescaled_logit(logits, labels))


def confidence(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """True-class softmax probability p_y."""
    return np.exp(-loss(logits, labels))


SIGNALS = {
    Signal.hinge: hinge,
    Signal.rescaled_logit: rescaled_logit,
    Signal.loss: loss,
    Signal.confidence: confidence,
}


def compute(name: Signal | str, logits: np.ndarray | LogitStack, labels: np.ndarray) -> np.ndarray:
    """Signal by name; raises ValueError naming the choices."""
    try:
        fn = SIGNALS[Signal(name)]
    except ValueError:
        raise ValueError(f"unknown signal {name!r}; expected one of {[s.value for s in Signal]}") from None
    if isinstance(logits, LogitStack):
        return logits.map_records(lambda chunk, records: fn(chunk, labels[records]))
    return fn(logits, labels)


def oriented(name: Signal | str, logits: np.ndarray | LogitStack, labels: np.ndarray) -> np.ndarray:
    """The signal with higher = more likely member (the loss is negated)."""
    s = compute(name, logits, labels)
    return -s if name == Signal.loss else s
