"""The verdict of a one-run DP audit over EVERY observer it ran, with the family-wise error controlled.

Each observer (the white-box gradient canaries, each black-box attack on the input-space canaries) gives a count:
v of r guesses right on m canaries. Under "M is (eps, delta)-DP" at the claimed epsilon, the binomial test of
Steinke, Nasr & Jagielski (``bounds.one_run_pvalue``) gives each observer an exact p-value. The verdict is Holm's
step-down procedure over those K p-values at level alpha = 1 - confidence: the claim is violated when Holm rejects
for at least one observer. Holm rejects something exactly when the smallest p-value is at most alpha / K, i.e. when
some observer's Bonferroni-corrected bound (its binomial bound at confidence 1 - alpha / K) exceeds the claim; the
headline ``epsilon_lb`` is the largest of those corrected bounds, a lower bound valid for all observers together.
Whatever observer catches a fault, the probability that a correct mechanism is flagged stays at most alpha.

Only assumption-free bounds decide an (eps, delta) violation. The f-DP bound (Mahloujifar et al.) assumes a Gaussian
tradeoff curve: it is reported with that assumption, tests the stronger claim "M is mu(eps, delta)-GDP" (Bonferroni
over the observers), and never counts as an (eps, delta) violation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..results import Bound, Family, GDPTest, Headline, Observer, ObserverTest
from ..stats.multiple_testing import holm
from . import bounds

FDP_ASSUMES = (
    "assumes a Gaussian tradeoff curve (mu-GDP): it tests the stronger claim that the mechanism is "
    "mu(eps, delta)-GDP, not (eps, delta)-DP, and never counts as an (eps, delta) violation"
)
HOLM = "Holm over the observers' exact binomial p-values at the claimed epsilon (family-wise error at most alpha)"


OBSERVERS = {
    "white-box": Observer(
        sees="every noisy update: the noise drawn at each step, the number of noisy steps, and whether they match "
        "what the accountant is told (noise multiplier, sampling rate)",
        blind_to="clipping (its canaries are gradients added after clipping), how the data's records are sampled "
        "or mixed into per-sample gradients (batch norm, micro-batching), and leaks outside the noisy updates "
        "(e.g. a non-private pass over the data)",
    ),
    "black-box": Observer(
        sees="the final model's outputs on the canaries: any fault that changes them (clipping, sampling, noise, "
        "leaks outside the update)",
        blind_to="the intermediate models: it sees one final model, so its power is low (on correct DP-SGD its "
        "bounds stay far below the accounted epsilon) and a fault must move the final model to be seen",
    ),
}


def observer_tests(entries: list[Bound], eps: float | None, confidence: float) -> list[ObserverTest]:
    """One test per observer (its binomial entry): the p-value of the claim, Holm-adjusted, and its
    Bonferroni-corrected bound and power. Without a claim, the bounds alone (p-values at eps = 0)."""
    tests = [_counted(e) for e in entries if e.analysis == "binomial"]
    k, alpha = len(tests), 1 - confidence
    p = np.array([bounds.one_run_pvalue(m, r, v, eps or 0.0, e.delta) for e, m, r, v in tests])
    adjusted = holm(p) if k else p
    corrected = 1 - alpha / max(k, 1)
    return [
        ObserverTest(
            observer=e.observer or "",
            threat_model=e.threat_model or "",
            p_value=float(p[i]),
            holm_adjusted_p_value=float(adjusted[i]),
            rejected=bool(adjusted[i] <= alpha),
            bonferroni_bound=bounds.one_run_epsilon_lb(m, r, v, corrected, e.delta),
            bonferroni_max_attainable=bounds.one_run_epsilon_lb(m, r, r, corrected, e.delta),
            correct=v,
            guesses=r,
            canaries=m,
        )
        for i, (e, m, r, v) in enumerate(tests)
    ]


def _counted(e: Bound) -> tuple[Bound, int, int, int]:
    """An entry with its counts: canaries m, guesses r, correct v (a one-run entry always has its canaries)."""
    assert e.canaries is not None, "a one-run bound names its canaries"
    return e, e.canaries, e.guesses, e.correct


def gdp_test(entries: list[Bound], eps: float | None, confidence: float) -> GDPTest | None:
    """The mu-GDP claim at the claimed epsilon, tested by every f-DP entry (Bonferroni): never an (eps, delta)
    verdict."""
    fdp = [_counted(e) for e in entries if e.analysis == "fdp"]
    if not fdp or eps is None:
        return None
    corrected = 1 - (1 - confidence) / len(fdp)
    found = {e.observer or "": bounds.fdp_epsilon_lb(m, r, v, corrected, e.delta) for e, m, r, v in fdp}
    rejecting = [name for name, lb in found.items() if lb > eps]
    delta = fdp[0][0].delta
    mu = bounds.gaussian_mu(eps, delta)
    claim = f"mu-GDP with mu {mu:.3f} (the Gaussian mechanism at epsilon {eps:.3f}, delta {delta:g})"
    said = f"rejected by {', '.join(rejecting)}" if rejecting else f"not rejected by any of {len(fdp)} observers"
    return GDPTest(
        claim=claim,
        rejected=bool(rejecting),
        bonferroni_bounds=found,
        assumes=FDP_ASSUMES,
        statement=f"f-DP test ({FDP_ASSUMES}): {claim} {said} (largest Bonferroni-corrected f-DP bound "
        f"{max(found.values()):.3f})",
    )


def planted_note(privacy: dict | None) -> str:
    """' (a fault planted on purpose: ...)' when the target was trained with a planted fault, else ''."""
    fault = (privacy or {}).get("planted_fault")
    if not fault:
        return ""
    return f" (fault planted on purpose, train.dp.planted_fault: {fault.get('description', fault)})"


@dataclass(frozen=True)
class Decision:
    """A one-run audit's verdict over every observer, as ``dp_audit`` records it (``audit.one_run_summary``)."""

    violated: bool
    verdict: str  # one sentence
    tests: list[ObserverTest]  # one per observer
    family: Family  # how the error is controlled
    epsilon_lb: float  # the largest Bonferroni-corrected bound
    max_attainable: float  # and its power
    headline: Headline  # whose bound that is
    gdp_test: GDPTest | None
    observers: dict[str, Observer]  # threat model -> what its observer sees


