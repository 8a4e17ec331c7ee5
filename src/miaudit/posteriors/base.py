"""The posterior interface: a distribution over a model's last layer, and score moments under its draws.

BMIA (paper section 3) turns one trained reference model into a family of models
by sampling its last layer from a posterior, then scores each query under M draws.
A ``Posterior`` is fitted on the reference's head and the penultimate features of
its training records (one backbone pass per record, cached by the caller), then
yields logits of M draws in chunks of records. Everything downstream (the signal,
the moments, the t-test) is the same for every posterior, so it lives here once.

To add a posterior: subclass ``Posterior`` in a module of this package, decorate
it with ``@register("name")``, and it becomes a value of BMIA's ``posterior:``
parameter (its options are the constructor's keyword arguments).
"""

from __future__ import annotations

import importlib
import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import ClassVar, TypeVar

import numpy as np
import torch
import torch.nn as nn

from ..registries import Registry
from ..stats.signals import Signal

FeatureSet = tuple[torch.Tensor, np.ndarray]  # penultimate features (n, d) float64 and labels (n,)
CHUNK_ELEMENTS = 2**24  # logits held per chunk (64 MB in float32) when chunk_size is None


class Posterior(ABC):
    """A distribution over a head ``nn.Linear(d, C)`` given the features it was trained on."""

    name: ClassVar[str]
    needs_validation: bool = False  # fit() must receive validation records

    @abstractmethod
    def fit(self, head: nn.Linear, train: FeatureSet, validation: FeatureSet | None = None) -> None:
        """Fit around ``head`` (not modified) on its training records' features."""

    def draws(self, n_samples: int) -> int:
        """How many draws M ``logit_chunks`` gives when asked for ``n_samples`` (an ensemble has its members)."""
        return n_samples

    @abstractmethod
    def logit_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None = None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        """(start, logits (n_chunk, C, M)) over the records: M draws, the same draws for every chunk."""


P = TypeVar("P", bound=type[Posterior])
_REGISTRY: Registry[type[Posterior]] = Registry("posterior")


def register(name: str) -> Callable[[P], P]:
    """Class decorator adding a posterior under ``name``."""

    def wrap(cls: P) -> P:
        cls.name = name
        _REGISTRY.add(name, cls)
        return cls

    return wrap


def _all_registered() -> None:
    """Every posterior module imported (each registers itself on import). ``posteriors/__init__`` loads them on
    first use of the package's names; a worker process handed ``fit_and_score`` reaches this module directly."""
    importlib.import_module(__package__ or "miaudit.posteriors").load_all()


def names() -> list[str]:
    _all_registered()
    return sorted(_REGISTRY)


def create(name: str, **options: object) -> Posterior:
    _all_registered()
    """A fresh, unfitted posterior by name with its options."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown posterior {name!r}; expected one of {names()}")
    return _REGISTRY[name](**options)


def chunk_size_for(chunk_size: int | None, n_samples: int, n_classes: int) -> int:
    """Records per chunk: as asked, else as many as keep CHUNK_ELEMENTS logits."""
    return chunk_size or max(1, CHUNK_ELEMENTS // (n_samples * n_classes))


def generator(seed: int, device: torch.device | str) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def head_logit_chunks(
    heads: torch.Tensor, n_classes: int, features: torch.Tensor, chunk_size: int | None
) -> Iterator[tuple[int, torch.Tensor]]:
    """Logits phi(x) W_m^T + b_m of M heads given as (C*M, d+1) float rows [W_c | b_c], class-major (row
    c*M + m is class c of head m): one matrix product per chunk of records, (n_chunk, C, M) each."""
    n_samples = heads.shape[0] // n_classes
    step = chunk_size_for(chunk_size, n_samples, n_classes)
    for start in range(0, len(features), step):
        phi = features[start : start + step].to(heads.dtype)
        phi1 = torch.cat([phi, phi.new_ones(len(phi), 1)], dim=1)
        yield start, (phi1 @ heads.T).view(len(phi), n_classes, n_samples)


def heads_from_vectors(theta: torch.Tensor, n_classes: int) -> torch.Tensor:
    """M head vectors (M, C*(d+1)) laid out as ``head_vector`` gives them, as (C*M, d+1) float32 rows
    [W_c | b_c], class-major: the layout ``head_logit_chunks`` takes."""
    n_samples = theta.shape[0]
    rows = theta.reshape(n_samples, n_classes, -1)
    return rows.transpose(0, 1).reshape(n_classes * n_samples, -1).float()


def head_vector(head: nn.Linear) -> torch.Tensor:
    """The head as one float64 vector: the (C, d+1) matrix [W | b] row-major (bias 0 when it has none)."""
    w = head.weight.detach().double()
    b = head.bias.detach().double() if head.bias is not None else w.new_zeros(w.shape[0])
    return torch.cat([w, b[:, None]], dim=1).reshape(-1)


def signed_signal(name: Signal | str, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``miaudit.stats.signals`` in torch over (n, C, M) logits -> (n, M), higher = member
    (the loss is negated to log p_y). Torch because this is the hot loop: M x N
    scores; tests check it against the float64 numpy signals. Overwrites
    ``logits`` (the caller's chunk is a temporary) to spare a copy."""
    name = Signal(name)
    idx = labels.view(-1, 1, 1).expand(-1, 1, logits.shape[2])
    true = logits.gather(1, idx)[:, 0]
    if name in (Signal.hinge, Signal.rescaled_logit):
        others = logits.scatter_(1, idx, -math.inf)
        return true - (others.amax(1) if name == Signal.hinge else torch.logsumexp(others, dim=1))
    log_py = true - torch.logsumexp(logits, dim=1)
    return log_py if name == Signal.loss else log_py.exp()


