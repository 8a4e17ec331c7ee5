"""Per-record membership signals computed from logits, in float64, in one pass over the logits.

Every function takes logits of shape (..., N, C) (any float dtype: float32 logits are widened chunk by
chunk, never as a whole) and labels of shape (N,) and returns a float64 array of shape (..., N). Leading
axes (e.g. K reference models) are broadcast, so the same code scores the target and a stack of
references. ``compute`` also takes a ``LogitStack`` (K references' logits left in the store's memory
maps): it reads the signal from the stack's signal source when it has one (computed once per model and
kept in the store), else computes it model by model, in chunks of records.

``bundle`` is the pass itself: per chunk of records, the true-class logit, the largest other logit (the
hinge) and the sum of the other classes' exponentials relative to it (the rescaled logit); the loss and
the confidence follow from the rescaled logit per record. It is the textbook formula in float64 (equal to
scipy's logsumexp route within 1e-13 relative), only without scipy's per-call copies and checks, which made
that route 3x slower.

float32 logits of many classes (the store's dtype, also when an attack holds them widened to float64: a
chunk whose float64 values are all float32 numbers takes it too) take a faster route: numpy's float32 ``exp`` is
vectorised where its float64 one is not (5x faster on AVX2), and the exponentials are the pass's cost. The
differences to the largest other logit are rounded to float32 and exponentiated there; the true-class
logit, the maximum and the hinge stay exact and the sum accumulates in float64. A term's error is then
float32 ``exp``'s (at most 2.2e-7 relative over [-80, 0], measured on 5e7 points; below, the terms are
negligible beside the top one, 1) plus the rounding of its exponent (|d| 2^-24 relative), and the sum's
exponential-weighted mean of |d| (the top term, d = 0, included) is largest when the other C - 2 terms share
one exponent (setting its derivative to zero gives the same d for every term): 2.6 at C = 100. So the
rescaled logit is within ``float32_error_bound(C)`` absolute (4.1e-7 at C = 100). Records where that could
exceed 1e-6 relative, or where anything is not finite, are computed again in float64: every signal stays
within 1e-6 relative of the float64 route (tests/stats/test_signals.py).
"""

from __future__ import annotations

import functools
from enum import Enum
from typing import TypeAlias

import numpy as np

from .logitstack import LogitStack

__all__ = [
    "CORRECT", "FINITE", "Signal", "hinge", "rescaled_logit", "loss", "confidence", "SIGNALS", "compute", "oriented",
    "bundle",
]  # fmt: skip

CHUNK_ROWS = 2048  # rows per float64 buffer: 2,048 x 100 classes x 8 bytes = 1.6 MB, cache-sized
FLOAT32_MIN_CLASSES = 8  # below, the exponentials cost little and the float64 route is as fast
FLOAT32_EXP_ERROR = 2.5e-7  # float32 exp's largest relative error, rounded up (module docstring)
RELATIVE_TOLERANCE = 1e-6  # what the float32 route promises against the float64 one


class Signal(str, Enum):
    """The per-record score an attack reads off a model's logits (a ``str`` so configs spell it plainly)."""

    hinge = "hinge"
    rescaled_logit = "rescaled_logit"
    loss = "loss"
    confidence = "confidence"


# What ``bundle`` returns besides the signals: whether the model's top class is the label (argmax ties
# broken towards the lower class, as ``argmax``), so accuracies need no second pass over the logits, and
# whether all of the record's logits are finite, so checking them needs none either.
CORRECT = "correct"
FINITE = "finite"


# signal name (hinge, rescaled_logit, loss, confidence; CORRECT, FINITE) -> its values: arrays, not a result
Signals: TypeAlias = dict[str, np.ndarray]


