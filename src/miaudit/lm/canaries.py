"""Canary exposure (Carlini et al. 2019, "The Secret Sharer"): how much a causal LM memorised inserted secrets.

``canary_exposure: {count, repetitions, length, prefix, seed, estimator}``: for each repetition count r,
``count`` canaries "<prefix> d1 d2 ... dL" (L random digits, seeded) are inserted r times into the target's
training texts. They are appended as records of their own, outside the split: no canary is a member, a
non-member, a population or a validation record, so every membership number is the same audit's.

After training, a canary's log-perplexity Px(s) = -sum_t log2 p(s_t | s_<t) is ranked among the
candidates: every sequence "<prefix> r1 ... rL" of the randomness space R (|R| = 10^L), the other inserted
canaries left out. Exposure = log2 |R| - log2 rank (rank 1: the most likely; the top exposure is log2 |R|).
Estimators:

- ``exact``: every candidate scored (10^L of them; L <= 5);
- ``skew-normal``: the paper's extrapolation (section 4.3): ``samples`` candidates drawn uniformly, a
  skew-normal fitted to their log-perplexities (scipy.stats.skewnorm), rank estimated as
  |R| * CDF(Px(s)), held at 1 or more.

``auto`` is exact up to 10^5 candidates, else skew-normal.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ..errors import ConfigError
from ..results import CanaryExposure, ExposedCanary
from ..strict import Strict

if TYPE_CHECKING:
    from .data import TextDataset, Tokenizer
    from .model import CausalLM

EXACT_LIMIT = 10**5  # candidates scored one by one at most
DIGITS = tuple("0123456789")
BATCH = 512  # candidate texts per forward pass


class CanaryExposureConfig(Strict):
    """Secret-sharer canaries for causal LMs (Carlini et al. 2019; ``miaudit.lm.canaries``): for each repetition
    count, ``count`` canaries "<prefix> d1 ... dL" of ``length`` random digits inserted that many times into the
    target's training texts, outside the audited records; results.json's ``canary_exposure`` is each one's
    exposure after training."""

    count: int = Field(default=1, ge=1, description="canaries per repetition count")
    repetitions: list[int] = Field(default=[1, 4, 16], min_length=1, description="times each canary is inserted")
    length: int = Field(default=4, ge=1, le=12, description="random digits per canary: 10^length candidates")
    prefix: str = Field(default="my secret number is", min_length=1, description="the text before the digits")
    seed: int = Field(default=0, ge=0, description="draws the digits")
    estimator: Literal["auto", "exact", "skew-normal"] = Field(
        default="auto", description="exact: every candidate ranked (10^length <= 100000); skew-normal: extrapolated"
    )
    samples: int = Field(default=5000, ge=100, description="skew-normal: candidates sampled to fit it")

    @field_validator("repetitions")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(r < 1 for r in v) or len(set(v)) < len(v):
            raise ValueError(f"expected distinct counts of at least 1, got {v}")
        return v

    @model_validator(mode="after")
    def _enumerable(self) -> CanaryExposureConfig:
        if self.estimator == "exact" and 10**self.length > 10**5:
            raise ValueError(
                f"estimator: exact ranks all 10^{self.length} candidates; at most 10^5 (length <= 5), else skew-normal"
            )
        if 10**self.length < self.count * len(self.repetitions) + 1:
            raise ValueError(
                f"length: {self.length} digit(s) cannot give {self.count * len(self.repetitions)} canaries"
            )
        return self


@dataclass(frozen=True)
class Canary:
    secret: tuple[str, ...]  # the random digits
    repetitions: int
    text: str


def draw(spec: CanaryExposureConfig) -> list[Canary]:
    """The config's canaries, ``count`` per repetition count, distinct secrets, from ``spec.seed``."""
    rng = np.random.default_rng(np.random.SeedSequence([spec.seed, 0xCA9]))
    seen: set[tuple[str, ...]] = set()
    out = []
    for reps in spec.repetitions:
        for _ in range(spec.count):
            secret = tuple(str(d) for d in rng.integers(0, 10, size=spec.length))
            while secret in seen:
                secret = tuple(str(d) for d in rng.integers(0, 10, size=spec.length))
            seen.add(secret)
            out.append(Canary(secret, reps, text(spec.prefix, secret)))
    return out


