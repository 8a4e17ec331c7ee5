"""The run's settings: one config model, read from YAML or a mapping and checked at the edge.

- ``run.py``: ``RunConfig`` (every key of a ``miaudit run`` config) with ``load`` and ``from_dict``;
- ``scores.py``: ``ScoreConfig``, the config of ``miaudit score`` (precomputed outputs);
- ``options.py``: the parts both share (output, calibration, executor, FPR levels);
- ``files.py``: YAML reading with line/column errors and ``--set`` overrides;
- ``describe.py``: the commented template of ``miaudit init`` and the JSON schema.

``from miaudit.config import RunConfig, load, from_dict`` keeps working (the module was
``miaudit/config.py`` before 0.2).
"""

from __future__ import annotations

from .run import RunConfig, from_dict, load

__all__ = ["RunConfig", "from_dict", "load"]
