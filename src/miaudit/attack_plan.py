"""The Plan: every decision about an audit, made and checked once at the edge, before any work.

A config (or the Python API's arguments) says what to run; ``build`` turns it into an
immutable ``Plan``: each attack's validated parameters (defaults resolved), a unique
label, how many reference models it uses, how many reference models must be trained,
and which record sets the audit has. Every requirement (an attack's reference count,
mode, inputs) is checked here; the pipeline and the registry consume the Plan and
re-check nothing. Errors are one-line ``ConfigError``s naming the key
(``attacks.1.samples: ...``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .attacks import AttackParams, recommended, registry
from .config.files import one_line
from .config.run import RunConfig
from .config.settings import AuditSettings
from .errors import AttackRequirementError, ConfigError, did_you_mean
from .lm.names import is_causal_lm

# every pipeline audit holds the models and the records' inputs; the models' last layer (penultimate features and a
# linear head) but where the audited model is a causal LM, whose output layer is a vocabulary
ALWAYS_PROVIDED = frozenset({"models", "last-layer", "x", "labels"})
ENDPOINT_PROVIDED = frozenset({"x", "labels"})  # an endpoint: the records and labels on new inputs, no weights


@dataclass(frozen=True)
class PlannedAttack:
    """One attack row, resolved: what runs, under which name, on how many reference models."""

    name: str
    label: str
    params: AttackParams
    references: int  # uses reference models 0 .. references-1

    @property
    def info(self) -> registry.AttackInfo:
        return registry.get(self.name)


@dataclass(frozen=True)
class Plan:
    attacks: tuple[PlannedAttack, ...]
    references: int  # reference models to train: the most any attack uses
    mode: str
    roles: frozenset[str]  # record sets besides the queries: "population", "validation"
    head_dropout: float = 0.0  # references train with dropout before the head (an attack samples them by MC Dropout)
    auto: str | None = None  # attacks: auto: why these attacks (None: the config named them)
    candidates: tuple[str, ...] = ()  # attacks: auto rows the audit's own data decides on (membership/choice.py)

    @property
    def needs_last_layer(self) -> str | None:
        """The first attack that works on the models' last layer (BMIA, GLS), if any."""
        return next((a.name for a in self.attacks if a.info.needs_models), None)


def config_roles(cfg: RunConfig) -> frozenset[str]:
    """The record sets a config's split provides (a fraction above 0 gives a non-empty set)."""
    return audit_roles({role for role in ("population", "validation") if getattr(cfg.split, role) > 0}, cfg)


def audit_roles(given: Iterable[str], cfg: AuditSettings) -> frozenset[str]:
    """The record sets besides the queries an audit has: those ``given`` (population, validation), and
    validation records when calibration carves them out of the population (none given)."""
    roles = {"population", "validation"} & set(given)
    return frozenset(roles | ({"validation"} if "population" in roles and cfg.calibration else set()))


def build(cfg: AuditSettings, roles: Iterable[str] | None = None, causal_lm: bool | None = None) -> Plan:
    """The Plan of ``cfg``, for an audit whose record sets are ``roles``.

    Args:
        cfg: a run config, or a scores-only one whose ``references`` are resolved from its outputs.
        roles: the record sets besides the queries ("population", "validation"); default: what a run
            config's split gives (``config_roles``).
        causal_lm: the audited model is a causal LM (no last layer for GLS); default: what a run config's
            model or target names (the Python API says it for a model object).

    Returns:
        The immutable Plan: each attack's validated parameters, label and reference models.

    Raises:
        ConfigError: a bad attack row or parameter, named ``attacks.<i>...``.
        AttackRequirementError: an attack the audit cannot run (references, mode, record sets).
    """
    if roles is None:
        if not isinstance(cfg, RunConfig):
            raise TypeError("attack_plan.build: a scores-only audit's record sets come from its outputs: give roles")
        roles = config_roles(cfg)
    roles = frozenset(roles)
    available = cfg.references
    if available is None:
        raise TypeError("attack_plan.build: resolve a scores-only config's references from its outputs first")
    output, provided = target_output(cfg, causal_lm)
    auto: recommended.AutoRows | None = None
    if cfg.attacks == "auto":
        auto = _auto_for(output, available, cfg.mode, set(roles | provided))
        rows_asked = auto.rows
    else:
        rows_asked = cfg.attacks
    parsed = [_parse(i, raw) for i, raw in enumerate(rows_asked)]
    rows: list[tuple[str, AttackParams, int]] = []
    for i, (name, params) in enumerate(parsed):
        info = registry.get(name)
        k = info.references_used(params, available)
        if k > available:
            raise ConfigError(f"attacks.{i}.references: {k} exceeds the run's references: {available}")
        try:
            info.check(k, cfg.mode, set(roles | provided), output)
        except AttackRequirementError as e:
            raise AttackRequirementError(f"attacks.{i}: {e}") from None
        rows.append((name, params, k))
    labels = unique_labels(rows)
    attacks = tuple(PlannedAttack(n, label, p, k) for (n, p, k), label in zip(rows, labels))
    refs = max((a.references for a in attacks), default=0)
    why, candidates = (None, ()) if auto is None else (auto.why, auto.candidates)
    return Plan(attacks, refs, cfg.mode, roles, head_dropout(attacks), why, candidates)


