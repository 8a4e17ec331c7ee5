"""What each output mode answers, as fixed-width rows (the store's unit), and as the logits attacks read.

- ``logits``: the C logits, as served.
- ``probabilities``: the C probabilities; their logarithms are logits up to a per-record constant, which no
  signal sees (every signal is a function of the softmax), so every attack on logits runs on them. A
  probability that underflowed to 0 is floored at ``PROBABILITY_FLOOR`` (the smallest normal float32, log
  = -87.3): below it the served numbers say nothing. A true-class probability that saturated at 1.0 costs
  nothing as long as the other classes' probabilities are above the floor: the signals take the margin from
  them (rescaled logit = log p_y - log sum_{j != y} p_j).
- ``top-k``: the k most likely classes with their probabilities. The C - k classes not shown share the mass
  left, 1 - sum(top k), equally (each at most the smallest shown; floored as above): the correction that
  makes a full row, exact for the true class whenever it is among the k.
- ``label``: the predicted class only. The row is the one-hot vector of it (so the target's accuracy reads
  as for logits); only attacks registered for ``label`` read it, and they ask for labels on inputs of their
  own through ``target.EndpointTarget``.
"""

from __future__ import annotations

import numpy as np

from .protocols import MalformedAnswer

PROBABILITY_FLOOR = float(np.finfo(np.float32).tiny)


def width(output: str, n_classes: int, k: int) -> int:
    """Numbers per record in a stored row."""
    return {"logits": n_classes, "probabilities": n_classes, "top-k": 2 * k, "label": 1}[output]


def _rows_of(a: np.ndarray, n: int, per_row: int, what: str) -> np.ndarray:
    if a.size != n * per_row:
        shown = "x".join(str(s) for s in a.shape) or "scalar"
        raise MalformedAnswer(f"{what}: expected {n} x {per_row} values for {n} records, got shape {shown}")
    return a.reshape(n, per_row)


def rows(arrays: list[np.ndarray], output: str, n: int, n_classes: int, k: int) -> np.ndarray:
    """(n, width) float64 rows from the answer's arrays; ``MalformedAnswer`` naming the expected shape."""
    if output in ("logits", "probabilities"):
        values = next((a for a in arrays if a.dtype.kind == "f"), arrays[0])
        out = _rows_of(values, n, n_classes, output).astype(np.float64)
        if output == "probabilities" and ((out < 0) | (out > 1 + 1e-6)).any():
            raise MalformedAnswer("probabilities: values outside [0, 1]")
    elif output == "label":
        labels = _rows_of(arrays[0], n, 1, "label").astype(np.float64)
        if (labels != np.round(labels)).any() or (labels < 0).any() or (labels >= n_classes).any():
            raise MalformedAnswer(f"label: expected class indices in [0, {n_classes})")
        out = labels
    else:
        ints = [a for a in arrays if a.dtype.kind in "iu"]
        floats = [a for a in arrays if a.dtype.kind == "f"]
        if len(arrays) < 2 or not ints or not floats:
            raise MalformedAnswer("top-k: expected two outputs, the classes (integers) and their probabilities")
        classes = _rows_of(ints[0], n, k, "top-k classes")
        if (classes < 0).any() or (classes >= n_classes).any():
            raise MalformedAnswer(f"top-k classes: expected class indices in [0, {n_classes})")
        out = np.concatenate([classes.astype(np.float64), _rows_of(floats[0], n, k, "top-k probabilities")], axis=1)
    if not np.isfinite(out).all():
        raise MalformedAnswer(f"{output}: NaN or inf in the answer")
    return out


def misdeclared(rows: np.ndarray, output: str) -> str | None:
    """Why answers look like another output mode than the declared one (None: they fit it), read off a batch:
    ``logits`` that are all in [0, 1] and sum to 1 per record are probabilities (their logarithms, not they, are
    logits up to a constant: read as logits, every attack sees the wrong margins); ``probabilities`` that do not
    sum to 1 are scores or logits."""
    if len(rows) < 2 or output not in ("logits", "probabilities"):
        return None
    sums = rows.sum(axis=1)
    if output == "logits" and ((rows >= 0) & (rows <= 1)).all() and np.allclose(sums, 1.0, atol=1e-3):
        return "they look like probabilities (every record's values in [0, 1], summing to 1): set output: probabilities"
    if output == "probabilities" and not np.allclose(sums, 1.0, atol=1e-2):
        return (
            f"they do not sum to 1 per record ({sums.min():.3g} to {sums.max():.3g}): scores or logits, not "
            "probabilities; set output: logits if they are logits"
        )
    return None


def logits(stored: np.ndarray, output: str, n_classes: int) -> np.ndarray:
    """(n, C) float64 logits (up to a per-record constant) from stored rows."""
    n = len(stored)
    if output == "logits":
        return stored.astype(np.float64)
    if output == "probabilities":
        return np.log(np.maximum(stored, PROBABILITY_FLOOR))
    if output == "label":
        out = np.zeros((n, n_classes))
        out[np.arange(n), stored[:, 0].astype(np.int64)] = 1.0
        return out
    k = stored.shape[1] // 2
    classes, probs = stored[:, :k].astype(np.int64), np.maximum(stored[:, k:], PROBABILITY_FLOOR)
    rest = (1.0 - probs.sum(axis=1)) / max(n_classes - k, 1)
    rest = np.clip(rest, PROBABILITY_FLOOR, probs.min(axis=1))
    out = np.repeat(np.log(rest)[:, None], n_classes, axis=1)
    out[np.arange(n)[:, None], classes] = np.log(probs)
    return out


def labels(stored: np.ndarray, output: str) -> np.ndarray:
    """(n,) int64 predicted classes from stored rows, whatever the mode."""
    if output == "label":
        return stored[:, 0].astype(np.int64)
    if output == "top-k":  # the shown class with the highest probability (answers need not be sorted)
        k = stored.shape[1] // 2
        return stored[np.arange(len(stored)), np.argmax(stored[:, k:], axis=1)].astype(np.int64)
    return np.argmax(stored, axis=1).astype(np.int64)
