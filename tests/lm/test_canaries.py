"""Canary exposure (Carlini et al. 2019): ranks and exposure on hand cases, the skew-normal extrapolation
against exact ranks, exposure growing with repetitions on a trained gpt-tiny, and the config's checks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import miaudit
from miaudit.config import run as config_run
from miaudit.errors import ConfigError
from miaudit.lm import canaries, data
from miaudit.lm.canaries import CanaryExposureConfig


def by_number(texts: list[str], length: int) -> np.ndarray:
    """A stand-in model: a text's log-perplexity is its secret read as a number (0 the most likely)."""
    return np.array([float("".join(t.split()[-length:])) for t in texts])


def test_rank_and_exposure_by_hand():
    candidates = np.array([5.0, 1.0, 4.0, 2.0, 8.0, 7.0, 6.0])  # |R| = 8 with the canary at 3.0
    assert canaries.exact_rank(3.0, candidates) == 3  # two candidates are more likely
    assert canaries.exposure(3, 8) == pytest.approx(3 - math.log2(3))
    assert canaries.exposure(1, 8) == 3.0 and canaries.exposure(8, 8) == 0.0


def test_exact_exposures_rank_among_every_candidate_but_the_other_canaries():
    spec = CanaryExposureConfig(count=2, repetitions=[1, 4], length=3, seed=5)
    found = canaries.exposures(spec, lambda texts: by_number(texts, 3))
    secrets = sorted(int(c.secret) for c in found.canaries)
    assert found.estimator == "exact" and found.candidates == 1000 and found.candidates_scored == 996
    for c in found.canaries:
        n = int(c.secret)
        # the candidates more likely: every number below it, less the inserted canaries below it
        rank = 1 + n - sum(s < n for s in secrets)
        assert c.rank == rank and c.exposure == pytest.approx(math.log2(1000) - math.log2(rank))
    mean_4 = np.mean([c.exposure for c in found.canaries if c.repetitions == 4])
    assert found.mean_exposure_by_repetitions["4"] == pytest.approx(mean_4)


def test_skew_normal_extrapolation_matches_the_exact_rank_on_a_skew_normal_space():
    """Candidates whose log-perplexities are skew-normal quantiles (rank n+1 for secret n): the fit from 5,000
    sampled ones gives each canary's exact exposure within 0.5 bits (a factor 1.4 in rank; seed 2 draws one
    canary in the 0.3% tail, where 5,000 samples hold about 13 below it), and extrapolates to a canary more
    likely than every sample, within 1 bit of its true rank."""
    law = stats.skewnorm(4.0, loc=60.0, scale=12.0)
    space = 10**6

    def px(texts: list[str]) -> np.ndarray:
        return law.ppf((by_number(texts, 6) + 0.5) / space)

    spec = CanaryExposureConfig(count=3, repetitions=[1], length=6, seed=2, estimator="skew-normal", samples=5000)
    found = canaries.exposures(spec, px)
    assert found.estimator == "skew-normal" and found.candidates_scored == 5000
    assert min(int(c.secret) for c in found.canaries) < 3000  # the tail case is among them
    for c in found.canaries:
        exact = canaries.exposure(int(c.secret) + 0.5, space)
        assert abs(c.exposure - exact) < 0.5, (c, exact)
    samples = law.rvs(5000, random_state=2)
    beyond = law.ppf(1e-4)  # rank 100 of 10^6; no sample lies below it
    assert (samples < beyond).sum() == 0
    assert abs(math.log2(canaries.skew_normal_rank(beyond, samples, space) / 100)) < 1


@pytest.mark.slow
def test_exposure_grows_with_repetitions_on_a_trained_model(news_csv: Path, tmp_path: Path):
    result = miaudit.run(
        {
            "dataset": {"path": str(news_csv), "text_column": "body"},
            "model": "gpt-tiny[max_length=16,width=16,vocab=40]",
            "train": {"epochs": 4, "batch_size": 16, "lr": 0.01, "optimizer": "adamw"},
            "references": 0,
            "attacks": ["attack-p"],
            "canary_exposure": {"count": 2, "repetitions": [1, 32], "length": 3, "seed": 0},
        }
    )
    found = result.run.canary_exposure
    assert found is not None
    once = [c.exposure for c in found.canaries if c.repetitions == 1]
    often = [c.exposure for c in found.canaries if c.repetitions == 32]
    # seeded: 32 insertions put the canaries at ranks 3 and 1 (8.4 and 9.97 bits of at most 9.97), one insertion
    # leaves them at ranks 584 and 202 (0.8 and 2.3 bits)
    assert min(often) > max(once) + 1 and np.mean(often) - np.mean(once) > 3, found.canaries
    exp = result.run.experiment
    canary_rows = np.arange(len(exp.dataset) - 4, len(exp.dataset))
    assert exp.dataset.texts[-1].startswith("my secret number is ") and len(exp.split.members) == 32
    assert not np.isin(canary_rows, np.concatenate([exp.query_idx, exp.split.population, exp.split.validation])).any()
    assert np.bincount(np.isin(exp.target.train_idx, canary_rows))[1] == 1 + 1 + 32 + 32
    written = result.report(tmp_path / "out").dump()
    assert json.loads((tmp_path / "out" / "results.json").read_text())["canary_exposure"] == written["canary_exposure"]
    assert "## Canary exposure" in (tmp_path / "out" / "report.md").read_text()
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Canary exposure</h2>" in html and html.count('<tr><td class="num">') >= 2  # a row per count


def test_the_config_is_checked():
    lm = {"model": "gpt-tiny"}
    for bad, message in [
        ({**lm, "canary_exposure": {"repetitions": [0, 4]}}, r"^canary_exposure\.repetitions: expected distinct"),
        ({**lm, "canary_exposure": {"length": 6, "estimator": "exact"}}, r"^canary_exposure: estimator: exact ranks"),
        ({**lm, "canary_exposure": {"length": 1, "count": 6, "repetitions": [1, 2]}}, r"cannot give 12 canaries"),
        ({"model": "mlp", "canary_exposure": {}}, r"^canary_exposure: canaries go into the training texts of a causal"),
    ]:
        with pytest.raises(ConfigError, match=message):
            config_run.from_dict(bad)
    assert canaries.estimator_for(CanaryExposureConfig(length=5)) == "exact"
    assert canaries.estimator_for(CanaryExposureConfig(length=6)) == "skew-normal"


def test_a_canary_the_model_cannot_read_whole_is_refused():
    tokenizer = data.word_tokenizer(["a b c"], 30, 10, reserved=canaries.words(CanaryExposureConfig()))
    ds = data.from_texts(["the cat sat on the mat"] * 20, tokenizer, 10, "t")
    with pytest.raises(ConfigError, match=r"^canary_exposure: a canary takes 11 tokens, the model reads 10"):
        canaries.planted(CanaryExposureConfig(length=6), ds, np.arange(5))
    grown, train_idx = canaries.planted(CanaryExposureConfig(length=5), ds, np.arange(5))  # 10 tokens: fits
    assert len(grown) == 23 and grown.texts[-1].startswith("my secret number is ") and len(train_idx) == 5 + 21
    unknown = data.word_tokenizer(["a b c"], 30, 16)  # no canary words: [UNK]
    ds = data.from_texts(["the cat sat on the mat"] * 20, unknown, 16, "t")
    with pytest.raises(ConfigError, match=r"no token for a word of the canaries"):
        canaries.planted(CanaryExposureConfig(length=4), ds, np.arange(5))