def bundle(logits: np.ndarray, labels: np.ndarray, chunk: int = CHUNK_ROWS) -> Signals:
    """Every signal of ``logits`` (..., N, C) with ``labels`` (N,), and ``correct``, each (..., N).

    Raises:
        ValueError: when the labels do not fit the records' axis.
    """
    logits = np.asarray(logits)
    lead, n_classes = logits.shape[:-1], logits.shape[-1]
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != lead[-1:]:
        raise ValueError(f"labels: shape {labels.shape} does not fit logits of shape {logits.shape}")
    flat = logits.reshape(-1, n_classes)
    flat_labels = np.broadcast_to(labels, lead).reshape(-1)
    rows = len(flat)
    out = {name: np.empty(rows) for name in ("hinge", "rescaled_logit")}
    correct = np.empty(rows, dtype=bool)
    finite = np.empty(rows, dtype=bool)
    fast = flat.dtype in (np.float32, np.float64) and n_classes >= FLOAT32_MIN_CLASSES
    exact_below = float32_error_bound(n_classes) / RELATIVE_TOLERANCE
    size = (min(chunk, rows), n_classes)
    buf32, buf64 = np.empty(size, dtype=np.float32), np.empty(size)
    for start in range(0, rows, chunk):
        stop = min(start + chunk, rows)
        part, z, y = slice(start, stop), flat[start:stop], flat_labels[start:stop]
        finite[part] = np.isfinite(z).all(axis=1)
        narrow = _exactly_float32(z) if fast else None
        if narrow is not None:
            redo = _chunk_pass_float32(narrow, y, buf32[: stop - start], out, correct, part, exact_below)
            if redo.size:
                _float64_rows(z[redo], y[redo], out, correct, start + redo)
        else:
            _chunk_pass(z, y, buf64[: stop - start], out, correct, part)
    result = {name: values.reshape(lead) for name, values in out.items()}
    with np.errstate(invalid="ignore"):  # NaN logits give NaN signals quietly: the stored `finite` flags them
        result["loss"] = np.logaddexp(0.0, -result["rescaled_logit"])
    result["confidence"] = np.exp(-result["loss"])
    result[CORRECT] = correct.reshape(lead)
    result[FINITE] = finite.reshape(lead)
    return result


def _chunk_pass(
    z: np.ndarray, y: np.ndarray, buf: np.ndarray, out: dict[str, np.ndarray], correct: np.ndarray, part: slice
) -> None:
    """Fill ``out[...][part]`` and ``correct[part]`` for the records of ``z`` (r, C), in ``buf`` (r, C) float64."""
    rows = np.arange(len(z))
    buf[...] = z
    true = buf[rows, y]  # a copy (fancy indexing)
    buf[rows, y] = -np.inf  # the true class drops out of the max and of the sum
    top_other = buf.max(axis=1)
    hinge = true - top_other
    correct[part] = hinge > 0
    tied = np.flatnonzero(hinge == 0)
    if tied.size:  # argmax's rule: the first class holding the maximum wins
        correct[part][tied] = y[tied] < np.argmax(buf[tied] == top_other[tied, None], axis=1)
    shift = np.where(np.isfinite(top_other), top_other, 0.0)  # no other class (C = 1), or an infinite one
    buf -= shift[:, None]
    np.exp(buf, out=buf)
    with np.errstate(divide="ignore"):  # sum 0: no other class, rescaled logit +inf as logsumexp gives
        out["rescaled_logit"][part] = true - shift - np.log(buf.sum(axis=1))
    out["hinge"][part] = hinge


def _exactly_float32(z: np.ndarray) -> np.ndarray | None:
    """``z`` as float32 when that loses nothing (float32 logits, or float64 ones widened from float32)."""
    if z.dtype == np.float32:
        return z
    narrow = z.astype(np.float32)
    return narrow if np.array_equal(narrow, z) else None


@functools.cache
def float32_error_bound(n_classes: int) -> float:
    """Largest absolute error of the float32 route's rescaled logit with ``n_classes`` classes (docstring above):
    float32 exp's error plus 2^-24 times the largest weighted mean |d|, found on a fine grid of the shared d."""
    d = -np.linspace(0.0, 60.0, 600_001)[1:]
    others = max(n_classes - 2, 0) * np.exp(d)
    weighted_mean = float((others * -d / (1 + others)).max())
    return FLOAT32_EXP_ERROR + 2.0**-24 * weighted_mean * 1.01  # 1% for the grid's resolution