def text(prefix: str, secret: tuple[str, ...]) -> str:
    return f"{prefix} {' '.join(secret)}"


def words(spec: CanaryExposureConfig) -> tuple[str, ...]:
    """What a word-level tokenizer must hold for the canaries: the prefix's words and the digits."""
    return (*re.findall(r"\w+|[^\w\s]", spec.prefix.lower()), *DIGITS)


def planted(spec: CanaryExposureConfig, ds: TextDataset, members: np.ndarray) -> tuple[TextDataset, np.ndarray]:
    """(the data set with one record per canary appended, the target's training indices: the members and
    each canary's record repeated its repetition count). Checked first: the tokenizer gives every canary
    whole (no unknown token, within max_length) and tells every digit apart at every position."""
    canaries = draw(spec)
    length = ds.x.shape[2]
    x = encoded(ds.tokenizer, [c.text for c in canaries], length)
    check_tokens(ds.tokenizer, spec, x, length)
    rows = np.arange(len(ds), len(ds) + len(canaries))
    grown = replace(
        ds,
        x=np.concatenate([ds.x, x]),
        y=np.concatenate([ds.y, np.zeros(len(canaries), dtype=ds.y.dtype)]),
        texts=(*ds.texts, *(c.text for c in canaries)),
    )
    train_idx = np.concatenate([members, np.repeat(rows, [c.repetitions for c in canaries])])
    return grown, train_idx


def encoded(tokenizer: Tokenizer, texts: list[str], length: int) -> np.ndarray:
    from .data import encode

    return encode(tokenizer, texts, length)


def check_tokens(tokenizer: Tokenizer, spec: CanaryExposureConfig, x: np.ndarray, length: int) -> None:
    """A canary the model cannot read whole, or candidates the tokenizer merges, would make exposure wrong."""
    longest = max(len(tokenizer(text(spec.prefix, ("0",) * spec.length))["input_ids"]), int(x[:, 1].sum(1).max()))
    if longest > length:  # truncated: its last digits would never be seen
        raise ConfigError(
            f"canary_exposure: a canary takes {longest} tokens, the model reads {length}; shorten prefix or length"
        )
    unk = tokenizer.unk_token_id
    if unk is not None and (x[:, 0][x[:, 1] > 0] == unk).any():
        raise ConfigError("canary_exposure: the tokenizer has no token for a word of the canaries (prefix or digits)")
    for position in range(spec.length):  # every digit at every position its own token sequence
        variants = [("0",) * position + (d,) + ("0",) * (spec.length - position - 1) for d in DIGITS]
        rows = encoded(tokenizer, [text(spec.prefix, v) for v in variants], length)
        if len({r.tobytes() for r in rows[:, 0]}) < len(DIGITS):
            raise ConfigError("canary_exposure: the tokenizer merges digits of the canaries; choose another prefix")


def log_perplexity(model: CausalLM, x: np.ndarray, device: str = "cpu") -> np.ndarray:
    """(n,) -sum_t log2 p(x_t | x_<t) over each packed record's predicted tokens, in bits."""
    import torch

    out = []
    model.eval().to(device)
    with torch.no_grad():
        for start in range(0, len(x), BATCH):
            part = torch.as_tensor(x[start : start + BATCH], dtype=torch.float32, device=device)
            tokens = part[:, 1, 1:].sum(1)
            out.append((-model.mean_loglik(part) * tokens).double().cpu().numpy())
    return np.concatenate(out) / math.log(2) if out else np.zeros(0)


def exact_rank(canary: float, candidates: np.ndarray) -> int:
    """1 + the candidates strictly more likely (lower log-perplexity) than the canary."""
    return 1 + int((np.asarray(candidates) < canary).sum())


