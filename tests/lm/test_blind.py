"""The blind baseline: at chance when members and non-members come from one pool, high when they differ."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from miaudit.lm import blind
from miaudit.results import BlindBaseline
from miaudit.stats.metrics import FPR_LEVELS


@pytest.fixture(scope="module")
def news() -> tuple[list[str], np.ndarray]:
    """400 synthetic news-like texts in two topics (no data files needed): sports and markets."""
    rng = np.random.default_rng(0)
    sports = ["team", "match", "goal", "season", "coach", "player", "cup", "league", "win", "score"]
    markets = ["stock", "market", "shares", "price", "oil", "bank", "profit", "rates", "investors", "trade"]
    common = ["the", "a", "on", "in", "of", "and", "to", "for", "said", "today", "new", "after"]
    texts, topic = [], []
    for i in range(400):
        words = sports if i % 2 else markets
        texts.append(" ".join(rng.choice(words + common, size=12)))
        topic.append(i % 2)
    return texts, np.array(topic)


def test_at_chance_on_a_random_split(news):
    texts, _ = news
    aucs = []
    for seed in range(5):
        member = np.random.default_rng(seed).permutation(len(texts)) < len(texts) // 2
        aucs.append(blind.blind_baseline(texts, member, FPR_LEVELS, seed).auc)
    # five random splits: the mean within 0.05 of chance (each AUC's sd is about 0.03 on 400 texts)
    assert abs(np.mean(aucs) - 0.5) < 0.05
    assert max(abs(a - 0.5) for a in aucs) < 0.12
    # scored in-sample, the same classifier would "detect" the random split: cross-validation is what keeps it honest
    member = np.random.default_rng(0).permutation(len(texts)) < len(texts) // 2
    fitted = blind.make_classifier().fit(texts, member)
    assert roc_auc_score(member, fitted.predict_proba(texts)[:, 1]) > 0.6


def test_high_on_a_shifted_split(news):
    texts, topic = news
    found = blind.blind_baseline(texts, topic == 1, FPR_LEVELS)
    assert found.auc is not None and found.auc > 0.95 and found.auc_ci is not None and found.auc_ci[0] > 0.9
    assert found.tpr_at_fpr is not None and found.tpr_at_fpr["0.01"] > 0.5
    assert "TF-IDF" in found.method


def test_warns_only_when_above_chance_and_near_the_attacks():
    above = BlindBaseline(method="text only", auc=0.80, auc_ci=[0.75, 0.85])
    chance = BlindBaseline(method="text only", auc=0.52, auc_ci=[0.47, 0.57])
    assert "split rather than the model" in blind.warning(above, [0.82, 0.6])
    assert blind.warning(above, [0.95]) is None  # the attacks are well above it
    assert blind.warning(chance, [0.51]) is None  # at chance: nothing detected
