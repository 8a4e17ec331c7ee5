"""The worst-case start of the multi-run audit (after Annamalai & De Cristofaro, NeurIPS 2024: DP-SGD's guarantee
holds for every initial model, every model and every loss, so the auditor of the ALGORITHM may choose the ones
that make the canaries stand out most): a crafted model, its start, and canaries chosen for it.

Threat model (``THREAT_MODEL``): this audits the training algorithm (DP-SGD with the declared noise, sample rate,
steps, clipping, learning rate and optimizer) from a model and start the auditor crafted, not the config's
architecture and not one deployed model; the auditor sees each final model as a black box (its outputs).

The construction (ours, in the paper's spirit): the smallest model that realises the worst-case start, a linear
read-out ``f(x) = W phi(x) + b`` of ``count`` fixed features, feature j = ``FEATURE`` on canary j's input and 0 on
every other input. The canaries' inputs are constant records outside the public records' range (no natural record
equals one), each with its own label. The start is W = 0, b = 0 (every class equally likely, so each canary's
clipped gradient pushes its label's logit by the most clipping allows).
- Every natural record's features are 0: its gradient moves the bias b only. The records still fill each Poisson
  batch and the expected batch size divides every update, as in ``train_dp``.
- Canary j's gradient is (p - e_y) phi(x_j)^T on W's column j and (p - e_y) on b: a share FEATURE^2 / (FEATURE^2
  + 1) of it (98.5%) on column j, which no other record touches. Column j is moved by canary j and the noise only.
- The black-box score of canary j (``scores``): the final model's log-probability of its label minus the mean
  log-probability over classes (that is the logit minus the mean logit), at the canary minus at a blank input
  (features 0). It equals FEATURE (W[y, j] - mean_k W[k, j]): the canary's own coordinates, free of b.
So the final model shows the canary only through the sum of its clipped steps and the noise on its column: the
black-box ceiling of this DP-SGD (``benchmarks/dp_many_run/dp_many_run.py``), reached by construction.

Validity never rests on the construction: DP-SGD is (epsilon, delta)-DP for every model, start and loss, so the
multi-run bound holds whatever the model; the construction only buys power.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

from ..results import CraftedCanaries

# a model's parameters by name, as torch.func's functional_call takes them (a state dict, not a result)
Parameters: TypeAlias = dict[str, torch.Tensor]

THREAT_MODEL = (
    "audits the training algorithm (DP-SGD with these hyperparameters: noise, sample rate, steps, clipping, "
    "learning rate, optimizer) from a model and start the auditor crafted, not the config's architecture and not "
    "one deployed model: DP-SGD's guarantee holds for every model and loss, so the audit trains the smallest model "
    "that realises the worst-case start, a linear read-out of one fixed feature per canary, nonzero on that canary "
    "only (natural records fill the Poisson batches and move no canary's coordinates); each final model is seen as "
    "a black box (its outputs on each canary and on a blank input)"
)
FEATURE = 8.0  # a canary's feature value: a share 64/65 of its gradient lies on its own column


@dataclass(frozen=True)
class WorstCase:
    """The crafted read-out's canaries: their inputs (record-shaped), labels and the number of classes."""

    inputs: np.ndarray  # (count, *record shape)
    labels: np.ndarray  # (count,)
    n_classes: int

    @property
    def count(self) -> int:
        return len(self.labels)

    def model(self) -> nn.Module:
        """The read-out f = W phi + b on the features (``features``), as one Linear layer (stackable)."""
        return nn.Sequential(nn.Linear(self.count, self.n_classes))

    def start(self) -> Parameters:
        """The crafted start: W = 0, b = 0."""
        return {k: torch.zeros_like(v) for k, v in self.model().named_parameters()}

    def features(self, x: np.ndarray) -> np.ndarray:
        """phi(x): (len(x), count), FEATURE where a record equals canary j's input, else 0 (a fixed map)."""
        flat, canaries = x.reshape(len(x), -1), self.inputs.reshape(self.count, -1)
        out = np.zeros((len(x), self.count), dtype=np.float32)
        for j, c in enumerate(canaries):
            out[np.all(flat == c, axis=1), j] = FEATURE
        return out

    def described(self) -> CraftedCanaries:
        """results.json's ``dp_audit.bounds[].worst_case``: the canaries and the read-out that learns them."""
        return CraftedCanaries(
            model=f"linear read-out of {self.count} canary features (not the config's architecture)",
            feature=FEATURE,
            canaries_per_run=self.count,
            canary_values=[float(c.reshape(-1)[0]) for c in self.inputs],
            labels=[int(y) for y in self.labels],
            start="W = 0, b = 0",
        )


def craft(public: np.ndarray, n_classes: int, count: int) -> WorstCase:
    """``count`` canaries for records shaped like ``public``'s: constant inputs above the public range (canary j:
    every feature max|public| + 1 + j), labels j mod n_classes."""
    top = float(np.abs(public).max()) if public.size else 0.0
    values = np.floor(top) + 1.0 + np.arange(count)
    inputs = np.broadcast_to(values.reshape(-1, *([1] * (public.ndim - 1))), (count, *public.shape[1:]))
    return WorstCase(inputs.astype(np.float32), np.arange(count) % n_classes, n_classes)


@torch.no_grad()
def logits_of(model: nn.Module, params: dict[str, torch.Tensor], phi: np.ndarray) -> torch.Tensor:
    """The read-out's logits (float64) on features ``phi`` with parameters ``params``."""
    return functional_call(model, params, (torch.as_tensor(phi),)).double()


def scores(case: WorstCase, params: dict[str, torch.Tensor]) -> np.ndarray:
    """Each canary's black-box score in one final model (module docstring): log p(label | canary) minus the mean
    log-probability over classes, minus the same at a blank input."""
    model = case.model()
    queries = np.concatenate([case.features(case.inputs), np.zeros((1, case.count), dtype=np.float32)])
    logp = F.log_softmax(logits_of(model, params, queries), dim=-1)
    centred = logp - logp.mean(dim=-1, keepdim=True)
    diff = centred[:-1] - centred[-1:]
    return diff[torch.arange(case.count), torch.as_tensor(case.labels)].numpy()


def gradient_share(case: WorstCase, params: dict[str, torch.Tensor], phi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """For each record (features phi, label y): the share of its squared gradient norm on each canary's column of
    W, (records, count)."""
    model = case.model()
    shares = []
    for fi, yi in zip(phi, y, strict=True):
        p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
        out = functional_call(model, p, (torch.as_tensor(fi[None]),))
        grads = dict(zip(p, torch.autograd.grad(F.cross_entropy(out, torch.as_tensor([int(yi)])), list(p.values()))))
        total = sum(float(g.pow(2).sum()) for g in grads.values())
        column = grads["0.weight"].pow(2).sum(0).numpy()
        shares.append(column / total if total > 0 else np.zeros(case.count))
    return np.array(shares)
