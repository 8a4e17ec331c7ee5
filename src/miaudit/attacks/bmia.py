"""BMIA and MR-BMIA (Bayesian membership inference; BMIA paper, Algorithms 1 and 2).

Each reference model becomes a family of models through its last-layer
posterior (``miaudit.posteriors``; last-layer Laplace by default). For every query, M posterior draws
give score samples s_1..s_M; the target's score s_0 is tested against them
with a one-sided Student-t test of H0 "non-member". MR-BMIA pools K reference
posteriors with the intra/inter variance decomposition of appendix C.

The statistics (``bmia_test``, ``mr_bmia_test``) are plain array functions;
the attacks wire them to the posteriors.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from .. import posteriors
from ..errors import AttackRequirementError
from ..posteriors.kinds import Hessian, Predictive, Prior, import_laplace
from ..stats import signals
from ..stats.pvalues import t_logsf
from ..stats.signals import Signal
from ..training import executor
from . import _lm_posterior
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register

Stats = tuple[np.ndarray, np.ndarray, np.ndarray]  # (t, df, log_p), each (N,)


def bmia_test(s0: np.ndarray, sample_mean: np.ndarray, sample_var: np.ndarray, n_samples: int) -> Stats:
    """Algorithm 1: t = (s0 - mean) / (sd * sqrt(1 + 1/M)), M - 1 degrees of freedom.

    ``sample_var`` has ddof=1. sqrt(1 + 1/M) because Var(s0 - mean) =
    (1 + 1/M) sigma^2 under H0 (eq. 10). log p = log P(T >= t) (``t_logsf``)."""
    t = (s0 - sample_mean) / (np.sqrt(sample_var) * np.sqrt(1.0 + 1.0 / n_samples))
    df = np.full(t.shape, n_samples - 1.0)
    return t, df, t_logsf(t, df)


def mr_bmia_test(s0: np.ndarray, means: np.ndarray, within_var: np.ndarray, n_samples: int) -> Stats:
    """Algorithm 2 / appendix C: pooled test over K references of M draws each.

    ``means`` and ``within_var`` (ddof=1) are (K, N): each reference's sample
    mean and variance of the score for every query."""
    k, m = means.shape[0], n_samples
    intra = within_var.mean(axis=0)  # eq. 39: sum_k sum_m (s_km - mean_k)^2 / (K (M - 1))
    # eq. 40; a negative estimate of a variance is sampling noise (the spread of
    # the K means is below what the intra variance alone predicts): clip at 0.
    inter = np.maximum(means.var(axis=0, ddof=1) - intra / m, 0.0)
    u_inter = (1.0 + 1.0 / k) * inter
    u_intra = (1.0 + 1.0 / (k * m)) * intra
    t = (s0 - means.mean(axis=0)) / np.sqrt(u_inter + u_intra)  # eq. 38
    # eq. 41 (Welch-Satterthwaite); with u_inter = 0 it reduces to K (M - 1)
    denom = u_inter**2 / (k - 1) + u_intra**2 / (k * (m - 1))
    df = np.full(t.shape, k * (m - 1.0))
    np.divide((u_inter + u_intra) ** 2, denom, out=df, where=denom > 0)
    return t, df, t_logsf(t, df)


class MRBMIAParams(AttackParams):
    posterior: str = Field(default="laplace", description="posterior over each reference's last layer")
    samples: int = Field(default=1000, ge=2, description="posterior draws M per reference model")
    hessian: Hessian = Field(default="kron", description="laplace: structure of the GGN")
    prior: Prior = Field(default="marglik", description="laplace: prior precision by marginal or validation likelihood")
    predictive: Predictive = Field(default="weights", description="laplace: sample head weights, or GLM logits")
    dropout_rate: float = Field(
        default=0.2, ge=0, lt=1, description="mc-dropout: feature dropout rate (the references train with it)"
    )
    swag_snapshots: int = Field(
        default=20, ge=2, description="swag: SGD epochs from the trained head, one snapshot each"
    )
    swag_rank: int = Field(default=10, ge=1, description="swag: rank of the covariance's low-rank part")
    swag_lr: float = Field(default=0.01, gt=0, description="swag: constant SGD learning rate")
    ensemble_members: int = Field(default=10, ge=2, description="ensemble: heads M (replaces samples)")
    ensemble_epochs: int = Field(default=20, ge=1, description="ensemble: SGD epochs per head")
    ensemble_lr: float = Field(default=0.05, gt=0, description="ensemble: SGD learning rate")
    signal: Signal = Signal.hinge
    chunk_size: int | None = Field(default=None, ge=1, description="records scored at once; default bounds memory")
    seed: int = Field(default=0, description="offset added to the run seed for posterior sampling")

    @field_validator("posterior")
    @classmethod
    def _known_posterior(cls, name: str) -> str:
        if name not in posteriors.names():
            raise ValueError(f"unknown posterior {name!r}; expected one of {posteriors.names()}")
        return name

    @model_validator(mode="after")
    def _valid_options(self) -> MRBMIAParams:
        """The chosen posterior accepts its options (e.g. mc-dropout refuses a rate of 0): refused with
        the config, before any model is trained."""
        posteriors.create(self.posterior, **posteriors.options_for(self.posterior, self))
        return self


class BMIAParams(MRBMIAParams):
    references: int | None = Field(default=1, ge=1, description="BMIA uses one reference model")


def fitted_posterior(inputs: AttackInputs, k: int, params: MRBMIAParams) -> posteriors.Posterior:
    """Reference k's posterior, fitted once per run and options."""
    models = inputs.require_models()
    options = posteriors.options_for(params.posterior, params)
    key = ("posterior", k, params.posterior, tuple(sorted(options.items())))

    def fit() -> posteriors.Posterior:
        posterior = posteriors.create(params.posterior, **options)
        posterior.fit(models.references[k].head, *_fit_data(inputs, k, posterior))
        return posterior

    return models.memoized(key, fit)


