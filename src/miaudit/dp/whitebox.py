"""White-box canaries (Steinke, Nasr & Jagielski 2023, section 6; Nasr et al. 2023): gradients inserted into
the DP-SGD steps of one training run, observed in the noisy updates.

Canary j is a per-sample gradient of norm C (the clipping norm, so clipping leaves it unchanged) along a unit
direction u_j: ``dirac`` puts it on one coordinate of the model's parameters, ``gradient`` on a disjoint block
of P // m coordinates with seeded random signs (a dense-ish direction whose overlap with the data's gradients
averages out). The directions are orthogonal. An included canary (independent fair coin) joins each step's
Poisson batch with the data's sample rate q, exactly as a record would; its gradient is added to the noisy
clipped sum after Opacus has drawn the noise, which gives the same distribution as adding it before (the noise
is independent of the sum).

The auditor sees every intermediate model, hence every noisy update (the optimizer is known and invertible),
and reads x_jt = <noisy sum_t, u_j> / C: noise N(0, sigma^2) plus 1 when canary j was in the batch, plus the
data's drift along u_j. Its score is the log-likelihood ratio of "included" against "excluded" for a
Poisson-subsampled Gaussian with the claimed noise multiplier sigma, summed over steps:
sum_t log(1 - q + q exp((x_jt - 1/2) / sigma^2)), the most powerful test of one canary when there is no drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..training.dp_sgd import NoisyStep

KINDS = ("gradient", "dirac")
WHITEBOX_SEED = 0x9AD


@dataclass
class GradientCanaries:
    """m gradient canaries of one kind, which are included (seeded coins), and their running scores."""

    kind: str
    included: np.ndarray  # (m,) bool
    seed: int
    scores: np.ndarray = field(init=False)  # (m,) the summed log-likelihood ratio after training
    steps: int = field(default=0, init=False)
    # each step's (x - 1/2) / sigma^2, kept so the scores can be recomputed at the rate of the batches drawn
    # (``rescore``): the log-likelihood ratio depends on the rate only through the sum's terms
    _z: list[np.ndarray] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"gradient canary kind must be one of {KINDS}, got {self.kind!r}")
        self.scores = np.zeros(len(self.included))

    @property
    def count(self) -> int:
        return len(self.included)

    def directions(self, n_params: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(m, s) coordinates and (m, s) weights (signs / sqrt(s)) of the canaries' unit directions."""
        m = self.count
        if m > n_params:
            raise ValueError(f"{m} gradient canaries need as many model parameters; the model has {n_params}")
        support = 1 if self.kind == "dirac" else n_params // m
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, WHITEBOX_SEED]))
        coords = rng.permutation(n_params)[: m * support].reshape(m, support)
        signs = rng.choice([-1.0, 1.0], size=(m, support)) if support > 1 else np.ones((m, 1))
        return torch.as_tensor(coords), torch.as_tensor(signs / np.sqrt(support), dtype=torch.float32)

    def rescore(self, rate: float) -> None:
        """The scores recomputed at sampling rate ``rate`` (a user's function: the rate of the batches its optimizer
        drew, whatever rate it was told)."""
        if self._z:
            z = np.stack(self._z).astype(np.float64)
            self.scores = np.logaddexp(np.log1p(-rate), np.log(rate) + z).sum(0)

    def hook(self, params: list[torch.Tensor], noisy: NoisyStep):
        """The step hook: observe every canary in the noisy update, then add the sampled included ones to it
        (sampled at the step's rate used, scored at its rate claimed: ``NoisyStep``)."""
        coords, weights = self.directions(sum(p.numel() for p in params))
        included = torch.as_tensor(self.included)
        seed, sample_rate, sigma, clip, batch = noisy.seed, noisy.sample_rate, noisy.sigma, noisy.clip, noisy.batch
        rng = torch.Generator().manual_seed(int(np.random.SeedSequence([seed, WHITEBOX_SEED, 1]).generate_state(1)[0]))
        log_out, log_in = np.log1p(-noisy.scored_rate), np.log(noisy.scored_rate)

        def step(_optimizer: object) -> None:
            grads = [p.grad for p in params if p.grad is not None]
            assert len(grads) == len(params), "every parameter has a noisy gradient after Opacus' step"
            flat = torch.cat([g.detach().reshape(-1) for g in grads]) * batch / clip
            sampled = included & (torch.rand(len(included), generator=rng) < sample_rate)
            x = (flat[coords] * weights).sum(1) + sampled.float()
            z = ((x.double() - 0.5) / sigma**2).numpy()
            self.scores += np.logaddexp(log_out, log_in + z)
            self._z.append(z.astype(np.float32))
            self.steps += 1
            add = torch.zeros_like(flat)
            add[coords[sampled].reshape(-1)] = (weights[sampled] * clip / batch).reshape(-1)
            offset = 0
            for g in grads:
                g.add_(add[offset : offset + g.numel()].view_as(g))
                offset += g.numel()

        return step
