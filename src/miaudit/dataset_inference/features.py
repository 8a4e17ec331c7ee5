"""Per-record features of the suspect and validation records, from the attacks the target allows.

Reference-free signals of the target's output on each record always: for a classifier the log-probability of its
label, the margin of the label's logit over the others and the entropy of the output; for a causal language model
its mean token log-likelihood and the reference-free LM attacks' statistics (zlib, Min-K%, Min-K%++), read from the
model's per-token outputs. With reference models, offline attacks that compare the target with them (LiRA, RMIA,
BASE1) as well, each record's score a feature (higher: more member-like).
Each reference's own reference-free signals on the same records (``reference_signals``): the references never
trained on the suspect or validation records, so they say how easy each record is for a model of this kind, against
which the target's signals are calibrated (``calibrated``).
The same features on the references as pseudo-targets (each reference in the target's place, the other references
as its references) give records of known membership: the population records it trained on (members) and the
validation records (non-members), from which ``fraction`` and ``power`` read how much a member stands out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..attacks import AttackInputs, RecordSet, registry
from ..attacks.calibration import joined_records
from ..attacks.lm_reference_free import MinKParams, min_k, min_k_pp, zlib_ratio
from ..errors import AttackRequirementError
from ..experiment.base import Experiment
from ..experiment.deployable import as_pseudo_target, population_out_of, records_where

if TYPE_CHECKING:
    from ..lm.model import CausalLM

REFERENCE_ATTACKS = ("lira", "rmia", "base1")  # offline attacks on logits: cheap, and each sees the leak its own way
SIGNALS = ("log_p_label", "margin", "neg_entropy")
LM_SIGNALS = ("mean_loglik", "zlib", "min_k", "min_k_pp")
MEMBERS_PER_PSEUDO_TARGET = 500  # the pseudo-targets' members scored (a sample: the AUC needs no more)
MIN_MEMBERS = 30


@dataclass(frozen=True)
class Features:
    names: list[str]
    values: np.ndarray  # (n, d)
    signals: int = len(SIGNALS)  # the first columns: reference-free signals of the model's own outputs

    @property
    def attacks(self) -> list[str]:
        """The reference attacks among the columns."""
        return self.names[self.signals :]


@dataclass(frozen=True)
class Signals:
    """The reference-free signals of one model in the target's place: their names and, for a record set whose
    ``target_logits`` are that model's, the (n, d) values."""

    names: tuple[str, ...]
    of: Callable[[RecordSet], np.ndarray]


@dataclass(frozen=True)
class PseudoTarget:
    """One reference in the target's place: its members' and non-members' features (same columns as the target's)."""

    members: np.ndarray
    nonmembers: np.ndarray