def target_output(cfg: AuditSettings, causal_lm: bool | None = None) -> tuple[str, frozenset[str]]:
    """What the target answers (an endpoint's ``output``; logits otherwise) and the inputs the audit provides:
    no last layer for a causal LM (``causal_lm``; None: a run config's model or target says)."""
    target = getattr(cfg, "target", None)
    if target is not None and getattr(target, "endpoint", None) is not None:
        return target.output, ENDPOINT_PROVIDED
    if causal_lm is None:
        causal_lm = isinstance(cfg, RunConfig) and is_causal_lm(cfg.target_architecture)
    return "logits", ALWAYS_PROVIDED - {"last-layer"} if causal_lm else ALWAYS_PROVIDED


def _auto_for(output: str, available: int, mode: str, provided: set[str]) -> recommended.AutoRows:
    """``attacks: auto``: the recommended attacks that run on the target's output; where none does (an
    endpoint answering labels), every attack registered for that output."""
    try:
        auto = recommended.choose(available, mode, provided)
    except AttackRequirementError:
        auto = recommended.AutoRows([], "")
    fits = [r for r in auto.rows if output in registry.get(str(r["name"])).outputs]
    if fits:
        why = auto.why + (f"; those that run on output: {output}" if len(fits) < len(auto.rows) else "")
        chosen_among = tuple(c for c in auto.candidates if output in registry.get(c).outputs)
        return recommended.AutoRows(fits, why, chosen_among)
    own = []
    for info in registry.all_attacks():
        k = info.references_used(info.params(), available)
        try:
            info.check(k, mode, provided, output)
        except AttackRequirementError:
            continue
        own.append({"name": info.name} | ({"references": k} if k else {}))
    if not own:
        raise AttackRequirementError(f"attacks: auto found no attack that runs on output: {output}; name attacks")
    why = f"output: {output}: every attack registered for it ({', '.join(str(r['name']) for r in own)})"
    return recommended.AutoRows(own, why)


def head_dropout(attacks: Sequence[PlannedAttack]) -> float:
    """The dropout rate the reference models train with before their head: MC Dropout (posterior
    mc-dropout) samples a model trained with dropout (Gal & Ghahramani 2016), so the references it
    samples are trained that way; 0 when no attack asks. One rate per run: the references are shared."""
    rates = [
        (i, float(getattr(a.params, "dropout_rate", 0.0)))
        for i, a in enumerate(attacks)
        if getattr(a.params, "posterior", None) == "mc-dropout"
    ]
    other = next(((j, q) for j, q in rates if q != rates[0][1]), None)
    if other is not None:
        raise ConfigError(
            f"attacks.{other[0]}.dropout_rate: {other[1]} differs from attacks.{rates[0][0]}'s {rates[0][1]}; the "
            "references are trained once, with one head-dropout rate, for every mc-dropout row"
        )
    return max((r for _, r in rates), default=0.0)


def _parse(i: int, raw: Mapping[str, Any]) -> tuple[str, AttackParams]:
    name = str(raw["name"]).lower()
    if name not in registry.names():
        hint = did_you_mean(name, registry.names()) or f"; expected one of {registry.names()}"
        raise ConfigError(f"attacks.{i}.name: unknown attack {raw['name']!r}{hint}")
    params = registry.get(name).params
    try:
        return name, params(**{k: v for k, v in raw.items() if k != "name"})
    except ValidationError as e:
        raise ConfigError(f"attacks.{i}.{one_line(e, params, also=('name',))}") from None


def unique_labels(rows: Sequence[tuple[str, AttackParams, int]]) -> list[str]:
    """A name per row for reports: the user's ``label``, else ``name (n=K)``, extended by the
    parameters that tell apart rows that would otherwise share it. Two rows that cannot be
    told apart (the same attack and parameters, or one user label twice) are refused."""
    base = [p.label or (f"{n} (n={k})" if k else n) for n, p, k in rows]
    labels = list(base)
    for i, (_, params, _) in enumerate(rows):
        twins = [j for j, b in enumerate(base) if b == base[i] and j != i]
        if not twins or params.label:
            continue
        mine = params.model_dump(mode="json", exclude={"label", "references"})
        differ = {key for j in twins for key, v in rows[j][1].model_dump(mode="json").items() if mine.get(key) != v}
        extra = ", ".join(f"{key}={mine[key]}" for key in mine if key in differ)
        if extra:  # no parameter differs: a true twin, refused below
            labels[i] = f"{base[i][:-1]}, {extra})" if base[i].endswith(")") else f"{base[i]} ({extra})"
    for i, label in enumerate(labels):
        first = labels.index(label)
        if first != i:
            raise ConfigError(
                f"attacks.{i}: its label {label!r} is also attacks.{first}'s (same attack and parameters, or the "
                "same label:); remove one or give it its own label"
            )
    return labels


def fewest_references(attacks: Sequence[str | Mapping[str, Any]] | str, population: bool = True) -> int:
    """The fewest reference models every attack row can run with (the Python API's default); for ``auto``
    the default audit's number where there are population records to train them on, else none."""
    if attacks == "auto":
        return recommended.DEFAULT_REFERENCES if population else 0
    needed = 0
    for i, raw in enumerate(attacks):
        name, params = _parse(i, {"name": raw} if isinstance(raw, str) else raw)
        info = registry.get(name)
        needed = max(needed, params.references if params.references is not None else info.min_references)
    return needed