def _chunk_pass_float32(
    z: np.ndarray,
    y: np.ndarray,
    buf: np.ndarray,
    out: dict[str, np.ndarray],
    correct: np.ndarray,
    part: slice,
    exact_below: float,
) -> np.ndarray:
    """``_chunk_pass`` with the exponentials in float32 (``buf``); returns the rows to compute in float64:
    |rescaled logit| < ``exact_below`` or anything not finite."""
    rows = np.arange(len(z))
    buf[...] = z
    true = buf[rows, y].astype(np.float64)
    buf[rows, y] = -np.inf
    top_other = buf.max(axis=1)
    hinge = true - top_other  # exact: a float32 difference is exact in float64
    correct[part] = hinge > 0
    tied = np.flatnonzero(hinge == 0)
    if tied.size:  # argmax's rule: the first class holding the maximum wins
        correct[part][tied] = y[tied] < np.argmax(buf[tied] == top_other[tied, None], axis=1)
    buf -= top_other[:, None]
    np.exp(buf, out=buf)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = hinge - np.log(buf.sum(axis=1, dtype=np.float64))
    out["rescaled_logit"][part] = phi
    out["hinge"][part] = hinge
    return np.flatnonzero(~(np.abs(phi) >= exact_below) | ~np.isfinite(phi))  # nan compares False


def _float64_rows(
    z: np.ndarray, y: np.ndarray, out: dict[str, np.ndarray], correct: np.ndarray, where: np.ndarray
) -> None:
    """``_chunk_pass`` (float64) on some rows ``z`` of a chunk, written at positions ``where``."""
    part = {name: np.empty(len(z)) for name in out}
    hit = np.empty(len(z), dtype=bool)
    _chunk_pass(z, y, np.empty(z.shape), part, hit, slice(None))
    for name, values in part.items():
        out[name][where] = values
    correct[where] = hit


def hinge(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """f_y(x) - max_{y' != y} f_{y'}(x): the default score (BMIA paper, section 3)."""
    return bundle(logits, labels)["hinge"]


def rescaled_logit(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """LiRA's log(p_y / (1 - p_y)) = f_y - logsumexp_{y' != y} f_{y'}, stable for p_y near 1."""
    return bundle(logits, labels)["rescaled_logit"]


def loss(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Cross-entropy -log p_y = log(1 + exp(-rescaled logit)).

    Through the rescaled logit, not logsumexp(f) - f_y: that difference rounds to
    exactly 0 once p_y is within 1e-16 of 1, tying every confident record.
    """
    return bundle(logits, labels)["loss"]


def confidence(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """True-class softmax probability p_y."""
    return bundle(logits, labels)["confidence"]


SIGNALS = {
    Signal.hinge: hinge,
    Signal.rescaled_logit: rescaled_logit,
    Signal.loss: loss,
    Signal.confidence: confidence,
}


def compute(name: Signal | str, logits: np.ndarray | LogitStack, labels: np.ndarray) -> np.ndarray:
    """Signal by name; raises ValueError naming the choices."""
    try:
        signal = Signal(name)
    except ValueError:
        raise ValueError(f"unknown signal {name!r}; expected one of {[s.value for s in Signal]}") from None
    if not isinstance(logits, LogitStack):
        return bundle(logits, labels)[signal.value]
    if logits.source is not None:
        stored = logits.source.stacked(logits.per_model, logits.rows, signal.value, labels)
        if stored is not None:
            return stored
    return logits.map_records(lambda chunk, records: bundle(chunk, labels[records])[signal.value])


def oriented(name: Signal | str, logits: np.ndarray | LogitStack, labels: np.ndarray) -> np.ndarray:
    """The signal with higher = more likely member (the loss is negated)."""
    s = compute(name, logits, labels)
    return -s if name == Signal.loss else s
