"""Generated inputs for the peer-attack tests: two-class logits that fix every signal.

With logits (phi, 0) and label 0, the hinge score and the rescaled logit both
equal phi, the true-class confidence is sigmoid(phi) and the loss is
log(1 + exp(-phi)); so a test chooses the signals directly.
"""

from __future__ import annotations

import numpy as np

from miaudit.attacks import AttackInputs, RecordSet


def binary_logits(phi: np.ndarray) -> np.ndarray:
    phi = np.asarray(phi, dtype=np.float64)
    return np.stack([phi, np.zeros_like(phi)], axis=-1)


def records(phi0, phi_refs, ref_in=None, x=None) -> RecordSet:
    phi0 = np.asarray(phi0, dtype=np.float64)
    phi_refs = np.asarray(phi_refs, dtype=np.float64).reshape(-1, phi0.size)
    return RecordSet(
        labels=np.zeros(phi0.size, dtype=np.int64),
        target_logits=binary_logits(phi0),
        ref_logits=binary_logits(phi_refs),
        ref_in=None if ref_in is None else np.asarray(ref_in, bool),
        x=x,
    )


def inputs(phi0, phi_refs, ref_in=None, mode="offline", population=None, validation=None) -> AttackInputs:
    return AttackInputs(
        queries=records(phi0, phi_refs, ref_in), population=population, validation=validation, mode=mode
    )


def balanced_membership(rng: np.random.Generator, k: int, n: int) -> np.ndarray:
    """(k, n): each record IN for exactly k // 2 references, chosen at random."""
    return np.argsort(rng.random((k, n)), axis=0) < k // 2


class GaussianWorld:
    """Per-record IN/OUT Gaussians on the rescaled logit, and a target that trained on half the records."""

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.mu_out = rng.normal(0.0, 1.0, n)
        self.mu_in = self.mu_out + rng.uniform(0.5, 2.5, n)
        self.sd_out = rng.uniform(0.5, 2.0, n)
        self.sd_in = rng.uniform(0.3, 1.0, n)
        self.members = rng.random(n) < 0.5
        self.phi0 = np.where(self.members, rng.normal(self.mu_in, self.sd_in), rng.normal(self.mu_out, self.sd_out))

    def references(self, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """(phi of k references (k, n), their balanced IN mask (k, n))."""
        rng = np.random.default_rng(seed)
        ref_in = balanced_membership(rng, k, self.mu_out.size)
        phi = np.where(
            ref_in, rng.normal(self.mu_in, self.sd_in, ref_in.shape), rng.normal(self.mu_out, self.sd_out, ref_in.shape)
        )
        return phi, ref_in
