"""The configuration, described from its own models: every key with its type, default and description.

One walk over the config's JSON schema serves ``miaudit init`` (a commented YAML file of every key and
its default), ``miaudit config --schema`` (the schema, with every attack's parameters under ``$defs``),
``miaudit attacks NAME`` (an attack's parameters) and docs/configuration.md's key table, which a test compares with it.
The schema is ``RunConfig``'s, with the shorthands its keys take (``dataset: digits``), and the keys other commands
read beside it (``files.COMMAND_KEYS``: ``unlearning``, ``suspect``, ``validation``, ``inference``), each as its
command validates it: those packages sit above this one, so ``miaudit.config_keys`` hands them in.
``printed_schema`` is what ``miaudit schema NAME`` prints: this schema, or an output's (``miaudit.results``).
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .files import COMMAND_KEYS
from .run import RunConfig

REQUIRED = object()  # the default of a key that has none


@dataclass(frozen=True)
class Key:
    path: str  # dotted: train.epochs
    depth: int
    default: Any  # REQUIRED when the key must be given
    prop: dict  # its JSON schema
    section: bool  # a mapping of further keys


def _resolve(prop: dict, defs: dict) -> dict:
    return defs[prop["$ref"].rsplit("/", 1)[1]] if "$ref" in prop else prop


def _section(prop: dict, defs: dict) -> dict | None:
    """The schema of the mapping a key holds (also when it may be null), or None for a plain value."""
    for option in [prop, *prop.get("anyOf", [])]:
        resolved = _resolve(option, defs)
        if "properties" in resolved:
            return resolved
    return None


def keys(schema: dict | None = None) -> Iterator[Key]:
    """Every key of the config, depth-first, with the default it has in context."""
    schema = schema or RunConfig.model_json_schema()
    defs = schema.get("$defs", {})

    def walk(obj: dict, defaults: object, prefix: str, depth: int) -> Iterator[Key]:
        for name, prop in obj["properties"].items():
            if isinstance(defaults, dict) and name in defaults:
                default = defaults[name]
            else:
                default = prop.get("default", REQUIRED if name in obj.get("required", ()) else None)
            inner = _section(prop, defs)
            yield Key(prefix + name, depth, default, prop, inner is not None)
            if inner is not None:
                yield from walk(inner, default, f"{prefix}{name}.", depth + 1)

    yield from walk(schema, {}, "", 0)


def type_of(prop: dict, defs: dict) -> str:
    """A short type: int, float | null, kron | diag, list of mapping ..."""
    prop = _resolve(prop, defs)
    if "enum" in prop:
        return " | ".join(map(str, prop["enum"]))
    if "anyOf" in prop:
        return " | ".join(type_of(p, defs) for p in prop["anyOf"])
    kind = {"integer": "int", "number": "float", "boolean": "bool", "object": "mapping"}.get(prop.get("type", ""), "")
    if prop.get("type") == "array":
        return f"list of {type_of(prop.get('items', {}), defs)}"
    return "path" if prop.get("format") == "path" else kind or prop.get("type", "any")


def bounds(prop: dict) -> str:
    """Numeric limits, e.g. ``>= 1, <= 1024``."""
    signs = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<", "minItems": "items >="}
    found = [
        f"{sign} {option[k]}" for option in [prop, *prop.get("anyOf", [])] for k, sign in signs.items() if k in option
    ]
    return ", ".join(found)


def description(prop: dict, defs: dict) -> str:
    """The key's description, else its type's (an enum's docstring: first clause only)."""
    text = prop.get("description") or _resolve(prop, defs).get("description", "").split(" (")[0]
    return " ".join(text.split()).split(". ")[0].rstrip(".")


def yaml_value(value: object) -> str:
    return (
        ""
        if value is REQUIRED
        else yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("\n...").strip()
    )


def init_yaml(schema: dict | None = None) -> str:
    """A commented YAML config with every key of ``schema`` (default: ``RunConfig``'s) and its default (keys whose
    default is null commented out, to fill in); loading it gives ``RunConfig()``."""
    schema = schema or RunConfig.model_json_schema()
    defs = schema["$defs"]
    lines = [
        "# miaudit configuration: every key with its default (`miaudit config --schema`: the JSON schema).",
        "# Keys set to null are commented out; `miaudit attacks NAME` lists an attack's parameters.",
    ]
    hidden_below: int | None = None  # depth of a commented-out section: its keys are commented out too
    for key in keys(schema):
        if hidden_below is not None and key.depth <= hidden_below:
            hidden_below = None
        hide = hidden_below is not None or key.default is None
        if key.section and key.default is None and hidden_below is None:  # a hidden section's own sections stay hidden
            hidden_below = key.depth
        value = "" if key.section and key.default is not None else yaml_value(key.default)
        note = ", ".join(p for p in (type_of(key.prop, defs), bounds(key.prop), description(key.prop, defs)) if p)
        if key.default is REQUIRED:
            note = f"required: {note}"
        text = f"{'  ' * key.depth}{'# ' if hide else ''}{key.path.rsplit('.', 1)[-1]}: {value}".rstrip()
        lines.append(f"{text:<38}  # {note}")
    return "\n".join(lines) + "\n"


# the strings a key takes beside its mapping: its before-validator expands them (``dataset: digits`` is
# ``{name: digits}``); dotted paths, ``unlearning.method`` inside the unlearning section
_NAME_OR_FILE = {"type": "string", "description": "a built-in data set's name, or a .npz/.csv file"}
SHORTHANDS: dict[str, list[dict]] = {
    "dataset": [_NAME_OR_FILE],
    "reference_data": [_NAME_OR_FILE],
    "nonmember_data": [_NAME_OR_FILE],
    "target": [{"type": "string", "description": "hf:PATH, a causal LM directory"}],
    "executor": [{"enum": ["local", "ray"], "description": "the executor's kind"}],
    "calibration": [{"const": "none", "description": "calibration off: the attacks' raw p-values"}],
    "queries": [
        {"type": "string", "format": "path", "description": "a .npy or text file of record indices"},
        {"type": "array", "items": {"type": "integer"}, "description": "record indices"},
    ],
    "unlearning.method": [{"type": "string", "description": "a method's name, its other keys their defaults"}],
}


def _property(schema: dict, path: str) -> dict | None:
    """The schema of the key at dotted ``path`` (in its parent's ``properties``), None where there is none."""
    defs, obj = schema.get("$defs", {}), schema
    *parents, last = path.split(".")
    for part in parents:
        inner = _section(obj.get("properties", {}).get(part, {}), defs)
        if inner is None:
            return None
        obj = inner
    return obj.get("properties", {}).get(last)


def _also(prop: dict, options: list[dict]) -> None:
    """Let a key's schema also take ``options`` (its shorthands), keeping its default and description."""
    kept = {k: prop.pop(k) for k in ("default", "description", "title") if k in prop}
    value = dict(prop)
    prop.clear()
    prop.update(anyOf=[*value.get("anyOf", [value]), *options], **kept)


def _command_key(out: dict, key: str, prop: dict) -> None:
    """Add ``key``, read by another command (``COMMAND_KEYS``), to the schema ``out``: optional, its mapping (a
    model's schema) under ``$defs`` by its title."""
    prop = copy.deepcopy(prop)
    defs = out.setdefault("$defs", {})
    defs.update(prop.pop("$defs", {}))
    said = f"`miaudit {COMMAND_KEYS[key]}`: {prop.pop('description', '')}".rstrip(": ")
    if "properties" in prop:
        defs[prop["title"]] = prop
        options = [{"$ref": f"#/$defs/{prop['title']}"}]
    else:
        options = prop.pop("anyOf", None) or [prop]
    out["properties"][key] = {"anyOf": [*options, {"type": "null"}], "default": None, "description": said}


def keys_schema(commands: Mapping[str, dict] | None = None) -> dict:
    """RunConfig's JSON schema with the shorthands of ``SHORTHANDS`` and ``commands``: the keys other commands read
    beside a run config's (key -> its JSON schema, with a description; ``miaudit.config_keys.command_keys`` gives
    them all). What ``miaudit init`` and docs/configuration.md's table walk (``keys``)."""
    out = copy.deepcopy(RunConfig.model_json_schema())
    for key, prop in (commands or {}).items():
        _command_key(out, key, prop)
    for path, options in SHORTHANDS.items():
        target = _property(out, path)
        if target is not None:
            _also(target, options)
    return out


def schema(commands: Mapping[str, dict] | None = None) -> dict:
    """The config's JSON schema (``keys_schema``), each attack row described by its attack's parameters
    (``$defs``, by name)."""
    from ..attacks import registry

    out = keys_schema(commands)
    defs = out.setdefault("$defs", {})
    rows: list[dict] = [{"enum": registry.names(), "description": "an attack by name, with its defaults"}]
    for info in registry.all_attacks():
        params = info.params.model_json_schema()
        defs.update(params.pop("$defs", {}))
        params["properties"] = {"name": {"const": info.name}, **params["properties"]}
        params["required"] = ["name", *params.get("required", [])]
        defs[info.name] = {**params, "title": info.name, "description": info.summary}
        rows.append({"$ref": f"#/$defs/{info.name}"})
    rows_schema = next(o for o in out["properties"]["attacks"]["anyOf"] if o.get("type") == "array")
    rows_schema["items"] = {"anyOf": rows}  # the other option is the string auto
    return out


SHARED_CHOICES = ("posterior", "family", "center", "spread", "pool")  # the parameters `miaudit attacks` lists


def choice_lines() -> list[str]:
    """Per parameter of ``SHARED_CHOICES``: the attacks that take it and its values, read off the registries (the
    attacks' parameter models; the posteriors' registry for ``posterior``)."""
    from .. import posteriors
    from ..attacks import registry

    lines = []
    for key in SHARED_CHOICES:
        takers = [a for a in registry.all_attacks() if key in a.params.model_fields]
        if not takers:
            continue
        values = (
            posteriors.names() if key == "posterior" else typing.get_args(takers[0].params.model_fields[key].annotation)
        )
        lines.append(f"  {key}: ({', '.join(a.name for a in takers)}) {' | '.join(map(str, values))}")
    return lines


def attack_help(name: str) -> tuple[list[str], list[list[str]]]:
    """An attack's summary and needs (lines), and its parameters (name, type, default, limits, description)."""
    from ..attacks import registry

    info = registry.get(name)
    params = info.params.model_json_schema()
    defs = params.get("$defs", {})
    most = "any number" if info.max_references is None else f"at most {info.max_references}"
    mode_note = f" ({info.mode_note})" if info.mode_note else ""
    head = [
        f"{info.name}: {info.summary}",
        f"reference models: at least {info.min_references}, {most}",
        f"modes: {', '.join(info.modes)}{mode_note}",
        f"needs: {', '.join(sorted(info.needs)) or 'logits only'}; p-values: {info.pvalues_said}; "
        f"kind: {'risk ranking (not a membership test)' if info.is_ranking else 'membership test'}",
        f"endpoint outputs: {', '.join(info.outputs)}"
        + (f"; queries per record: {info.queries_per_record}" if info.queries_per_record else ""),
    ]
    rows = [
        [key, type_of(prop, defs), yaml_value(prop.get("default", REQUIRED)), bounds(prop), description(prop, defs)]
        for key, prop in params["properties"].items()
    ]
    return head, rows


# what ``miaudit schema NAME`` prints: each output's JSON Schema (draft 2020-12), results.json the default
SCHEMAS = {
    "results": "results.json, which run, score and dp-audit write",
    "config": "a config (the same as `miaudit config --schema`)",
    "compare": "compare.json, which compare writes",
    "plan": "plan's answer (miaudit.forecast.forecast)",
    "inference-plan": "plan's answer for an infer-dataset config (miaudit.forecast.inference_forecast)",
}


def printed_schema(name: str, commands: Mapping[str, dict] | None = None) -> dict:
    """The JSON Schema ``miaudit schema NAME`` prints (``commands``: as ``schema`` takes them); an unknown name
    refused in one line (``ConfigError``)."""
    from ..errors import ConfigError, did_you_mean
    from ..results import AuditPlan, AuditReport, Comparison, InferencePlan

    if name not in SCHEMAS:
        hint = did_you_mean(name, list(SCHEMAS)) or f"; expected one of {', '.join(SCHEMAS)}"
        raise ConfigError(f"schema: {name!r} is not a schema miaudit prints{hint}")
    if name == "config":
        return schema(commands)
    outputs = {"results": AuditReport.json_schema, "compare": Comparison.json_schema, "plan": AuditPlan.json_schema,
               "inference-plan": InferencePlan.json_schema}  # fmt: skip
    return outputs[name]()


def attacks_listing(name: str | None) -> tuple[list[str], list[str]]:
    """``miaudit attacks [NAME]``: the lines for stdout (one attack per line, or NAME's parameters as a table) and
    those for stderr (the choices within attacks and a hint); an unknown NAME refused in one line."""
    from ..attacks import registry
    from ..errors import ConfigError, did_you_mean

    if name is None:
        listed = [f"{info.name:<12} {info.summary}" for info in registry.all_attacks()]
        return listed, ["", *choice_lines(), "\n`miaudit attacks NAME` shows an attack's parameters"]
    if name.lower() not in registry.names():
        hint = did_you_mean(name.lower(), registry.names()) or f"; expected one of {registry.names()}"
        raise ConfigError(f"attacks: unknown attack {name!r}{hint}")
    head, rows = attack_help(name)
    rows = [["name", "type", "default", "limits", "description"], *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    table = ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)) + "  " + r[4] for r in rows]
    return [*head, "parameters:", *table], []


def write_init(path: Path, force: bool, config_schema: dict | None = None) -> str:
    """``miaudit init``: the commented config of ``config_schema`` (``schema``'s) written at ``path`` (an existing
    file only with ``force``); the line to print. Refused in one line (``ConfigError``)."""
    from ..errors import ConfigError

    if path.exists() and not force:
        raise ConfigError(f"init: {path} exists; give another path, or --force to replace it")
    try:
        path.write_text(init_yaml(config_schema))
    except OSError as e:
        raise ConfigError(f"init: cannot write {path} ({e.strerror})") from None
    return f"wrote {path}: edit it, then `miaudit run {path}`"


class _Dumper(yaml.SafeDumper):
    """Block style, but a list of plain values (record indices, repetitions) on one line."""


def _list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flat = all(not isinstance(v, dict | list) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _list)


def as_yaml(keys: Mapping[str, Any]) -> str:
    """``miaudit config``: the config's keys as miaudit reads them (every key, defaults filled in), as YAML."""
    return yaml.dump(dict(keys), Dumper=_Dumper, sort_keys=False, width=1000)
