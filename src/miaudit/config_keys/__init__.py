"""Every key a config may hold, across the commands that read one: a run's (``config/``), ``miaudit unlearn``'s
``unlearning`` (``unlearning/config.py``) and ``miaudit infer-dataset``'s ``suspect``, ``validation`` and
``inference`` (``dataset_inference/request.py``). ``config/describe.py`` describes them (``miaudit schema config``,
``config --schema``, ``init``, docs/configuration.md's table); those commands' packages sit above it, so this module,
above them, hands their keys in, and reads a config as its own command does for ``miaudit config``. Its imports
wait inside the functions: the CLI registers ``commands.py`` (init, config, schema, attacks) at import, and
``miaudit --help`` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def command_keys() -> dict[str, dict]:
    """The keys unlearn and infer-dataset read beside a run config's (``COMMAND_KEYS``), as their JSON schemas."""
    from ..config.files import COMMAND_KEYS
    from ..dataset_inference import request
    from ..unlearning import config

    keys = {**config.schema_keys(), **request.schema_keys()}
    assert set(keys) == set(COMMAND_KEYS)  # each command's keys described, and no other
    return keys


def as_read(path: Path | None, overrides: list[str]) -> dict[str, Any]:
    """A config's keys as its command reads them (``miaudit config``): unlearn's, infer-dataset's or run's (none:
    the built-in default audit), checked as that command would (a run's attacks against their requirements)."""
    from ..attack_plan import build
    from ..config.files import load_config, read, with_overrides
    from ..config.run import DEFAULT_RUN, RunConfig, from_dict, load
    from ..dataset_inference import request
    from ..unlearning import config

    raw = read(path) if path is not None else {}
    if path is not None and "unlearning" in raw:
        return config.as_config(load_config(path, overrides, RunConfig, config.from_mapping))
    if path is not None and {"suspect", "validation", "inference"} & set(raw):
        req = load_config(path, overrides, RunConfig, request.from_mapping)
        build(req.cfg)
        return request.as_config(req)
    cfg = load(path, overrides) if path is not None else from_dict(with_overrides(DEFAULT_RUN, overrides))
    build(cfg)
    return cfg.model_dump(mode="json")
