"""``attacks: auto`` with K >= 2 references: each candidate measured on the references as pseudo-targets, and
only the strongest run.

A table measured on other data sets does not say which attack is strongest on this one (on a
grayscale CIFAR-10 MLP the pair attacks, tied-best on the four development sets, fell to a fifth of the best).
The references can say it without reading the target's membership: reference k plays the target, the other
references play its references, and the population records reference k trained on are its members, those it
did not its known non-members, exactly as the audit's own queries (offline, no reference trained on them).

Per pseudo-target k (the first ``PSEUDO_TARGETS`` references), with ``m = min(K - 1, REFERENCES_PER_RUN)`` of
the other references as its references:

- members: the population records k trained on and none of its m references did (offline, as the audit's
  queries are to the real references); each reference trains on a random half of the population, so these
  are about 1 / 2^(m + 1) of it, which is why m is capped (with 8 references, 1 / 512 would leave none);
- non-members: the audit's queries (no reference trained on them: offline) and the validation records;
- the attack's population: the population records k did not train on (``deployable``'s rule);

each candidate's scores give, per FPR level, a threshold on that pseudo-target's non-members and the members
it flags. The estimate pools the K pseudo-targets' members (Clopper-Pearson interval on the pooled counts; the
models' own spread is listed per pseudo-target beside it). The candidate with the highest estimate at the
audit's FPR level runs, and with it each candidate tied with it: the flagged members differ from the best's by
at most one standard error of a paired difference (McNemar's, sqrt(b + c) on the discordant members), up to
``MAX_RUN`` in all, so that Holm spends its family-wise error on attacks that earn it.

Nothing reads the target's membership; the target's own outputs are not used at all (a test permutes its
membership and checks that the choice does not move).

The estimates run above the target's own TPR (K = 4: location 28% against 10-18%;
``benchmarks/choice/lodo_choice.json``), and the cause is measured: references train on random halves of one
pool, so any two share about half their training records, while the target shares none with them. On records
none of them trained on (location, seed 0) two references' rescaled logits correlate 0.54-0.63, the target's
with a reference 0.37-0.44; the residual of a pseudo-target on its references is narrower than the target's,
so its non-members sit closer to what the references predict and its members stand out more. Moving each
pseudo-target to the target's measured relation (mean, slope and residual variance on the population, all
non-members of the target: ``benchmarks/choice/choice_check.py``'s mirror) removed the bias but ranked the candidates
worse on the development runs (the noise it adds is not how the target differs), so auto keeps the plain
pseudo-audit: read the estimates as a ranking of the candidates, not a forecast of the audit's TPR. The plain
estimate never reads the target, so it cannot see a target trained unlike its references (with a dropout
target, location seed 0, it inverted the candidates' order where the mirror got it exactly; with a smaller MLP
the reverse; ``benchmarks/choice/lodo_choice.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from ..attack_plan import PlannedAttack
from ..attacks import AttackInputs, RecordSet, registry
from ..errors import AttackRequirementError
from ..experiment import deployable
from ..experiment.run import CandidateEstimate, PseudoTargetEstimates
from ..stats.metrics import clopper_pearson, nan_lowest

PSEUDO_TARGETS = 4  # references that play the target; each costs one run of every candidate
REFERENCES_PER_RUN = 3  # the pseudo-target's references: more leave too few members of it alone (docstring)
MAX_RUN = 3  # candidates run at most: the strongest and those tied with it
LEVEL = 0.01  # the FPR the choice ranks at unless the audit asks for a lower one (min_fpr)


def _models(records: RecordSet, target: int, refs: list[int], keep: np.ndarray) -> RecordSet:
    """Records ``keep`` seen with reference ``target`` as the target and references ``refs`` as its references
    (arrays, no augmentation views: the choice scores the records themselves)."""
    block = records.ref_logits
    logits = np.stack([np.asarray(block[j], dtype=np.float64)[keep] for j in [target, *refs]])
    return RecordSet(
        labels=records.labels[keep],
        target_logits=logits[0],
        ref_logits=logits[1:],
        ref_in=None if records.ref_in is None else np.asarray(records.ref_in, dtype=bool)[refs][:, keep],
        x=None if records.x is None else records.x[keep],
    )


def _joined(a: RecordSet, b: RecordSet) -> RecordSet:
    """Two record sets as one set of offline queries (no reference membership)."""
    return RecordSet(
        labels=np.concatenate([a.labels, b.labels]),
        target_logits=np.concatenate([a.target_logits, b.target_logits]),
        ref_logits=np.concatenate([np.asarray(a.ref_logits), np.asarray(b.ref_logits)], axis=1),
        x=None if a.x is None or b.x is None else np.concatenate([a.x, b.x]),
    )


@dataclass(frozen=True)
class PseudoAudit:
    """One pseudo-target's audit: the inputs an attack sees, which of its queries are members, and which
    references play the target and its references."""

    inputs: AttackInputs
    is_member: np.ndarray
    target: int
    references: tuple[int, ...]


def pseudo_audits(
    inputs: AttackInputs, references: int, per_run: int = REFERENCES_PER_RUN, every_subset: bool = False
) -> list[PseudoAudit]:
    """The references as pseudo-targets (module docstring); none when the audit cannot supply them. Each
    pseudo-target takes the first ``per_run`` other references as its references, or, ``every_subset``, one
    pseudo-audit per subset of that size (``benchmarks/choice/choice_check.py`` measures both)."""
    pop = inputs.population
    if inputs.mode != "offline" or references < 2 or pop is None or pop.ref_in is None:
        return []
    ref_in = np.asarray(pop.ref_in, dtype=bool)[:references]
    m = min(references - 1, per_run)
    audits = []
    for k in range(min(references, PSEUDO_TARGETS)):
        others = [j for j in range(references) if j != k]
        for chosen in combinations(others, m) if every_subset else [others[:m]]:
            audits.extend(_pseudo_audit(inputs, ref_in, k, list(chosen)))
    return audits


def _pseudo_audit(inputs: AttackInputs, ref_in: np.ndarray, k: int, refs: list[int]) -> list[PseudoAudit]:
    """Reference k as the target with ``refs`` as its references (none if no population record is k's alone)."""
    pop = inputs.population
    assert pop is not None  # pseudo_audits checked it
    members = ref_in[k] & ~ref_in[refs].any(axis=0)
    if not members.any():
        return []
    everything = np.ones(len(inputs.queries.labels), dtype=bool)
    nonmembers = _models(inputs.queries, k, refs, everything)
    if inputs.validation is not None:
        val = inputs.validation
        nonmembers = _joined(nonmembers, _models(val, k, refs, np.ones(len(val.labels), dtype=bool)))
    queries = _joined(nonmembers, _models(pop, k, refs, members))
    is_member = np.r_[np.zeros(len(nonmembers.labels), dtype=bool), np.ones(int(members.sum()), dtype=bool)]
    population = _models(pop, k, refs, ~ref_in[k])
    pseudo = replace(inputs, queries=queries, population=population, validation=None, models=None)
    return [PseudoAudit(pseudo, is_member, k, tuple(refs))]


def flagged(scores: np.ndarray, is_member: np.ndarray, level: float) -> np.ndarray:
    """Which members reach the threshold that at most ``level`` of the non-members reach (none: no such one)."""
    s = nan_lowest(scores)
    threshold = deployable.pooled_threshold(s[~is_member], level)
    return np.zeros(int(is_member.sum()), dtype=bool) if threshold is None else s[is_member] >= threshold


def decide(
    flagged: dict[str, np.ndarray], level: float, barred: dict[str, str] | None = None
) -> list[tuple[str, bool, str]]:
    """(name, run, why) per candidate, strongest first, from which pooled members each flags: the most flagged
    runs, and each candidate whose shortfall is at most one paired sd (sqrt of the members on which the two
    disagree, McNemar), up to ``MAX_RUN``. A candidate in ``barred`` (its own guard flags the target: why) never
    runs, unless every candidate is barred (then the strongest runs, its guard's warning beside it)."""
    barred = barred or {}
    if all(n in barred for n in flagged):
        barred = {}
    order = sorted(flagged, key=lambda n: (n in barred, -int(flagged[n].sum())))
    best = flagged[order[0]]
    out, running = [], 0
    for name in order:
        if name in barred:
            out.append((name, False, f"left out because {barred[name]}"))
            continue
        mine = flagged[name]
        gap, sd = int(best.sum() - mine.sum()), float(np.sqrt((mine != best).sum()))
        tied = gap <= sd
        run = tied and running < MAX_RUN
        running += run
        if name == order[0]:
            why = f"run because it has the highest pseudo-target TPR at {level:g} FPR"
        elif run:
            why = f"run because it is tied with {order[0]} ({gap} fewer members flagged, one paired sd {sd:.1f})"
        elif tied:
            why = f"left out because {MAX_RUN} tied attacks already run (each spends family-wise error)"
        else:
            why = f"left out because it flags {gap} fewer members than {order[0]}, beyond one paired sd ({sd:.1f})"
        out.append((name, bool(run), why))
    return out


def choose(
    candidates: list[PlannedAttack], inputs: AttackInputs, references: int, levels: tuple[float, ...], level: float
) -> PseudoTargetEstimates | None:
    """Each candidate's pseudo-target TPR at ``levels`` and which run (module docstring); None when the audit
    has no pseudo-targets (online, one reference, or no population records with known reference membership)."""
    return estimate(candidates, pseudo_audits(inputs.first(references), references), levels, level,
                    guarded(candidates, inputs))  # fmt: skip


def guarded(candidates: list[PlannedAttack], inputs: AttackInputs) -> dict[str, str]:
    """The candidates whose own guard (``AttackInfo.guard``) flags the target's inputs: name -> why."""
    out = {}
    for attack in candidates:
        if attack.info.guard is not None:
            why = attack.info.guard(inputs.first(attack.references), attack.params)
            if why is not None:
                out[attack.name] = why
    return out


def estimate(
    candidates: list[PlannedAttack],
    audits: list[PseudoAudit],
    levels: tuple[float, ...],
    level: float,
    barred: dict[str, str] | None = None,
) -> PseudoTargetEstimates | None:
    """``choose`` on given pseudo-audits (None without any); ``barred``: candidates their own guard flags."""
    if not audits:
        return None
    m = len(audits[0].references)
    levels = tuple(sorted(set(levels) | {level}))
    flags: dict[str, dict[float, list[np.ndarray]]] = {}
    for attack in candidates:
        flags[attack.name] = {lv: [] for lv in levels}
        for audit in audits:
            try:
                scores = registry.execute(attack.info, attack.params, m, audit.inputs).scores
            except AttackRequirementError:
                scores = np.full(audit.is_member.size, np.nan)
            for lv in levels:
                flags[attack.name][lv].append(flagged(scores, audit.is_member, lv))
    pooled = {n: {lv: np.concatenate(f) for lv, f in per.items()} for n, per in flags.items()}
    n_members = int(sum(a.is_member.sum() for a in audits))
    estimates = [
        CandidateEstimate(
            name=name,
            tpr={str(lv): float(pooled[name][lv].mean()) for lv in levels},
            tpr_ci={str(lv): clopper_pearson(int(pooled[name][lv].sum()), n_members) for lv in levels},
            per_pseudo_target=[float(f.mean()) for f in flags[name][level]],
            run=run,
            why=why,
        )
        for name, run, why in decide({n: p[level] for n, p in pooled.items()}, level, barred)
    ]
    return PseudoTargetEstimates(
        level=level,
        pseudo_targets=len(audits),
        references_per_run=m,
        members=n_members,
        nonmembers=int((~audits[0].is_member).sum()),
        candidates=tuple(estimates),
    )


def first_that_runs(candidates: list[PlannedAttack], order: tuple[str, ...], inputs: AttackInputs) -> str:
    """Without pseudo-targets: the first candidate in the leave-one-data-set-out ``order`` that runs on these
    inputs (the pair attacks need the population's reference membership, which a plan cannot see)."""
    by_name = {a.name: a for a in candidates}
    barred = guarded(candidates, inputs)
    for name in [n for n in order if n in by_name] + [a.name for a in candidates if a.name not in order]:
        attack = by_name[name]
        if name in barred and len(barred) < len(by_name):
            continue
        try:
            registry.execute(attack.info, attack.params, attack.references, inputs.first(attack.references))
        except AttackRequirementError:
            continue
        return name
    return candidates[0].name
