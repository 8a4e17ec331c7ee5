"""A user's own DP training, audited (``dp_training:``, ``miaudit.dp_audit(train_fn, ...)``): not miaudit's DP-SGD.

The function is called as ``function(model, x, y)`` (the signature of ``target.train_fn``) and trains ``model`` in
place with the user's DP training. The one-run audit (``one_run.run``) is unchanged but for who trains: the target is
a fresh model of ``model:`` trained by the function on the target's training records with the canaries inserted by
their coins (``one_run._canary_records``: the training records, every one of them, and the included canaries; no
record is removed), and the reference models are trained by the same function on population records, which never
hold a canary (``dp_training.references: function``, the default: the auditor knows the training algorithm, as
Steinke, Nasr & Jagielski's one-run audit assumes), or by miaudit's loop (``references: recipe``). User code is never
cached: miaudit cannot hash it.

What the audit sees statistically is the final model's outputs (black-box): every fault that moves them (clipping
that never runs, noise on the wrong scale, a non-private pass, more steps than accounted) can be caught, at the
one-run audit's power. Beside it, every call of the function is watched (``structural``): the model before and after,
each optimizer step, and the Opacus optimizer the function joins with ``miaudit.dp_observe``; the defects that shows
directly (``dp_audit.training.defects``) make the claim violated at any epsilon. The claim tested is the smallest of
the claimed epsilon and, when the accountant's facts are given (``dp_training.accountant``, or a mapping the
function returns), Opacus' accountants' figures for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..config.dp_training import AccountantFacts, DPTrainingConfig, signature_checked
from ..config.run import RunConfig
from ..data import Dataset
from ..errors import ConfigError, MiauditError, ModelError
from ..experiment import datasets
from ..experiment.recipes import ModelRecipe, reference_recipe
from ..experiment.run import RunResult
from ..models import library
from ..results.dp import Defect, DPAudit, UserTraining
from ..training.dp_sgd import NoisyStep
from . import one_run, structural
from .answer import answered
from .whitebox import GradientCanaries

if TYPE_CHECKING:
    import torch.nn as nn

    from ..training.loop import ProgressFn, TrainReport

TrainFn = Callable[..., object]
ModelFactory = Callable[[tuple[int, ...], int], "nn.Module"]

OBSERVED = (
    "black-box: the final model's outputs on the canaries (crafted, random-label or natural), scored by every planned "
    "attack; any fault that moves them (clipping that never runs, noise on the wrong scale, a non-private pass, "
    "more steps than accounted) can be caught, at the one-run audit's power"
)
STRUCTURAL = (
    "directly, at any claimed epsilon: the model before and after each call (parameters and normalisation "
    "statistics that changed), the class sums of the last layer's gradient at every optimizer step (noise present "
    "and fresh), and, with miaudit.dp_observe(optimizer), the DP optimizer's parameters, noisy steps and batches"
)
NOT_OBSERVED = (
    "the noisy updates as a statistical observer (no gradient canaries scored), so a fault the final model hides "
    "(noise a little too small at a small epsilon) is beyond this audit's reach; the intermediate models; the "
    "accountant's arithmetic (only its figure, when its facts are given)"
)
WHITE_BOX_BLIND = (
    "clipping (the gradient canaries join each step after it) and anything outside the optimizer's noisy steps "
    "(a non-private pass): the black-box observers cover those, at their power"
)
NEVER_JOINED = "; canaries.gradient was given, but your function never called miaudit.dp_observe(optimizer)"
NEVER_STEPPED = (
    "; canaries.gradient was given and your function called miaudit.dp_observe(optimizer), but that optimizer "
    "never took a noisy step (the model was stepped by another), so no gradient canary was scored"
)
FACT_KEYS = ("noise_multiplier", "sample_rate", "steps")


class FunctionClaim(TypedDict, total=False):
    """``miaudit.dp_audit(train_fn, **claim)``: the claim (``epsilon``, ``delta``: required), the data set (a built-in
    name, a .npz/.csv path or ``dataset:``'s mapping; default digits), the model the function trains (a name,
    ``package.module:factory`` or a callable ``factory(input_shape, n_classes)``; default mlp), the canaries (a count
    of crafted ones, or ``canaries:``'s mapping; default 300 crafted, 30 guesses each way), the references (trained
    by the function; default 2), what its accountant was told (noise_multiplier, sample_rate, steps) and the seed."""

    epsilon: float
    delta: float
    data: str | dict
    model: str | ModelFactory
    canaries: int | dict
    references: int
    accountant: dict
    seed: int


@dataclass
class Training:
    """The audited function, its name as results.json records it, the claim, and what it did when called."""

    fn: TrainFn
    name: str
    spec: DPTrainingConfig
    model: ModelFactory | None = None  # builds a fresh model (default: the config's model:)
    calls: int = 0
    returned: list[AccountantFacts] = field(default_factory=list)  # facts the calls returned, in call order
    n_classes: int = 0
    target: structural.Trace | None = None  # the target's call, watched
    references: list[structural.Trace] = field(default_factory=list)  # the references' calls, watched

    def facts(self) -> AccountantFacts | None:
        """The accountant's facts: the config's, else what the first call (the target's) returned."""
        return self.spec.accountant or (self.returned[0] if self.returned else None)


def name_of(fn: TrainFn) -> str:
    """``module:qualname`` of a Python callable, as the config would name it."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"


def resolve(cfg: RunConfig, fn: TrainFn | None = None, model: ModelFactory | None = None) -> Training:
    """The function ``cfg.dp_training`` names (imported: the config checked it), or ``fn`` given in Python."""
    spec = cfg.dp_training
    if spec is None:
        raise ConfigError("dp_training: give {function: package.module:function, epsilon: E, delta: D}")
    if fn is None:
        from ..models import io

        fn = io.import_factory(spec.function)
    signature_checked(fn, spec.function)
    if not callable(fn):
        raise ConfigError(f"dp_training.function: {spec.function!r} is not callable")
    return Training(fn=fn, name=spec.function, spec=spec, model=model)


def returned_facts(out: object, name: str) -> AccountantFacts | None:
    """Accountant facts from what the function returned: a mapping holding noise_multiplier, sample_rate and steps
    (anything else returned, the model itself included, says nothing)."""
    if not isinstance(out, Mapping) or not all(k in out for k in FACT_KEYS):
        return None
    try:
        return AccountantFacts.model_validate({k: out[k] for k in FACT_KEYS})
    except ValueError as e:
        raise ModelError(f"dp_training.function: {name} returned accountant facts that do not hold ({e})") from None


def fit(
    training: Training, whitebox: GradientCanaries | None = None, target: bool = False
) -> Callable[[nn.Module, np.ndarray, np.ndarray, int, ProgressFn], TrainReport]:
    """The function as a recipe's fit: called on the model and the records, counted, timed and watched
    (``structural``: the target's call in ``training.target``, the references' in ``training.references``), its
    training accuracy measured. The model must be trained in place: a returned module other than it (or a wrapper of
    it, as Opacus' GradSampleModule) is refused. ``whitebox``: the target's gradient canaries, which ``dp_observe``
    joins to the function's optimizer while it runs, scored at the rate of the batches it drew. An exception the
    function raises is one line naming it."""
    from ..training.loop import TrainReport, accuracy, predict_logits

    def run(model: nn.Module, x: np.ndarray, y: np.ndarray, seed: int, progress: ProgressFn) -> TrainReport:
        import torch.nn as nn

        start = time.perf_counter()
        training.calls += 1
        if whitebox is not None:
            _ACTIVE.append((whitebox, len(y)))
        try:
            with structural.watch(model, training.n_classes, len(y)) as trace:
                out = training.fn(model, x, y)  # torch's RNG was seeded with ``seed`` just before the model was built
        except (MemoryError, MiauditError):  # miaudit's own one-line errors (dp_observe's) pass as they are
            raise
        except Exception as e:  # the user's code: one line naming it, no traceback of miaudit's frames
            raise ModelError(
                f"dp_training.function: {training.name} raised {type(e).__name__}: {' '.join(str(e).split())[:200]}"
            ) from None
        finally:
            if whitebox is not None:
                _ACTIVE.pop()
        seconds = time.perf_counter() - start
        if target:
            training.target = trace
            rate = structural.observed_rate(trace.observed, len(y))
            if whitebox is not None and rate is not None:
                whitebox.rescore(rate)
        else:
            training.references.append(trace)
        if isinstance(out, nn.Module) and out is not model and getattr(out, "_module", None) is not model:
            raise ModelError(
                f"dp_training.function: {training.name} returned another model; train the model it is given in place"
            )
        facts = returned_facts(out, training.name)
        if facts is not None:
            training.returned.append(facts)
        facts = training.spec.accountant or facts
        return TrainReport(seconds, accuracy(predict_logits(model, x), y), privacy(training, facts))

    return run


_ACTIVE: list[tuple[GradientCanaries, int]] = []  # the target's gradient canaries and records, while it trains


def dp_observe(optimizer: object, sample_rate: float | None = None) -> bool:
    """The one-line hook (``miaudit.dp_observe(optimizer)``): a training function adds it after building its Opacus
    ``DPOptimizer`` (``PrivacyEngine.make_private``). While ``miaudit dp-audit`` runs the function, it records the
    optimizer's parameters, noise multiplier, noisy steps and the batches they drew (``structural``: the defects
    that shows directly), and while it trains the target with ``canaries.gradient: N`` it joins N gradient canaries
    to every noisy step and scores them from the noisy updates (``whitebox``, at the optimizer's noise multiplier and
    clipping norm and the rate of the batches drawn: ``sample_rate`` is accepted for compatibility and ignored, so a
    wrong one cannot hide a sampling bug); the user's own step hook (Opacus' accountant) still runs first. Outside
    an audit it does nothing. Returns whether it observes."""
    del sample_rate
    trace = structural.current()
    if trace is None:
        return False
    needed = ("noise_multiplier", "max_grad_norm", "expected_batch_size", "params", "attach_step_hook")
    missing = [a for a in needed if not hasattr(optimizer, a)]
    if missing:
        raise ModelError(
            f"dp_observe: {type(optimizer).__name__} is not an Opacus DPOptimizer (no {missing[0]}); pass the "
            "optimizer PrivacyEngine.make_private returned"
        )
    opt: Any = optimizer
    seen = structural.Observed(opt, {id(p) for p in opt.params}, float(opt.noise_multiplier))
    trace.observed = seen
    steps = [seen.noisy_step]
    if _ACTIVE:
        canaries, n = _ACTIVE[-1]
        batch = float(opt.expected_batch_size)  # Opacus sets it from the loader: the rate records are drawn at
        noisy = NoisyStep(batch / n, float(opt.noise_multiplier), float(opt.max_grad_norm), batch, canaries.seed)
        steps.insert(0, canaries.hook(list(opt.params), noisy))
    previous = getattr(opt, "step_hook", None)

    def chained(o: object) -> None:
        if previous is not None:
            previous(o)  # the user's hook (Opacus' accountant) first: it reads the step as it was
        for step in steps:
            step(o)

    opt.attach_step_hook(chained)
    return True


def recipes(
    cfg: RunConfig, ds: Dataset, training: Training, whitebox: GradientCanaries | None = None
) -> tuple[ModelRecipe, ModelRecipe]:
    """The target's recipe (the function; ``whitebox``: with the gradient canaries ``dp_observe`` joins to its
    steps) and the references' (the function, never observed, or miaudit's loop): never cached."""
    from ..models import build_model

    arch, shape, k = cfg.model, ds.input_shape, ds.n_classes

    def build() -> nn.Module:
        model = training.model(shape, k) if training.model else build_model(arch, shape, k)
        return library.with_features(model, shape, k)

    name = arch if training.model is None else name_of(training.model)
    training.n_classes = ds.n_classes
    target = ModelRecipe(
        architecture=name, build=build, fit=fit(training, whitebox, target=True), epochs=None, cache_spec=None
    )
    own = ModelRecipe(architecture=name, build=build, fit=fit(training), epochs=None, cache_spec=None)
    refs = own if training.spec.references == "function" else reference_recipe(cfg, ds)
    return target, refs


def privacy(training: Training, facts: AccountantFacts | None) -> dict[str, object] | None:
    """A model's ``privacy`` record (results.json ``target.dp``) when the accountant's facts are known: the claim and
    the facts, to which ``one_run.run`` adds the accountants' figures (``dp_sgd.with_accountants``), so the verdict
    tests the smallest of them and the claim."""
    if facts is None:
        return None
    return {"trained_by": training.name, "epsilon": training.spec.epsilon, "delta": training.spec.delta,
            **facts.model_dump()}  # fmt: skip


def section(
    training: Training,
    target_records: int,
    inserted: int,
    accounted: Mapping[str, float] | None,
    whitebox: GradientCanaries | None,
) -> UserTraining:
    """results.json's ``dp_audit.training``: with what the audit could and could not see, white-box included where
    the function joined its optimizer (``dp_observe``)."""
    facts = training.facts()
    steps = None if whitebox is None else whitebox.steps
    observed, not_observed = f"{OBSERVED}; {STRUCTURAL}", NOT_OBSERVED
    trace = training.target
    seen = None if trace is None else trace.observed
    if steps:
        assert whitebox is not None
        observed += (
            f"; white-box: {whitebox.count} gradient canaries in each of {steps} noisy steps of your DPOptimizer "
            "(miaudit.dp_observe), scored at its noise multiplier and the sampling rate of the batches it drew"
        )
        not_observed = WHITE_BOX_BLIND
    elif steps == 0:
        not_observed += NEVER_JOINED if seen is None else NEVER_STEPPED
    found: list[Defect] = []
    if trace is not None:
        found, unchecked = structural.defects(trace, training.references, facts, training.name)
        if unchecked:
            not_observed += "; not checked directly: " + ", ".join(unchecked)
    return UserTraining(
        function=training.name,
        claimed_epsilon=training.spec.epsilon,
        claimed_delta=training.spec.delta,
        calls=training.calls,
        target_records=target_records,
        canaries_inserted=inserted,
        references_by=(
            f"your function {training.name}, on population records (never a canary)"
            if training.spec.references == "function"
            else "miaudit's loop with train (no DP)"
        ),
        accountant=None
        if facts is None
        else {**facts.model_dump(), **{f"epsilon_{k}": v for k, v in (accounted or {}).items()}},
        white_box_steps=steps,
        observed=observed,
        not_observed=not_observed,
        defects=found,
        observed_sample_rate=None if trace is None else structural.observed_rate(seen, trace.records),
    )


def with_defects(audit: DPAudit) -> DPAudit:
    """The audit with its verdict on the structural defects the training run shows: any defect violates the claim,
    at any epsilon, and the sentence names each with what to fix; the statistical verdict follows."""
    t = audit.training
    if t is None or not t.defects:
        return audit
    said = "; ".join(f"{d.kind.replace('_', ' ')} ({d.kind}): {d.detail}" for d in t.defects)
    verdict = (
        f"violation: your training run shows {len(t.defects)} defect(s) directly, whatever the claimed epsilon "
        f"(no statistics): {said}. The canaries' test: {audit.verdict}"
    )
    # a results record, not a config: these two fields carry no validator and no cross-field rule
    return answered(audit.model_copy(update={"violated": True, "verdict": verdict}))


def run(cfg: RunConfig, fn: TrainFn | None = None, model: ModelFactory | None = None) -> RunResult:
    """The one-run audit of a user's DP training function (``dp_training``, or ``fn`` from Python): the target and
    the references trained by it, every planned attack on the canaries, the verdict on its claim."""
    training = resolve(cfg, fn, model)
    one_run.check(cfg)
    cfg = cfg.revised(calibration=None)
    ds = datasets.load(cfg)  # its shape and classes build the models (the canaries change neither)
    observed: list[GradientCanaries | None] = []

    def made(whitebox: GradientCanaries | None) -> tuple[ModelRecipe, ModelRecipe]:
        observed.append(whitebox)
        return recipes(cfg, ds, training, whitebox)

    res = one_run.run(cfg, made)
    exp = res.experiment
    assert exp.records.is_member is not None and res.dp_audit is not None
    target_idx = exp.records.split.members
    inserted = int(exp.records.is_member.sum())
    accounted = (exp.target.privacy or {}).get("accounted")
    whitebox = observed[0] if observed else None
    # a results record: `training` is built by `section` as its typed model, so no validation is skipped
    res.dp_audit = with_defects(
        res.dp_audit.model_copy(update={"training": section(training, len(target_idx), inserted, accounted, whitebox)})
    )
    return res


def function_config(
    fn: TrainFn,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    data: str | dict | None = None,
    model: str | ModelFactory | None = None,
    canaries: int | dict | None = None,
    references: int = 2,
    accountant: dict | None = None,
    seed: int = 0,
) -> tuple[RunConfig, ModelFactory | None]:
    """``miaudit.dp_audit(train_fn, **claim)``'s config (``dp_training`` naming the function, which the caller holds)
    and the model factory when a callable is given (``FunctionClaim``)."""
    from ..config.run import from_dict

    if epsilon is None or delta is None:
        raise ConfigError(f"{'epsilon' if epsilon is None else 'delta'}: the claim of your training is required")
    spec = {"function": name_of(fn), "epsilon": epsilon, "delta": delta}
    raw = {
        "dataset": "digits" if data is None else data,
        "model": model if isinstance(model, str) else "mlp",
        "seed": seed,
        "references": references,
        "canaries": (
            {"count": canaries, "kind": "crafted"}
            if isinstance(canaries, int)
            else canaries or {"count": 300, "kind": "crafted", "guesses": 30}
        ),
        "dp_training": {**spec, **({"accountant": accountant} if accountant is not None else {})},
    }
    cfg = from_dict(raw, context={"function_given": True})
    return cfg, None if model is None or isinstance(model, str) else model
