"""The references as pseudo-targets: a null pool with the resolution the calibration records lack.

A conformal p-value among n calibration records is never below 1 / (n + 1), and with m queries BH's first
threshold is FDR / m: with a few hundred calibration records and a thousand queries no single record can be
flagged (stats.fdr). The references hold more null scores. Offline, no reference trained on the audited records,
so with reference k in the target's place (scored by the same attack against the other K - 1 references, as in
``experiment.deployable``) every audited record it did not train on is a known non-member of that pseudo-target:
P pseudo-targets give P x m null scores. A target's record gets the p-value of its score among them
(``stats.pooled_null``).

Validity rests on the target's null scores being distributed like the pseudo-targets' (the target is scored
against K references, each pseudo-target against K - 1, and the target is a different model). The audit measures
that rather than assuming it: each pseudo-target also scores the population records it trained on (its members),
and the whole procedure run on each pseudo-target, against the pool of the others, has a realized false discovery
proportion with known membership (``stats.pooled_null.validate``).

Only where ``experiment.deployable`` applies: offline attacks on logits with a reference left. Attacks that need
the models (BMIA, GLS) would refit a posterior per pseudo-target (K times the attack's cost) and keep their
conformal p-values; online, every record is a member of half the references, so no reference is a null for all
of them (each record's OUT references would give its own null: not built).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..attacks import AttackInputs, RecordSet, registry
from ..attacks.base import AttackParams
from ..attacks.calibration import joined_records
from ..stats.pooled_null import PseudoTargetScores
from . import cached
from .deployable import applies, as_pseudo_target, population_out_of, pseudo_targets, records_where


def _scorable(records: RecordSet, k: int) -> np.ndarray:
    """The records some reference other than k did not train on: an offline attack needs one OUT reference."""
    if records.ref_in is None:
        return np.ones(len(records.labels), dtype=bool)
    return np.asarray(~np.delete(records.ref_in, k, axis=0).all(axis=0), dtype=bool)


def _members_of(records: RecordSet | None, k: int) -> RecordSet | None:
    """The records reference k trained on that it can be scored on (None when there are none or their membership
    is unknown)."""
    if records is None or records.ref_in is None:
        return None
    keep = records.ref_in[k] & _scorable(records, k)
    return records_where(records, keep) if keep.any() else None


def scores(
    info: registry.AttackInfo, params: AttackParams, references: int, inputs: AttackInputs
) -> list[PseudoTargetScores] | None:
    """Per pseudo-target: the scores of the audited records (nulls) and of the population records it trained on
    (members). None where the construction does not apply: see ``applies`` and references that trained on audited
    records (precomputed outputs can say so)."""
    if not applies(info, references, inputs.mode):
        return None
    base = inputs.first(references)
    if base.queries.ref_in is not None and base.queries.ref_in.any():
        return None  # references trained on audited records: a pseudo-target's other references are not the
        # target's (K - 1 with some IN against K with the same IN), and the nulls would not match
    queries, n = base.queries, len(base.queries.labels)
    out = []
    for k in range(pseudo_targets(references, n)):
        scorable = _scorable(queries, k)
        extra = _members_of(base.population, k)
        batch = (
            records_where(queries, scorable)
            if extra is None
            else joined_records(records_where(queries, scorable), extra)
        )
        pseudo = replace(
            base,
            queries=as_pseudo_target(batch, k),
            population=None if base.population is None else as_pseudo_target(population_out_of(base.population, k), k),
            validation=None if base.validation is None else as_pseudo_target(base.validation, k),
            models=None,
        )
        s = cached.execute(info, params, references - 1, pseudo).scores
        n_kept = int(scorable.sum())
        trained = np.zeros(n_kept, dtype=bool) if queries.ref_in is None else queries.ref_in[k][scorable]
        own = s[:n_kept]
        out.append(PseudoTargetScores(null=own[~trained], members=np.concatenate([own[trained], s[n_kept:]])))
    return out
