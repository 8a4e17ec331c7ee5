"""The references as pseudo-targets: what each scores (the audited records as nulls, the population records it
trained on as members), and where the construction is refused."""

from __future__ import annotations

import numpy as np

from miaudit.attacks import AttackInputs, RecordSet, registry
from miaudit.experiment import pseudo_targets
from miaudit.stats import pooled_null

K = 4


def _records(rng: np.random.Generator, n: int, ref_in: np.ndarray | None) -> RecordSet:
    """Two-class logits around a per-record difficulty; a model that trained on a record is 1.5 more confident."""
    difficulty = rng.normal(size=n)

    def logits(trained: np.ndarray | float) -> np.ndarray:
        return np.stack([difficulty + 1.5 * trained + 0.3 * rng.normal(size=n), np.zeros(n)], axis=1)

    trained = np.zeros((K, n)) if ref_in is None else ref_in
    return RecordSet(
        labels=np.zeros(n, dtype=np.int64),
        target_logits=logits(0.0),
        ref_logits=np.stack([logits(trained[k]) for k in range(K)]),
        ref_in=ref_in,
    )


def test_each_pseudo_target_scores_the_queries_as_nulls_and_its_population_members() -> None:
    rng = np.random.default_rng(0)
    ref_in = np.argsort(rng.random((300, K)), axis=1).T < K // 2  # each population record in half the references
    inputs = AttackInputs(queries=_records(rng, 200, None), population=_records(rng, 300, ref_in))
    info = registry.get("lira")
    got = pseudo_targets.scores(info, info.params(), K, inputs)
    assert got is not None and len(got) == K
    for k, p in enumerate(got):
        assert p.null.size == 200 and p.members.size == int(ref_in[k].sum())  # every one has an OUT reference
    v = pooled_null.validate(got, 0.05, "bh", None)  # exchangeable models: the raw pool holds its level
    assert v is not None and v.fdp.flagged > 20 and v.fdp.value <= 0.1


def test_refused_where_references_trained_on_the_queries_or_the_attack_needs_models() -> None:
    rng = np.random.default_rng(1)
    ref_in = np.argsort(rng.random((100, K)), axis=1).T < K // 2
    info = registry.get("lira")
    assert pseudo_targets.scores(info, info.params(), K, AttackInputs(queries=_records(rng, 100, ref_in))) is None
    assert (
        pseudo_targets.scores(
            info,
            info.params(),
            K,
            AttackInputs(queries=_records(rng, 100, None)),
        )
        is not None
    )
    assert pseudo_targets.scores(info, info.params(), 1, AttackInputs(queries=_records(rng, 100, None))) is None