def skew_normal_rank(canary: float, samples: np.ndarray, space: int) -> float:
    """|R| * F(canary), F the skew-normal fitted to sampled candidates' log-perplexities; at least 1."""
    from scipy import stats

    shape, loc, scale = stats.skewnorm.fit(samples)
    return max(1.0, space * float(np.exp(stats.skewnorm.logcdf(canary, shape, loc, scale))))


def exposure(rank: float, space: int) -> float:
    """log2 |R| - log2 rank."""
    return math.log2(space) - math.log2(rank)


def estimator_for(spec: CanaryExposureConfig) -> str:
    return (
        spec.estimator if spec.estimator != "auto" else ("exact" if 10**spec.length <= EXACT_LIMIT else "skew-normal")
    )


def candidate_secrets(
    spec: CanaryExposureConfig, estimator: str, inserted: set[tuple[str, ...]]
) -> list[tuple[str, ...]]:
    """Every secret of R (exact) or ``spec.samples`` drawn uniformly (skew-normal), the inserted ones left out."""
    if estimator == "exact":
        numbers = np.arange(10**spec.length)
    else:
        numbers = np.random.default_rng(np.random.SeedSequence([spec.seed, 0x5A3])).integers(
            0, 10**spec.length, size=spec.samples
        )
    secrets = (tuple(f"{n:0{spec.length}d}") for n in numbers)
    return [s for s in secrets if s not in inserted]


def measure(model: CausalLM, spec: CanaryExposureConfig, length: int, device: str = "cpu") -> CanaryExposure:
    """results.json's ``canary_exposure`` of the trained ``model`` (records of ``length`` tokens)."""
    return exposures(spec, lambda texts: log_perplexity(model, encoded(model.tokenizer, texts, length), device))


def exposures(spec: CanaryExposureConfig, score: Callable[[list[str]], np.ndarray]) -> CanaryExposure:
    """Each canary's repetitions, log-perplexity, rank and exposure, ``score`` giving texts' log-perplexities."""
    canaries, estimator, space = draw(spec), estimator_for(spec), 10**spec.length
    secrets = candidate_secrets(spec, estimator, {c.secret for c in canaries})
    others = score([text(spec.prefix, s) for s in secrets])
    rows = []
    for c, px in zip(canaries, score([c.text for c in canaries]), strict=True):
        rank = exact_rank(px, others) if estimator == "exact" else skew_normal_rank(px, others, space)
        rows.append(
            ExposedCanary(
                secret="".join(c.secret),
                repetitions=c.repetitions,
                log_perplexity=float(px),
                rank=rank,
                exposure=exposure(rank, space),
            )
        )
    by_reps = {str(r): float(np.mean([x.exposure for x in rows if x.repetitions == r])) for r in spec.repetitions}
    return CanaryExposure(
        method="Carlini et al. 2019 (The Secret Sharer): exposure = log2|R| - log2 rank",
        estimator=estimator,
        candidates=space,
        candidates_scored=len(secrets),
        max_exposure=math.log2(space),
        prefix=spec.prefix,
        mean_exposure_by_repetitions=by_reps,
        canaries=rows,
    )


def exposure_md(found: CanaryExposure) -> list[str]:
    """report.md's section: exposure per repetition count and per canary."""
    lines = [
        "",
        "## Canary exposure",
        "",
        f'Random canaries "{found.prefix} d1 ... dL" inserted into the target\'s training texts (never into '
        f"the audited records). Exposure = log2|R| - log2 rank among the |R| = {found.candidates:,} candidates, "
        f"at most {found.max_exposure:.2f} bits; estimator: {found.estimator} "
        f"({found.candidates_scored:,} candidates scored). {found.method.split(':')[0]}.",
        "",
        "| repetitions | mean exposure (bits) | canaries: exposure (rank) |",
        "|---|---|---|",
    ]
    for reps, mean in found.mean_exposure_by_repetitions.items():
        each = [c for c in found.canaries if str(c.repetitions) == reps]
        shown = ", ".join(f"{c.exposure:.2f} ({c.rank:.4g})" for c in each)
        lines.append(f"| {reps} | {mean:.2f} | {shown} |")
    return lines
