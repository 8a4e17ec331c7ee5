"""Reading a config file, and ``--set`` overrides: plain mappings in, one-line ``ConfigError``s out.

``load_config`` is the one way every command reads its config file (``run``, ``score``, ``unlearn``,
``infer-dataset``, and ``plan`` of each): the YAML read (``read``), its relative paths resolved against its folder
and the modules it names made importable from there (``config/paths.py``), the ``--set`` overrides applied
(``with_overrides``), then the command's model built from the keys. Validation is the models' own; this module turns
a pydantic error into the one line a user reads (``one_line``, ``validated``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import ConfigError, did_you_mean
from .paths import anchored, modules_beside

C = TypeVar("C")


def load_config(
    path: str | Path,
    overrides: list[str] | tuple[str, ...],
    paths_of: type[BaseModel],
    build: Callable[[dict[str, Any], Path], C],
) -> C:
    """A command's config file, read the one way every command reads it.

    Args:
        path: the YAML file (UTF-8, a non-empty mapping).
        overrides: ``key=value`` strings applied after the file's paths are resolved, as ``--set`` does (so a
            path given on the command line is the working directory's).
        paths_of: the model whose ``Path`` fields are the file's path keys (``RunConfig``, ``ScoreConfig``).
        build: the command's model from the keys and the file's folder (``config.run.from_dict``,
            ``unlearning.config.from_mapping``, ``dataset_inference.request.from_mapping``).

    Raises:
        ConfigError: a missing or unreadable file, YAML errors (with line and column), a bad key (one line).
    """
    folder = Path(path).absolute().parent
    modules_beside(folder)  # before validation, which imports the modules the config names
    return build(with_overrides(anchored(read(path), folder, paths_of), overrides), folder)


def read(path: str | Path) -> dict[str, Any]:
    """A config file's keys: UTF-8 YAML holding a non-empty mapping. An empty file is refused, not taken
    as the defaults (which are not the default audit that ``miaudit run`` without a config runs)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config: file {path} not found")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        byte = f"byte {e.object[e.start]:#04x} at offset {e.start}"
        raise ConfigError(f"config: {path.name} is not a text file ({byte} is not UTF-8); expected YAML") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"config: {path.name} is not valid YAML: {_yaml_problem(e, text)}") from None
    if raw is None or raw == {}:
        raise ConfigError(
            f"config: {path.name} is empty; give the keys to change (`miaudit init` writes them all), "
            "or run `miaudit run` without a config for the built-in default audit"
        )
    if not isinstance(raw, dict):
        raise ConfigError(f"config: {path.name} holds a {type(raw).__name__}; expected a mapping of keys")
    return raw


def _yaml_problem(e: yaml.YAMLError, text: str) -> str:
    """PyYAML's error as ``line L, column C: problem (context)``, 1-based, on one line."""
    mark = getattr(e, "problem_mark", None)
    if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, e.position) + 1
        column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        return f"line {line}, column {column}: character {e.character!r} is not allowed in YAML"
    if mark is None:
        return str(e).splitlines()[0]
    problem = getattr(e, "problem", None) or "syntax error"
    context, cmark = getattr(e, "context", None), getattr(e, "context_mark", None)
    where = f" at line {cmark.line + 1}, column {cmark.column + 1}" if cmark is not None else ""
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" + (f" ({context}{where})" if context else "")


def with_overrides(raw: dict[str, Any], overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``raw`` with each ``key.path=value`` of ``--set`` applied: the value read as YAML, a number indexing
    a list (``attacks.0.samples=200``), a bare name expanded to ``{name: ...}`` where a key goes below it."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        key, eq, text = item.partition("=")
        *path, last = key.strip().split(".")
        if not eq or not last or not all(path):
            raise ConfigError(f"--set {item}: expected key=value, e.g. train.epochs=5")
        node: Any = raw
        for part in path:
            holder, slot = _slot(node, part, key)
            child = holder[slot] if isinstance(holder, list) else holder.get(slot)
            if child is None or isinstance(child, str):  # absent, or a bare name (dataset: digits)
                child = holder[slot] = {} if child is None else {"name": child}
            node = child
        holder, slot = _slot(node, last, key)
        try:
            holder[slot] = yaml.safe_load(text)
        except yaml.YAMLError:
            holder[slot] = text
    return raw


def _slot(node: object, part: str, key: str) -> tuple[Any, Any]:
    """Where ``part`` of a ``--set`` key lives in ``node``: (the container, the index or key)."""
    if isinstance(node, list):
        if part.isdigit() and int(part) < len(node):
            return node, int(part)
        raise ConfigError(f"--set {key}: no item {part} in a list of {len(node)}")
    if not isinstance(node, dict):
        raise ConfigError(f"--set {key}: {part} is below a plain value")
    return node, part


COMMAND_KEYS = {  # top-level keys another command reads besides a run config's: its name, for the hint
    "suspect": "infer-dataset",
    "validation": "infer-dataset",
    "inference": "infer-dataset",
    "unlearning": "unlearn",
}


def one_line(e: ValidationError, model: type[BaseModel] = BaseModel, also: tuple[str, ...] = ()) -> str:
    """A pydantic error as ``key.path: message (and N more)``; an unknown key of ``model`` (whose other
    accepted keys are ``also``) gets the closest known key as a suggestion."""
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))  # pydantic's validator names
    msg = err["msg"].removeprefix("Value error, ")
    if err["loc"]:  # a message already naming its key (models' errors say "model: ..."): not named twice
        msg = re.sub(rf"^({re.escape(str(err['loc'][-1]))}|model): ", "", msg)
    if err["type"] == "extra_forbidden" and len(err["loc"]) == 1 and str(err["loc"][0]) in COMMAND_KEYS:
        msg = f"a key of `miaudit {COMMAND_KEYS[str(err['loc'][0])]}`, not of this command: run that one on this config"
    elif err["type"] == "extra_forbidden":
        known = [*_fields_at(model, err["loc"][:-1]), *also]
        msg = f"unknown key{did_you_mean(str(err['loc'][-1]), known) or f'; known keys: {sorted(known)}'}"
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


def _fields_at(model: type[BaseModel] | None, loc: tuple) -> list[str]:
    """The keys the (nested) model at ``loc`` accepts."""
    for part in loc:
        field = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            return []
        options = getattr(field.annotation, "__args__", (field.annotation,))  # X | None
        model = next((t for t in options if isinstance(t, type) and issubclass(t, BaseModel)), None)
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], raw: object, source: str, context: dict[str, bool] | None = None, within: str = "") -> M:
    """``raw`` (a file's keys) validated as ``model``: one-line ``ConfigError`` for a non-mapping or a bad key.
    ``context``: what the validators are told (``function_given``: the Python API holds ``dp_training``'s function);
    ``within``: the section ``raw`` is of (``unlearning``), named before the key in an error."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping of keys, got {type(raw).__name__}")
    try:
        return model(**raw) if context is None else model.model_validate(raw, context=context)
    except ValidationError as e:
        raise ConfigError(f"{within}.{one_line(e, model)}" if within else one_line(e, model)) from None
