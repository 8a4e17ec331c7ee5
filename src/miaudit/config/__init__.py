"""An audit's settings: config models read from YAML or a mapping and checked at the edge.

- ``run.py``: ``RunConfig`` (every key of a ``miaudit run`` config) with ``load`` and ``from_dict``;
- ``scores.py``: ``ScoreConfig``, the config of ``miaudit score`` (precomputed outputs);
- ``settings.py``: what both configs answer (``AuditSettings``) and the settings they share, defined once;
- ``checks.py``: the field checks both run before pydantic's own;
- ``options.py``: the optional parts of a run config (executor, DP-SGD training, DP audit, canaries);
- ``files.py``: ``load_config``, the one reader of every command's config file (YAML with line/column errors,
  paths against its folder, ``--set`` overrides, one-line pydantic errors);
- ``describe.py``: the commented template of ``miaudit init`` and the JSON schema.

``from miaudit.config import RunConfig, load, from_dict`` reads a run config.
"""

from __future__ import annotations

from .run import RunConfig, from_dict, load

__all__ = ["RunConfig", "from_dict", "load"]
