"""Relative paths in a config file resolve against the file's folder, not the working directory.

A config names its data beside it (``dataset: {path: d.npz}``); ``miaudit run sub/c.yaml`` from
anywhere must read ``sub/d.npz``. The keys that are paths are found from the config model itself
(every field typed ``Path``), so a new path key needs no change here.
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def anchored(raw: dict[str, Any], folder: Path, model: type[BaseModel]) -> dict[str, Any]:
    """``raw`` (a config file's keys) with every relative path among them joined to ``folder``.

    Args:
        raw: the mapping read from the config file, before validation.
        folder: the config file's folder.
        model: the config model ``raw`` is for (``RunConfig``, ``ScoreConfig``).

    Returns:
        A new mapping; values that are not paths, absolute paths and ``~`` paths are unchanged.
    """
    out = dict(raw)
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            continue  # an unknown key: validation names it
        kinds = _types(field.annotation)
        part = next((t for t in kinds if isinstance(t, type) and issubclass(t, BaseModel)), None)
        if Path in kinds and isinstance(value, str):
            out[key] = _join(folder, value)
        elif part is not None and isinstance(value, dict):
            out[key] = anchored(value, folder, part)
        elif part is not None and isinstance(value, str) and _has_path(part) and _looks_like_file(value):
            out[key] = _join(folder, value)  # a shorthand for the part's path: dataset: d.npz, queries: q.npy
    return out


def _types(annotation: object) -> tuple[Any, ...]:
    """The types an annotation admits: ``X | None`` gives (X, NoneType)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return typing.get_args(annotation)
    return (annotation,)


def _has_path(model: type[BaseModel]) -> bool:
    return any(Path in _types(f.annotation) for f in model.model_fields.values())


def _looks_like_file(value: str) -> bool:
    """A file name (has a suffix or a folder part), not a built-in name such as ``digits``."""
    return ":" not in value and (bool(Path(value).suffix) or "/" in value)


def _join(folder: Path, value: str) -> str:
    if not value or value.startswith("~") or Path(value).is_absolute():
        return value
    return str(folder / value)


def modules_beside(folder: Path) -> None:
    """Make the modules a config names (``package.module:object``: an architecture, ``target.train_fn``,
    ``target.adapter``) importable from the config's folder, as its paths resolve there: the folder joins the
    import path after the working directory (which ``models.io.import_factory`` puts first), for this process."""
    where = str(Path(folder).absolute())
    if where not in sys.path:
        sys.path.append(where)