def signals(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(n, 3) reference-free signals of a model's logits: log p(label), label logit minus the largest other, and
    minus the entropy of the softmax."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    rows = np.arange(len(z))
    own = logp[rows, labels]
    others = np.where(np.eye(z.shape[1], dtype=bool)[labels], -np.inf, z)
    margin = z[rows, labels] - others.max(axis=1)
    neg_entropy = (np.exp(logp) * logp).sum(axis=1)
    return np.stack([own, margin, neg_entropy], axis=1)


def classifier_signals() -> Signals:
    """A classifier's signals, read from the outputs alone (any model's: a pseudo-target's record set carries its
    logits in the target's place)."""
    return Signals(SIGNALS, lambda records: signals(records.target_logits, records.labels))


def lm_signals(model: CausalLM) -> Signals:
    """A causal LM's signals, from its per-token outputs on the records' tokens: the mean token log-likelihood
    (minus the LM loss), zlib's ratio, Min-K% and Min-K%++ at the attacks' default k (their registry entries)."""
    from ..lm.tokens import decoded_texts, token_statistics

    k = MinKParams().k

    def of(records: RecordSet) -> np.ndarray:
        x = np.asarray(records.x)
        stats = token_statistics(model, x)
        columns = (stats.mean_loglik(), zlib_ratio(stats, decoded_texts(model, x)), min_k(stats, k), min_k_pp(stats, k))
        return np.stack(columns, axis=1)

    return Signals(LM_SIGNALS, of)


def signals_of(module: object) -> Signals:
    """The reference-free signals a model allows: its tokens' for a causal LM, its outputs' otherwise."""
    from ..lm.model import CausalLM

    return lm_signals(module) if isinstance(module, CausalLM) else classifier_signals()


def _attack_columns(
    inputs: AttackInputs, references: int, only: list[str] | None
) -> tuple[list[str], list[np.ndarray]]:
    """The scores of every reference attack (of ``only``, when given) that runs on ``inputs`` with ``references``
    references."""
    kept: list[str] = []
    cols: list[np.ndarray] = []
    if references < 1:
        return kept, cols
    for name in REFERENCE_ATTACKS:
        if only is not None and name not in only:
            continue
        try:
            scores = registry.score(name, inputs, references=references).scores
        except (AttackRequirementError, ValueError):
            continue  # the target does not allow it (mode, outputs, inputs): the others carry the test
        kept.append(name)
        cols.append(np.asarray(scores, dtype=np.float64))
    return kept, cols


def features(
    inputs: AttackInputs, references: int, own: Signals | None = None, only: list[str] | None = None
) -> Features:
    """The features of ``inputs.queries`` on the target against its first ``references`` references; ``own``: the
    target's reference-free signals (default: a classifier's); ``only``: the attacks to keep (the columns another
    call found)."""
    own = own or classifier_signals()
    names, cols = _attack_columns(inputs.first(references), references, only)
    values = np.concatenate([own.of(inputs.queries), *(c[:, None] for c in cols)], axis=1)
    return Features([*own.names, *names], values, len(own.names))


def reference_signals(queries: RecordSet, references: int, own: Callable[[int], Signals]) -> np.ndarray:
    """(K, n, d) each of the first ``references`` references' own reference-free signals on ``queries`` (``own(k)``:
    reference k's, read with it in the target's place): what models that never trained on the records say of them,
    against which the target's are calibrated."""
    return np.stack([own(k).of(as_pseudo_target(queries, k)) for k in range(references)])


def with_queries(exp: Experiment, idx: np.ndarray) -> AttackInputs:
    """The experiment's attack inputs with the records ``idx`` as the queries (an endpoint is asked about those
    it was not asked about yet) and no model access (the attacks used here read outputs only)."""
    logits = exp.target.logits
    missing = idx[np.isnan(np.asarray(logits[idx], dtype=np.float64)).any(axis=1)]
    if len(missing) and exp.oracle is not None and hasattr(exp.oracle, "logits"):
        logits[missing] = exp.oracle.logits(exp.dataset.x[missing])
    return replace(exp.attack_inputs(), queries=exp.record_set(idx), models=None, labels=None)


def pseudo_targets(
    inputs: AttackInputs,
    validation: RecordSet,
    names: list[str],
    seed: int,
    own: Callable[[int], Signals] = lambda _: classifier_signals(),
) -> list[PseudoTarget]:
    """Per reference k: the features, with k as the target against the other references, of a sample of the
    population records k trained on and no other reference did (members, seen by the other references as the
    target's records are) and of the validation records no reference trained on (non-members); ``own(k)``: the
    reference-free signals of reference k in the target's place. Empty
    without two references, without population records, or online (every record a member of half of them)."""
    k_all, pop = inputs.n_references, inputs.population
    if k_all < 2 or pop is None or pop.ref_in is None or inputs.mode != "offline":
        return []
    rng = np.random.default_rng([seed, 3])
    out = []
    for k in range(k_all):
        # k's members that no other reference trained on: seen by the other references as the target's records
        # are (every reference OUT); with too few of them, those some other reference did not train on
        others = np.delete(pop.ref_in, k, axis=0)
        members = np.flatnonzero(pop.ref_in[k] & ~others.any(axis=0))
        if len(members) < MIN_MEMBERS:
            members = np.flatnonzero(pop.ref_in[k] & ~others.all(axis=0))
        members = np.sort(rng.permutation(members)[:MEMBERS_PER_PSEUDO_TARGET])
        keep = np.ones(len(validation.labels), dtype=bool)
        if validation.ref_in is not None:
            keep = np.asarray(~validation.ref_in.any(axis=0), dtype=bool)
        if len(members) < 2 or keep.sum() < 2:
            continue
        mask = np.zeros(len(pop.labels), dtype=bool)
        mask[members] = True
        batch = joined_records(records_where(pop, mask), records_where(validation, keep))
        pseudo = replace(
            inputs,
            queries=as_pseudo_target(batch, k),
            population=as_pseudo_target(population_out_of(pop, k), k),
            validation=None if inputs.validation is None else as_pseudo_target(inputs.validation, k),
            models=None,
            labels=None,
        )
        f = features(pseudo, k_all - 1, own(k), names).values
        out.append(PseudoTarget(members=f[: len(members)], nonmembers=f[len(members) :]))
    return out
