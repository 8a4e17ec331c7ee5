"""attacks: auto's choice on pseudo-targets: what they are, the tie rule by hand, and that the target's
membership never enters."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from miaudit import attack_plan
from miaudit.attacks import recommended
from miaudit.config import run as config
from miaudit.membership import choice
from tests.attacks.test_pair import SHIFT, logits_of, synthetic


def _candidates(k: int) -> list[attack_plan.PlannedAttack]:
    p = attack_plan.build(config.from_dict({"references": k}))
    return [a for a in p.attacks if a.name in p.candidates]


def test_auto_plans_the_candidates_with_two_references_or_more() -> None:
    p = attack_plan.build(config.from_dict({"references": 4}))
    assert p.candidates == recommended.CANDIDATES
    assert [a.label for a in p.attacks] == ["attack-p", "gls", *(f"{n} (n=4)" for n in recommended.CANDIDATES)]
    one = attack_plan.build(config.from_dict({"references": 1}))
    assert one.candidates == () and [a.name for a in one.attacks] == ["attack-p", "gls", recommended.RULE[1][0]]


def test_pseudo_audits_hold_members_of_the_pseudo_target_alone() -> None:
    inputs, _ = synthetic(np.random.default_rng(0), k=4, n_query=50, n_pop=400, n_val=30)
    ref_in = inputs.population.ref_in
    audits = choice.pseudo_audits(inputs, 4)
    assert len(audits) == 4
    for k, audit in enumerate(audits):
        refs = [j for j in range(4) if j != k]
        assert (audit.target, audit.references) == (k, tuple(refs))
        members = ref_in[k] & ~ref_in[refs].any(axis=0)
        q = audit.inputs.queries
        assert audit.is_member.sum() == members.sum() and (~audit.is_member).sum() == 50 + 30
        # the pseudo-target's scores: reference k's logits; its references the other three
        np.testing.assert_array_equal(q.target_logits[audit.is_member], inputs.population.ref_logits[k][members])
        np.testing.assert_array_equal(q.ref_logits[:, :50], inputs.queries.ref_logits[refs])
        # its population: the records reference k did not train on, with the other references' membership
        pop = audit.inputs.population
        np.testing.assert_array_equal(pop.target_logits, inputs.population.ref_logits[k][~ref_in[k]])
        np.testing.assert_array_equal(pop.ref_in, ref_in[refs][:, ~ref_in[k]])


def test_pseudo_targets_cap_their_references_so_members_remain() -> None:
    inputs, _ = synthetic(np.random.default_rng(1), k=8, n_query=20, n_pop=800, n_val=10)
    audits = choice.pseudo_audits(inputs, 8)
    assert len(audits) == choice.PSEUDO_TARGETS
    assert all(a.inputs.n_references == choice.REFERENCES_PER_RUN for a in audits)
    assert all(a.is_member.sum() > 800 / 2 ** (choice.REFERENCES_PER_RUN + 1) / 2 for a in audits)


def test_every_subset_gives_one_pseudo_audit_per_subset_of_the_other_references() -> None:
    inputs, _ = synthetic(np.random.default_rng(3), k=4, n_query=20, n_pop=400, n_val=10)
    ref_in = inputs.population.ref_in
    audits = choice.pseudo_audits(inputs, 4, per_run=2, every_subset=True)
    assert [(a.target, a.references) for a in audits] == [
        (k, pair) for k in range(4) for pair in [(a, b) for a in range(4) for b in range(a + 1, 4) if k not in (a, b)]
    ]
    for audit in audits:  # members: the pseudo-target's alone among the three models of that pseudo-audit
        members = ref_in[audit.target] & ~ref_in[list(audit.references)].any(axis=0)
        assert audit.is_member.sum() == members.sum()


def test_no_pseudo_targets_online_with_one_reference_or_without_reference_membership() -> None:
    inputs, _ = synthetic(np.random.default_rng(2), k=2, n_query=20, n_pop=100, n_val=10)
    assert choice.pseudo_audits(inputs, 1) == []
    assert choice.pseudo_audits(replace(inputs, mode="online"), 2) == []
    blind = replace(inputs, population=replace(inputs.population, ref_in=None))
    assert choice.pseudo_audits(blind, 2) == []
    assert choice.choose(_candidates(2), blind, 2, (0.01,), 0.01) is None


def test_tie_rule_by_hand() -> None:
    """Best flags 10 of 40; b flags 8, disagreeing with it on 4 members (sd 2): tied; c flags 5 (sd 2.2):
    out; d ties but three already run."""
    best = np.r_[np.ones(10), np.zeros(30)].astype(bool)
    b = best.copy()
    b[[0, 1, 2]] = False
    b[20] = True  # 8 flagged, 4 disagreements
    c = np.r_[np.ones(5), np.zeros(35)].astype(bool)
    d = best.copy()
    d[0] = False  # 9 flagged, one disagreement
    e = best.copy()
    e[1] = False
    got = {name: (run, why) for name, run, why in choice.decide({"c": c, "b": b, "best": best, "d": d, "e": e}, 0.01)}
    assert got["best"][0] and got["d"][0] and got["e"][0] and not got["b"][0] and not got["c"][0]
    assert "already run" in got["b"][1] and "beyond one paired sd" in got["c"][1]


def test_choice_reads_no_target_membership() -> None:
    """The target trained on other records (its membership permuted, its outputs on the queries redrawn
    accordingly): the estimates and the choice stay what they were."""
    rng = np.random.default_rng(3)
    inputs, is_member = synthetic(rng, k=4, n_query=400, n_pop=1600, n_val=200)
    cands = _candidates(4)
    first = choice.choose(cands, inputs, 4, (0.01, 0.05), 0.01)
    permuted = rng.permutation(is_member)
    s = inputs.queries.target_logits[:, 1] - np.where(is_member, SHIFT, 0.0) + np.where(permuted, SHIFT, 0.0)
    other = replace(inputs, queries=replace(inputs.queries, target_logits=logits_of(s)))
    second = choice.choose(cands, other, 4, (0.01, 0.05), 0.01)
    assert first is not None and second is not None
    assert first.to_json() == second.to_json()
    assert 1 <= len(first.chosen) <= choice.MAX_RUN < len(cands)
    assert all(c.tpr_ci["0.01"][0] <= c.tpr["0.01"] <= c.tpr_ci["0.01"][1] for c in first.candidates)


def test_without_pseudo_targets_the_first_of_the_rule_that_runs() -> None:
    """No reference membership: the pair attacks cannot run, so the rule's first attack that can does."""
    inputs, _ = synthetic(np.random.default_rng(4), k=2, n_query=40, n_pop=200, n_val=20)
    blind = replace(inputs, population=replace(inputs.population, ref_in=None))
    order = ("pair-logit", "pair-lr", "rmia", "lira")
    assert choice.first_that_runs(_candidates(2), order, blind) == "rmia"
    assert choice.first_that_runs(_candidates(2), order, inputs) == "pair-logit"


