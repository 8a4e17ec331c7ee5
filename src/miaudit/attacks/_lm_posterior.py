"""BMIA and MR-BMIA on causal LMs: the reference moments from the LM-head posterior (``miaudit.lm.head_laplace``).

The score is the attack's ``signal`` of the sequence logits (``lm.model.sequence_logits``), a function g
of the record's mean token log-likelihood l: the loss signal is l itself, the confidence exp(l), the
hinge and the rescaled logit l - log(1 - exp(l)). Its moments under reference k's posterior are
g(l_MAP) and g'(l_MAP)^2 Var(l) (the linearisation the log-likelihood's moments already rest on). The
t-test then treats them as the moments of M = ``samples`` draws, as for a classifier.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..lm.names import MAX_MEAN_LOGLIK
from ..stats.signals import Signal
from .base import AttackInputs, ModelAccess


def is_lm(models: ModelAccess | None) -> bool:
    """Whether the target is a causal LM (``lm.model`` and torch imported only when there are models)."""
    if models is None:
        return False
    from ..lm.model import CausalLM

    return isinstance(models.target, CausalLM)


def signal_of_loglik(signal: Signal | str, loglik: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(g(l), g'(l)) for the signed signal g of the sequence logits at mean log-likelihood l."""
    ell = np.minimum(loglik, MAX_MEAN_LOGLIK)
    signal = Signal(signal)
    if signal == Signal.loss:
        return ell, np.ones_like(ell)
    if signal == Signal.confidence:
        return np.exp(ell), np.exp(ell)
    return ell - np.log(-np.expm1(ell)), 1.0 / -np.expm1(ell)  # hinge = rescaled logit for two classes


def reference_moments(inputs: AttackInputs, signal: Signal | str) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) means and variances of the queries' signed score under each reference's head posterior."""
    from ..lm import head_laplace

    models = inputs.require_models()
    means, variances = [], []
    for k, reference in enumerate(models.references):
        train_x = models.reference_train[k][0]
        posterior = models.memoized(("lm-head-posterior", k), partial(head_laplace.fit, reference, train_x))
        loglik, var = models.memoized(
            ("lm-head-moments", k, models.query_set),
            partial(head_laplace.loglik_moments, reference, posterior, models.query_x),
        )
        score, slope = signal_of_loglik(signal, loglik)
        means.append(score)
        variances.append(slope**2 * var)
    return np.stack(means), np.stack(variances)
