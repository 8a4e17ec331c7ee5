"""membership.at_risk: the attack that names the records is fixed by a rule that reads no membership (auto's first
choice, else the risk ranking's preferred test), never the attack that flags most; and when none is flagged,
``why_none`` carries the number that decides it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from miaudit.membership import at_risk, findings
from miaudit.stats import screened


def run(name: str, references: int = 4) -> SimpleNamespace:
    attack = SimpleNamespace(name=name, label=f"{name} (n={references})", references=references)
    return SimpleNamespace(attack=attack)


def claim(r: SimpleNamespace, flagged: int, basis: at_risk.Basis = "screened") -> at_risk.Claim:
    q = np.r_[np.zeros(flagged), np.ones(10)]
    return at_risk.Claim(r, basis, np.log(np.full(q.size, 0.5)), "storey-bh", q, 0.05)


def test_the_headline_is_autos_first_choice_even_when_another_attack_flags_more() -> None:
    lira, pair = run("lira"), run("pair-lr")
    res = SimpleNamespace(attacks=[lira, pair], attack_choice=SimpleNamespace(chosen=["pair-lr", "lira"]))
    found = [claim(lira, 9), claim(pair, 2)]
    assert at_risk.chosen(res, found).run is pair
    assert "auto" in at_risk.attack_rule(res)


def test_without_an_auto_choice_the_risk_rankings_preferred_test_names_them() -> None:
    rmia, lira = run("rmia"), run("lira")
    res = SimpleNamespace(attacks=[rmia, lira], attack_choice=None)
    assert at_risk.chosen(res, [claim(rmia, 9), claim(lira, 0)]).run is lira
    # a calibrated (screened) claim is preferred to a raw one
    assert at_risk.chosen(res, [claim(rmia, 9), claim(lira, 0, "raw")]).run is rmia


def test_why_none_gives_the_records_needed_at_the_floor_and_those_there() -> None:
    scores = np.r_[np.full(3, 50.0), np.linspace(-0.99, 0.99, 97)]  # 3 queries above every calibration record
    cal = np.linspace(-1, 1, 99)
    out = screened.screened_conformal(scores, cal, np.ones(100, bool), np.ones(99, bool), 0.05)
    assert out.at_floor == 3 and not out.flagged.any()
    c = at_risk.Claim(run("lira"), "screened", out.log_p, "storey-bh", out.q, 0.05, out)
    why = findings.why_none(c, 100)
    assert f"at least {out.needed_at_floor} of them are; 3 are" in why and "1/100 = 0.01" in why
    assert out.needed_at_floor > 3


def test_the_summary_names_no_procedure_and_says_what_decides() -> None:
    """``summary``: one plain sentence, the number that decides it, no procedure named (the console's line)."""
    scores = np.r_[np.full(3, 50.0), np.linspace(-0.99, 0.99, 97)]
    cal = np.linspace(-1, 1, 99)
    out = screened.screened_conformal(scores, cal, np.ones(100, bool), np.ones(99, bool), 0.05)
    c = at_risk.Claim(run("lira"), "screened", out.log_p, "storey-bh", out.q, 0.05, out)
    said = findings.summary(c, 0)
    assert out.calibration_needed > 99
    assert said == (
        "none can be named at 5% FDR: 99 calibration records are too few to single one out "
        f"(about {findings._about(out.calibration_needed)} needed)."
    )
    assert findings._about(6439) == "6,400" and findings._about(35) == "35"
    raw = claim(run("rmia"), 0, "raw")
    assert findings.summary(raw, 0).startswith("none can be named at 5% FDR by rmia (n=4)")
    assert findings.summary(claim(run("lira"), 2), 2) == (
        "2 named at 5% FDR by lira (n=4) (at_risk.csv); at most 0.1 of them expected to be false."
    )
    for text in (said, findings.summary(raw, 0)):
        assert not any(w in text.lower() for w in ("storey", "benjamini", "conformal", "screen"))
