"""The worst-case start of the multi-run audit (after Annamalai & De Cristofaro, NeurIPS 2024: DP-SGD's
guarantee holds for every initial model, so the auditor of the ALGORITHM may choose the one that makes the
canary stand out most): a crafted initial model and a canary chosen for it.

Threat model: this audits the training algorithm (DP-SGD with the declared hyperparameters) from a start the
auditor chose, not one deployed model; the auditor sees each final model as a black box (its logits).

The construction (ours, in the paper's spirit, for models that begin with a Linear layer):
- isolated features: the input features on which the public (population) records are smallest, all zero on
  digits' border pixels. The canary is ``CANARY_SCALE`` on those features and 0 elsewhere, so its input is
  orthogonal to every public record's.
- the start: the model's seeded initialisation with the first layer's weights on the isolated features set
  to 0, so the canary's first hidden pre-activation is the bias alone (no saturated unit at the start). The
  first layer's gradient of a record x is g x^T: on the isolated columns it is g x[iso], zero for a record
  that is zero there. Those columns are moved by the canary and the noise only, and, the canary's input being
  large there, they carry most of its gradient (``gradient_share``).
- the label: the class the start gives the canary the lowest logit, its largest loss.
The score of a final model is the log-probability of the canary's label on the canary (black-box).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from ..data import Dataset

THREAT_MODEL = (
    "audits the training algorithm (DP-SGD with these hyperparameters) from a start the auditor crafted, "
    "not one deployed model; each final model is seen as a black box"
)
ISOLATED = 3  # features the canary uses (digits: the three pixels no record ever inks)
CANARY_SCALE = 8.0  # the canary's value on each isolated feature (digits' pixels lie in [0, 1])


@dataclass(frozen=True)
class WorstCase:
    """The crafted start (parameters), the canary (one input and its label) and the features it lives on."""

    start: dict[str, torch.Tensor]
    x: np.ndarray  # the canary's input, the data set's record shape
    label: int
    isolated: np.ndarray  # flat feature indices

    def to_json(self) -> dict:
        return {"isolated_features": self.isolated.tolist(), "canary_scale": CANARY_SCALE, "label": self.label}


def isolated_features(public: np.ndarray, count: int = ISOLATED) -> np.ndarray:
    """The ``count`` flat features with the smallest largest magnitude over the public records (stable order)."""
    reach = np.abs(public.reshape(len(public), -1)).max(axis=0)
    return np.sort(np.argsort(reach, kind="stable")[:count])


def first_linear(model: nn.Module) -> tuple[str, nn.Linear] | None:
    """The first nn.Linear (by module order) and its parameter name, if the model's first layer is one."""
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            return name, module
        if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)):
            return None
    return None


def craft(model: nn.Module, public: np.ndarray) -> WorstCase:
    """The worst-case start and canary for ``model`` (seeded by the caller) and the public records' features."""
    iso = isolated_features(public)
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    found = first_linear(model)
    if found is not None:
        name, _ = found
        start[f"{name}.weight"][:, torch.as_tensor(iso)] = 0.0
    x = np.zeros(public.shape[1:], dtype=np.float32)
    x.reshape(-1)[iso] = CANARY_SCALE
    logits = logits_of(model, start, x[None])[0]
    return WorstCase(start=start, x=x, label=int(np.argmin(logits)), isolated=iso)


@torch.no_grad()
def logits_of(model: nn.Module, params: dict[str, torch.Tensor], x: np.ndarray) -> np.ndarray:
    """The model's logits on inputs x with parameters ``params`` (float64)."""
    model.eval()
    return functional_call(model, params, (torch.as_tensor(x, dtype=torch.float32),)).double().numpy()


def score(model: nn.Module, params: dict[str, torch.Tensor], case: WorstCase) -> float:
    """The black-box score of one final model: the log-probability of the canary's label on the canary."""
    logits = torch.as_tensor(logits_of(model, params, case.x[None]))
    return float(F.log_softmax(logits, dim=-1)[0, case.label])


def gradient_share(model: nn.Module, params: dict[str, torch.Tensor], x: np.ndarray, y: np.ndarray,
                   isolated: np.ndarray) -> np.ndarray:  # fmt: skip
    """For each record, the fraction of its squared gradient norm on the first layer's isolated columns."""
    found = first_linear(model)
    assert found is not None, "the worst-case start needs a model whose first layer is Linear"
    weight = f"{found[0]}.weight"
    shares = []
    for xi, yi in zip(x, y, strict=True):
        p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        out = functional_call(model, p, (torch.as_tensor(xi[None], dtype=torch.float32),))
        grads = torch.autograd.grad(F.cross_entropy(out, torch.as_tensor([int(yi)])), list(p.values()))
        total = sum(float(g.pow(2).sum()) for g in grads)
        on_iso = float(dict(zip(p, grads, strict=True))[weight][:, torch.as_tensor(isolated)].pow(2).sum())
        shares.append(on_iso / total if total > 0 else 0.0)
    return np.array(shares)


def with_canary(ds: Dataset, case: WorstCase) -> Dataset:
    """The data set with the canary appended as its last record (index len(ds))."""
    x = np.concatenate([ds.x, case.x[None].astype(ds.x.dtype)])
    y = np.concatenate([ds.y, np.array([case.label], dtype=ds.y.dtype)])
    return replace(ds, name=f"{ds.name}+worst-case-canary", x=x, y=y)
