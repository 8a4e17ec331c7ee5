"""Strict checks on what a user brings: a model, its data, and who is a member.

Every check raises a one-line error naming the field (``members``,
``target``, ``min_fpr``, ``attacks.1`` ...), and every one runs before any model
is trained or any file written, so a refused audit leaves nothing behind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .. import storage
from ..errors import ConfigError, DataError, ModelError

if TYPE_CHECKING:  # the model checks load torch; the checks of arrays (``miaudit score``) do not
    import torch
    import torch.nn as nn

DRY_RUN_RECORDS = 2  # a forward pass on this many records reveals shape and class-count mismatches


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160]}" if text else type(e).__name__


def _dry_forward(model: nn.Module, x: np.ndarray, field: str) -> torch.Tensor:
    """The model's output on the first records, in eval mode; a failure is reported, not raised as is."""
    import torch
    import torch.nn as nn

    if not isinstance(model, nn.Module):
        raise ModelError(f"{field}: expected a torch.nn.Module, got {type(model).__name__}")
    try:
        with torch.no_grad():
            return model.eval()(torch.as_tensor(x[:DRY_RUN_RECORDS], dtype=torch.float32))
    except Exception as e:  # the user's model met data it was not built for: whatever it raised, say so in one line
        raise ModelError(
            f"{field}: forward pass fails on records of shape {tuple(x.shape[1:])} ({_first_line(e)})"
        ) from None


def model_classes(model: nn.Module, x: np.ndarray, field: str = "target") -> int:
    """The number of classes the model outputs on records like ``x``: it must give logits (n, C), C >= 2."""
    import torch

    out = _dry_forward(model, x, field)
    n = min(len(x), DRY_RUN_RECORDS)
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != n:
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ModelError(f"{field}: must return logits of shape (records, classes) for {n} record(s), got {shape}")
    if out.shape[1] < 2:
        raise ModelError(
            f"{field}: returns {out.shape[1]} value(s) per record; miaudit needs logits for at least 2 classes"
        )
    return int(out.shape[1])


def check_last_layer(model: nn.Module, x: np.ndarray, field: str, attack: str) -> None:
    """BMIA and GLS work on the last layer: ``features(x)``, ``head`` (nn.Linear with bias),
    forward = head(features)."""
    import torch
    import torch.nn as nn

    from ..lm.model import CausalLM

    if isinstance(model, CausalLM):  # BMIA reads a causal LM's output layer (attacks/_lm_posterior.py)
        return
    head, features = getattr(model, "head", None), getattr(model, "features", None)
    need = (
        f"{field}: {attack} needs a model with features(x) and head (nn.Linear with bias), "
        "forward(x) = head(features(x))"
    )
    if not isinstance(head, nn.Linear) or head.bias is None or not callable(features):
        raise ModelError(need)
    try:
        with torch.no_grad():
            xt = torch.as_tensor(x[:DRY_RUN_RECORDS], dtype=torch.float32)
            same = torch.allclose(model.eval()(xt), head(features(xt)), rtol=1e-4, atol=1e-5)
    except Exception as e:  # as in _dry_forward: a user's features() may raise anything
        raise ModelError(f"{need} ({_first_line(e)})") from None
    if not same:
        raise ModelError(f"{need}; here they differ")


def check_logits(logits: np.ndarray, field: str, record_name: Callable[[int], str]) -> None:
    """NaN or inf logits would silently become NaN scores: refuse them."""
    bad = ~np.isfinite(logits).all(axis=1)
    if bad.any():
        raise ModelError(
            f"{field}: outputs NaN or inf logits on {int(bad.sum())} record(s) (first: "
            f"{record_name(int(np.argmax(bad)))})"
        )


def row_digests(x: np.ndarray, y: np.ndarray) -> list[bytes]:
    """A hash of each record's features and label; +0.0 normalises -0.0, which compares equal but hashes apart."""
    rows = np.ascontiguousarray(x.reshape(len(x), -1), dtype=np.float32) + np.float32(0.0)
    labels = np.ascontiguousarray(np.asarray(y, dtype=np.int64).reshape(len(x), 1))
    return storage.row_digests(np.concatenate([rows.view(np.uint8), labels.view(np.uint8)], axis=1))


def nonempty(idx: np.ndarray, field: str) -> np.ndarray:
    """``idx`` itself, or a one-line error naming ``field`` when it holds no record."""
    if not len(idx):
        raise DataError(f"{field}: no records; the audit needs at least one")
    return idx


def check_disjoint_indices(
    first: np.ndarray, second: np.ndarray, names: tuple[str, str] = ("members", "nonmembers")
) -> None:
    both = np.intersect1d(first, second)
    if both.size:
        raise DataError(
            f"{names[1]}: {both.size} record index(es) also in {names[0]} (e.g. {both[0]}); "
            "a record is either a member or not"
        )


def check_disjoint_rows(
    first: tuple[np.ndarray, np.ndarray, np.ndarray],
    second: tuple[np.ndarray, np.ndarray, np.ndarray],
    names: tuple[str, str] = ("members", "nonmembers"),
) -> None:
    """No record in both sets by content: a duplicated row would be scored as both a member and not.

    Each set is (x, y, ids), ids naming its records in the message (record indices or row positions)."""
    seen = dict(zip(row_digests(first[0], first[1]), first[2]))
    dup = [(seen[d], i) for d, i in zip(row_digests(second[0], second[1]), second[2]) if d in seen]
    if dup:
        a, b = names
        raise DataError(
            f"{b}: {len(dup)} record(s) duplicate {a} records (e.g. {b} record {dup[0][1]} = {a} record "
            f"{dup[0][0]}: same features and label); a record is either a member or not"
        )


def check_min_fpr(min_fpr: float | None, n_nonmembers: int) -> None:
    """An explicitly requested FPR below 1/n cannot be measured at all: refuse (levels below 10/n are only flagged)."""
    if min_fpr is not None and min_fpr * n_nonmembers < 1 - 1e-9:
        raise ConfigError(
            f"min_fpr: {min_fpr:g} needs at least {math.ceil(1 / min_fpr - 1e-9)} non-members, "
            f"the audit has {n_nonmembers}"
        )