def _fit_data(
    inputs: AttackInputs, k: int, posterior: posteriors.Posterior
) -> tuple[posteriors.FeatureSet, posteriors.FeatureSet | None]:
    """What reference k's posterior fits on: its training records' features, and the validation records' when
    the posterior's options need them."""
    models = inputs.require_models()
    x, y = models.reference_train[k]
    validation = None
    if posterior.needs_validation:
        v = inputs.validation
        if v is None or v.x is None:
            raise AttackRequirementError(f"bmia: the {posterior.name} posterior's options need validation records")
        validation = (models.features(k, "validation", v.x), v.labels)
    return (models.features(k, "train", x), y), validation


def posterior_seed(inputs: AttackInputs, params: MRBMIAParams, k: int) -> int:
    """An independent, reproducible stream per (run seed, attack seed, reference)."""
    return int(np.random.SeedSequence([inputs.seed, params.seed, k]).generate_state(1)[0])


def reference_moments(
    inputs: AttackInputs,
    params: MRBMIAParams,
    records: Literal["queries", "population", "validation"] = "queries",
    signal: Signal | None = None,
    views: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(K, N) sample means and variances (ddof=1) of the score (``params.signal`` unless ``signal``) of the
    named record set (the queries, or "population" / "validation") under each reference's posterior.
    ``views``: of the queries' score averaged over the views of ``queries.augment`` (where asked).

    With the local executor each posterior is fitted once per run and shared by the attacks that use it.
    With Ray, each reference's fit and sampling is one task (``posteriors.fit_and_score``), on the features the
    driver computed: a posterior is then fitted once per call rather than per run, the price of not shipping
    fitted posteriors (laplace-torch objects) between processes."""
    models = inputs.require_models()
    held = None if records == "queries" else inputs.require(records, inputs_x=True)
    labels = inputs.queries.labels if held is None else held.labels
    k_all = range(len(models.references))
    features: list[Any] = [
        models.features(k, records, np.asarray(held.x))
        if held is not None
        else models.query_view_features(k)
        if views and models.query_views
        else models.query_features(k)
        for k in k_all
    ]
    seeds = [posterior_seed(inputs, params, k) for k in k_all]
    signal = signal or params.signal
    if models.executor.kind == "local":
        moments = [
            posteriors.score_moments(
                fitted_posterior(inputs, k, params),
                features[k],
                labels,
                n_samples=params.samples,
                signal=signal,
                chunk_size=params.chunk_size,
                seed=seeds[k],
            )
            for k in k_all
        ]
    else:
        import torch  # loaded by then: the models are torch modules

        options = posteriors.options_for(params.posterior, params)
        shared = (params.posterior, options, params.samples, signal, params.chunk_size, torch.get_num_threads())
        unfitted = posteriors.create(params.posterior, **options)
        per_task = [
            (models.references[k].head, *_fit_data(inputs, k, unfitted), features[k], labels, seeds[k]) for k in k_all
        ]
        moments = executor.run_tasks(models.executor, posteriors.fit_and_score, shared, per_task)
    return np.stack([m[0] for m in moments]), np.stack([m[1] for m in moments])


def _attack(inputs: AttackInputs, params: MRBMIAParams) -> AttackResult:
    """Algorithm 1 for one reference, 2 for several; the score is -log p. (Conformal calibration, paper
    F.1, is done for every p-value attack alike by ``miaudit.attacks.calibration``.)"""
    if _lm_posterior.is_lm(inputs.models):  # a causal LM: the LM head's posterior (miaudit.lm.head_laplace)
        means, variances = _lm_posterior.reference_moments(inputs, params.signal)
    else:
        means, variances = reference_moments(inputs, params, views=True)
    options = posteriors.options_for(params.posterior, params)
    n_draws = posteriors.create(params.posterior, **options).draws(params.samples)  # M, or an ensemble's members
    q = inputs.queries
    # queries.augment: the target's score averaged over the views, as each draw's is (reference_moments)
    views = q.target_views if q.target_views is not None and inputs.require_models().query_views else None
    s0 = signals.oriented(params.signal, q.target_logits if views is None else views, q.labels)
    s0 = s0 if views is None else s0.mean(axis=0)
    if means.shape[0] == 1:
        t, df, log_p = bmia_test(s0, means[0], variances[0], n_draws)
    else:
        t, df, log_p = mr_bmia_test(s0, means, variances, n_draws)
    return AttackResult(scores=-log_p, log_pvalues=log_p, extra={"t": t, "df": df})


# BMIA and MR-BMIA: offline tests on the reference models' last layers (laplace-torch imported untimed)
_TEST = {"modes": ("offline",), "needs": frozenset({"models"}), "pvalues": True, "warmup": import_laplace}


@register("bmia", params=BMIAParams, min_references=1, max_references=1, **_TEST)
def bmia(inputs: AttackInputs, params: BMIAParams) -> AttackResult:
    """BMIA: t-test of the score against last-layer posterior draws (posterior: laplace, mc-dropout, swag, ensemble)"""
    return _attack(inputs, params)


@register("mr-bmia", params=MRBMIAParams, min_references=2, **_TEST)
def mr_bmia(inputs: AttackInputs, params: MRBMIAParams) -> AttackResult:
    """MR-BMIA: t-test against posterior samples of K references, intra/inter variance pooled"""
    return _attack(inputs, params)