def decide(entries: list[Bound], claim: tuple[str, float] | None, confidence: float, privacy: dict | None) -> Decision:
    """The verdict of a one-run audit: ``violated``, ``verdict`` (one sentence), ``tests`` (per observer),
    ``epsilon_lb`` and ``max_attainable`` (the largest Bonferroni-corrected bound and power), ``headline`` (whose
    bound that is), ``family`` (how the error is controlled), ``gdp_test``."""
    eps = None if claim is None else claim[1]
    tests = observer_tests(entries, eps, confidence)
    k, alpha = len(tests), 1 - confidence
    best = max(tests, key=lambda t: (t.bonferroni_bound, -t.holm_adjusted_p_value))
    lb, power = best.bonferroni_bound, max(t.bonferroni_max_attainable for t in tests)
    who = ", ".join(f"{t.observer} ({t.threat_model})" for t in tests)
    power_txt = f"power: at most epsilon {power:.3f} could be shown"
    planted = planted_note(privacy)
    violated = False
    if claim is None:
        text = (
            f"no epsilon claimed{planted}: the target is not epsilon-DP for any epsilon below {lb:.3f} "
            f"(the largest of {k} observers' bounds, Bonferroni-corrected, confidence {confidence:g}; {power_txt})"
        )
    else:
        name, eps_c = claim
        rejecting = [t for t in tests if t.rejected]
        violated = bool(rejecting)
        if violated:
            first = min(rejecting, key=lambda t: t.holm_adjusted_p_value)
            also = (
                f"; also rejected by {', '.join(t.observer for t in rejecting if t is not first)}"
                if len(rejecting) > 1
                else ""
            )
            text = (
                f"violation{planted}: {first.observer} ({first.threat_model}, {first.correct}/"
                f"{first.guesses} guesses right) rejects the {name} epsilon {eps_c:.3f} (Holm-adjusted p "
                f"{first.holm_adjusted_p_value:.2g} <= {alpha:g} over {k} observers){also}; epsilon lower bound "
                f"{lb:.3f} (Bonferroni over {k} observers, confidence {confidence:g}; {power_txt})"
            )
        else:
            weak = " (too little power to detect any violation of this claim)" if power <= eps_c else ""
            smallest = min(t.holm_adjusted_p_value for t in tests)
            text = (
                f"no violation detected{planted}: none of {k} observers ({who}) rejects the {name} epsilon "
                f"{eps_c:.3f} at family-wise level {alpha:g} (smallest Holm-adjusted p {smallest:.2g}); largest "
                f"epsilon lower bound {lb:.3f} (Bonferroni, confidence {confidence:g}; {power_txt}){weak}"
            )
    return Decision(
        violated=violated,
        verdict=text,
        tests=tests,
        family=Family(method=HOLM, observers=k, alpha=alpha),
        epsilon_lb=lb,
        max_attainable=power,
        headline=Headline(
            observer=best.observer,
            threat_model=best.threat_model,
            analysis="binomial",
            correction=f"Bonferroni over {k} observers",
        ),  # fmt: skip
        gdp_test=gdp_test(entries, eps, confidence),
        observers={tm: OBSERVERS[tm] for tm in sorted({t.threat_model for t in tests})},
    )


def multi_run(entry: Bound, claim: tuple[str, float] | None, privacy: dict | None) -> tuple[bool, str]:
    """The verdict of a multi-run audit (violated, in one sentence): its headline bound (chosen before any score,
    so one test) against the claim; the other analyses are reported beside it and decide nothing."""
    lb, power, confidence = entry.epsilon_lower_bound, entry.max_attainable, entry.confidence
    runs = f"{entry.canaries} canaries in {entry.runs} trained models"
    said = f"{entry.analysis} bound {lb:.3f} from {runs} ({entry.correct}/{entry.guesses} guesses right)"
    power_txt = f"power: {runs} could show at most epsilon {power:.3f}"
    planted = planted_note(privacy)
    if claim is None:
        return False, f"no epsilon claimed{planted}: {said} at confidence {confidence:g} ({power_txt})"
    name, eps = claim
    if lb > eps:
        text = f"violation{planted}: the {said} exceeds the {name} epsilon {eps:.3f} at confidence {confidence:g} "
        return True, text + f"({power_txt})"
    weak = " (too little power to detect any violation of this claim)" if power <= eps else ""
    return False, f"no violation detected{planted}: {said} <= the {name} epsilon {eps:.3f}{weak} ({power_txt})"