def score_moments(
    posterior: Posterior,
    features: torch.Tensor | list[torch.Tensor],
    labels: np.ndarray,
    *,
    n_samples: int,
    signal: Signal | str,
    chunk_size: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-record mean and variance (ddof=1) of the signed score over M
    posterior draws, float64, never holding more than one chunk of scores.

    ``features`` as a list holds the records' A augmented views (``queries.augment``): the score of draw m
    is then the mean over the views of draw m's scores, every view scored with the same seed and so the
    same draws (the same heads; for draws made per record, the same random numbers)."""
    views = features if isinstance(features, list) else [features]
    y = torch.as_tensor(labels, dtype=torch.long, device=views[0].device)
    mean = np.empty(len(views[0]))
    var = np.empty(len(views[0]))
    chunks = [posterior.logit_chunks(f, n_samples, seed, chunk_size) for f in views]
    for per_view in zip(*chunks, strict=True):
        start, first = per_view[0]
        part = slice(start, start + len(first))
        scores = torch.stack([signed_signal(signal, logits, y[part]).double() for _, logits in per_view]).mean(0)
        chunk_var, chunk_mean = torch.var_mean(scores, dim=1, correction=1)  # moments in float64
        mean[part] = chunk_mean.cpu().numpy()
        var[part] = chunk_var.cpu().numpy()
    return mean, var


def fit_and_score(
    name: str,
    options: dict[str, object],
    n_samples: int,
    signal: Signal | str,
    chunk_size: int | None,
    threads: int,
    head: nn.Linear,
    train: FeatureSet,
    validation: FeatureSet | None,
    features: torch.Tensor | list[torch.Tensor],
    labels: np.ndarray,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One reference's whole posterior work, fit then ``score_moments``: what an executor task runs (``threads``,
    the driver's torch threads, so that a task computes what the driver would, to the bit)."""
    torch.set_num_threads(threads)
    posterior = create(name, **options)
    posterior.fit(head, train, validation)
    return score_moments(
        posterior, features, labels, n_samples=n_samples, signal=signal, chunk_size=chunk_size, seed=seed
    )


def predictive_loglik(logits: torch.Tensor, y: torch.Tensor) -> float:
    """sum_n log mean_m softmax(logits[n, :, m])_{y_n}: the log-likelihood of the sampled predictive."""
    log_probs = torch.log_softmax(logits.double(), dim=1)
    per_sample = log_probs.gather(1, y.view(-1, 1, 1).expand(-1, 1, logits.shape[2]))[:, 0]
    return float((torch.logsumexp(per_sample, dim=1) - math.log(logits.shape[2])).sum())


def options_for(name: str, settings: object) -> dict[str, object]:
    _all_registered()
    """The constructor options of posterior ``name`` read off ``settings`` (e.g. an attack's parameters),
    so an attack passes each posterior exactly the options it takes."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown posterior {name!r}; expected one of {names()}")
    accepted = inspect.signature(_REGISTRY[name]).parameters
    return {key: getattr(settings, key) for key in accepted if hasattr(settings, key)}
