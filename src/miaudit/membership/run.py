"""The membership audit's run: every planned attack on a prepared Experiment (``experiment/run.py``'s
``run_attack``), ``attacks: auto``'s candidates first narrowed on the references as pseudo-targets (``choice.py``),
and the figures a run of texts adds (the canaries' exposure, the blind baseline)."""

from __future__ import annotations

from ..attack_plan import PlannedAttack
from ..attacks import AttackInputs, recommended
from ..experiment.base import Experiment
from ..experiment.run import AttackRun, PseudoTargetEstimates, RunResult, fpr_levels, run_attack
from ..progress import log, working
from ..results import BlindBaseline, CanaryExposure
from . import choice


def run_experiment(exp: Experiment) -> RunResult:
    """Every planned attack on a prepared experiment."""
    inputs = exp.attack_inputs()
    attacks, chosen = chosen_attacks(exp, inputs)
    runs = []
    for attack in attacks:
        with working(f"attack {attack.label}"):
            runs.append(run_attack(exp, attack, inputs))
        log.info("attack %s: %.2f s", attack.label, runs[-1].seconds["attack"])
    return RunResult(exp, runs, None, blind_baseline(exp, runs), canary_exposure(exp), chosen)  # dp_audit: audits.py's


def chosen_attacks(exp: Experiment, inputs: AttackInputs) -> tuple[list[PlannedAttack], PseudoTargetEstimates | None]:
    """The planned attacks to run: ``attacks: auto``'s candidates narrowed on the references as pseudo-targets
    (``choice.py``), or by the leave-one-data-set-out rule where the audit has no pseudo-targets."""
    plan = exp.plan
    if not plan.candidates:
        return list(plan.attacks), None
    candidates = [a for a in plan.attacks if a.name in plan.candidates]
    with working("attacks: auto, candidates on pseudo-targets"):
        found = choice.choose(candidates, inputs, plan.references, fpr_levels(exp.cfg), choice.LEVEL)
    keep = (
        set(found.chosen) if found else {choice.first_that_runs(candidates, recommended.rule(plan.references), inputs)}
    )
    if found:
        log.info("attacks: auto runs %s of %s", ", ".join(found.chosen), ", ".join(plan.candidates))
    return [a for a in plan.attacks if a.name not in plan.candidates or a.name in keep], found


def canary_exposure(exp: Experiment) -> CanaryExposure | None:
    """results.json's ``canary_exposure``: the target's exposure of the canaries it trained on."""
    spec = getattr(exp.cfg, "canary_exposure", None)
    if spec is None:
        return None
    from ..lm import canaries
    from ..lm.model import CausalLM

    if not isinstance(exp.target.module, CausalLM):
        return None

    with working("canary exposure"):
        found = canaries.measure(exp.target.module, spec, exp.dataset.x.shape[2], exp.device)
    means = ", ".join(f"{r}x {e:.2f}" for r, e in found.mean_exposure_by_repetitions.items())
    log.info(
        "canary exposure (%s, bits of at most %.2f) by repetitions: %s", found.estimator, found.max_exposure, means
    )
    return found


def blind_baseline(exp: Experiment, runs: list[AttackRun]) -> BlindBaseline | None:
    """results.json's ``blind_baseline`` for an audit of texts with known membership (``miaudit.lm.blind``)."""
    texts = getattr(exp.dataset, "texts", None)
    if not texts or exp.is_member is None:
        return None
    from ..lm import blind

    aucs = [r.metrics.auc for r in runs if r.metrics is not None]
    return blind.for_audit(texts, exp.query_idx, exp.is_member, aucs, fpr_levels(exp.cfg), exp.cfg.seed)