def test_a_candidate_its_own_guard_flags_is_never_chosen() -> None:
    """Issue 49, item 2: the target unlike its references (its scores shifted 3 sd): the pair attacks' guard flags
    it, so auto leaves them out saying why, and runs what does not rest on exchangeability."""
    from tests.attacks.test_pair import _shifted_target

    inputs, _ = synthetic(np.random.default_rng(5), k=4, n_query=400, n_pop=1600, n_val=200)
    cands = _candidates(4)
    guarded = [a.name for a in cands if a.info.guard is not None]
    assert set(guarded) == {"pair-lr", "pair-logit"} and choice.guarded(cands, inputs) == {}
    shifted = _shifted_target(inputs, 3.0)
    assert set(choice.guarded(cands, shifted)) == set(guarded)
    found = choice.choose(cands, shifted, 4, (0.01,), 0.01)
    assert found is not None and found.chosen and not set(found.chosen) & set(guarded)
    for c in found.candidates:
        if c.name in guarded:
            assert not c.run and c.why.startswith("left out because the target is not exchangeable")
    order = ("pair-logit", "pair-lr", "rmia", "lira")
    assert choice.first_that_runs(cands, order, shifted) == "rmia"


def test_decide_bars_guarded_candidates_by_hand() -> None:
    strong, weak = np.r_[np.ones(10), np.zeros(30)].astype(bool), np.r_[np.ones(4), np.zeros(36)].astype(bool)
    got = {n: (run, why) for n, run, why in choice.decide({"a": strong, "b": weak}, 0.01, {"a": "its guard"})}
    assert got == {"a": (False, "left out because its guard"), "b": (True, got["b"][1])}
    assert "highest pseudo-target TPR" in got["b"][1]
    every = {n: run for n, run, _ in choice.decide({"a": strong, "b": weak}, 0.01, {"a": "x", "b": "y"})}
    assert every == {"a": True, "b": False}  # every candidate barred: the strongest still runs
