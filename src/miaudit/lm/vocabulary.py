"""A word vocabulary read off a corpus: the words ``gpt-tiny``'s word-level tokenizer (``data.py``) and the
benchmarks' small BERT can name."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable


def vocabulary(texts: Iterable[str], size: int) -> list[str]:
    """The ``size`` most frequent lower-cased words (ties by first appearance), as the tokenizer splits them."""
    counts = Counter(w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower()))
    return [w for w, _ in counts.most_common(size)]
