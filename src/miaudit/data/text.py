"""AG News (test split only: the train split is not available offline) as TF-IDF
features, the text-modality set-up the BMIA paper uses for 20 Newsgroups, or as token ids
for a transformer (``model: hf:PATH``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import DataError
from .base import Dataset, LoadContext, cached_arrays, file_key, loader, require_file, validate_arrays
from .tabular import labels_from_one

AG_NEWS_FILE = "ag_news/test.csv"
AG_NEWS_SHA256 = "d2a2cef4dfeb21ca17b463fd15e9e5a639c05823d03efabb3d28a75bbfe8d915"
AG_NEWS_CLASSES = 4
TFIDF_MAX_FEATURES = 2000  # vocabulary size = input width of the MLP; part of the cache key


def read_news(path: Path) -> tuple[list[str], np.ndarray]:
    """CSV without header (class 1-4, title, description) -> (title + " " + description, labels 0..3)."""
    import pandas as pd  # here, as in tabular: not on every import of the loaders

    try:
        frame = pd.read_csv(
            path,
            header=None,
            names=["label", "title", "description"],
            dtype={"label": np.int64, "title": str, "description": str},
            keep_default_na=False,
        )
    except ValueError as e:
        raise DataError(f"dataset ag_news: cannot read {path} as CSV rows (class, title, description) ({e})") from None
    texts = (frame["title"] + " " + frame["description"]).tolist()
    return texts, labels_from_one(frame["label"].to_numpy(), AG_NEWS_CLASSES, "ag_news", str(path))


def _tfidf_arrays(path: Path) -> dict[str, np.ndarray]:
    """Dense TF-IDF of title + description.

    The vocabulary and idf weights are fitted on all records, members and non-members
    pooled: the membership split is made later, from these rows.
    """
    texts, y = read_news(path)
    from sklearn.feature_extraction.text import TfidfVectorizer  # here: importing scikit-learn takes a second

    vectorizer = TfidfVectorizer(
        max_features=TFIDF_MAX_FEATURES, sublinear_tf=True, stop_words="english", dtype=np.float32
    )
    return {"x": vectorizer.fit_transform(texts).toarray(), "y": y}


@loader("ag_news")
def ag_news(ctx: LoadContext) -> Dataset:
    """7,600 news items, y int64 in 0..3 (the file's class minus 1). x float32 (n, 2000) TF-IDF rows (L2 norm
    1), or, for a transformer (``model: hf:PATH``, ``ctx.tokenize``), float32 (n, 2, max_length): the token
    ids and attention mask of title + description by the model's own tokenizer (``models/hf.py``)."""
    path = require_file(ctx, AG_NEWS_FILE, AG_NEWS_SHA256, "ag_news")
    if ctx.tokenize is not None:  # fast tokenizers take about a second for the whole file: not cached
        texts, y = read_news(path)
        return validate_arrays("ag_news", ctx.tokenize(texts), y, AG_NEWS_CLASSES)
    key = f"ag_news-tfidf{TFIDF_MAX_FEATURES}-{file_key(path, AG_NEWS_SHA256)}"
    arrays = cached_arrays(ctx, key, lambda: _tfidf_arrays(path))
    return validate_arrays("ag_news", arrays["x"], arrays["y"], AG_NEWS_CLASSES)
