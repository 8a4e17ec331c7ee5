"""Field checks of the configs, run before pydantic's own: shorthands, attack rows, the device, the
architecture names. Shared by ``RunConfig`` and ``ScoreConfig`` (attack rows, calibration); light: torch and
the models are imported only to check a device other than cpu or an architecture's name."""

from __future__ import annotations

import re


def off_when_none(v: object) -> object:
    return None if v is None or (isinstance(v, str) and v.lower() == "none") else v


def architecture_name(v: str | None) -> str | None:
    """A built-in architecture, another library's (``torchvision:NAME``, ``timm:NAME``, ``hf:PATH``: form and
    local files checked now), or ``package.module:factory`` (imported now, so a typo fails before any work)."""
    from ..lm.names import gpt_tiny_options, is_gpt_tiny
    from ..models import ARCHITECTURES, adapters, io

    if v is not None and is_gpt_tiny(v):
        gpt_tiny_options(v)
    elif v is not None and adapters.is_adapter_name(v):
        adapters.check(v)
    elif v is not None and io.is_import_path(v):
        io.import_factory(v)
    elif v is not None and v not in ARCHITECTURES:
        raise ValueError(
            f"unknown architecture {v!r}; expected one of {sorted(ARCHITECTURES)}, torchvision:NAME, timm:NAME, "
            "hf:PATH or package.module:factory"
        )
    return v


def importable(v: str | None) -> str | None:
    """``package.module:function`` imported now, so a typo fails before any work."""
    from ..models import io

    if v is not None:
        io.import_factory(v)
    return v


def lm_base(v: str | None) -> str | None:
    """``train.base``: a local causal LM directory, as ``hf:PATH``."""
    from ..lm.names import base_spec

    return None if v is None else base_spec(v)


def target_shorthand(v: object) -> object:
    """``target: hf:PATH`` is shorthand for ``target: {architecture: hf:PATH}`` (a causal LM directory)."""
    return {"architecture": v} if isinstance(v, str) else v


def holds_weights(architecture: str) -> bool:
    """Whether a ``target:`` of this architecture needs no checkpoint: an ``hf:`` causal LM directory."""
    from ..lm.names import is_causal_lm

    return architecture.startswith("hf:") and is_causal_lm(architecture)


def model_from_base(raw: object) -> object:
    """A run config with ``train.base`` and no ``model``: the target is the base fine-tuned (a base that is no
    causal LM directory is left to ``train.base``'s own check)."""
    from ..lm.names import is_causal_lm

    if not isinstance(raw, dict) or "model" in raw:
        return raw
    train = raw.get("train")
    base = train.get("base") if isinstance(train, dict) else None
    if not isinstance(base, str):
        return raw
    spec = base.strip() if base.strip().startswith("hf:") else f"hf:{base.strip()}"
    return {**raw, "model": spec} if is_causal_lm(spec) else raw


def base_fits(base: str | None, model: str, own_target: str | None, reference_model: str | None) -> None:
    """``train.base`` with the other model keys: the audited model is a causal LM; a target miaudit trains is
    the base fine-tuned (``model`` omitted or the same directory); the references start from it."""
    from ..lm.names import hf_path, is_causal_lm

    if base is None:
        return
    audited = own_target or model
    if not is_causal_lm(audited):
        raise ValueError(f"train.base: fine-tunes causal language models; {audited!r} is not one")
    if own_target is None and hf_path(model) != hf_path(base):
        raise ValueError(
            f"train.base: the target miaudit trains is {base} fine-tuned; model: {model} says otherwise (omit "
            "model, or audit your own model with target:)"
        )
    if reference_model is not None:
        raise ValueError("reference_model: the references are fine-tuned from train.base; give one of the two")


def attack_entries(raw: object) -> object:
    """Attack rows as mappings with a name (a bare name is shorthand for ``{name: ...}``). Their
    parameters are validated by the Plan (``miaudit.attack_plan``), which knows every attack."""
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        return "auto"
    if not isinstance(raw, (list, tuple)):
        return raw
    if not raw:
        raise ValueError("no attacks; give auto, or at least one attack row")
    rows = [{"name": r} if isinstance(r, str) else r for r in raw]
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "name" not in row:
            raise ValueError(f"row {i} is not a mapping with a name; each attack is e.g. {{name: lira, references: 8}}")
    return rows


DEVICE = re.compile(r"auto|cpu|mps|cuda(:[0-9]+)?")


def known_device(v: str) -> str:
    """A device this machine has; ``auto`` becomes cuda where a GPU is available, else cpu."""
    v = v.strip().lower()
    if not DEVICE.fullmatch(v):
        raise ValueError(f"unknown device {v!r}; expected auto, cpu, cuda, cuda:N or mps")
    if v == "cpu":
        return v
    import torch  # only for a device other than cpu: importing this module stays light

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    mps = torch.backends.mps.is_available()
    if v == "auto":
        return "cuda" if gpus else "cpu"
    if v == "mps" and not mps:
        raise ValueError("mps (Apple silicon GPUs) is not available on this machine; use device: cpu (or auto)")
    has = f"{gpus} CUDA GPU(s)" if gpus else f"no CUDA GPU{' (mps is available)' if mps else ''}"
    if v.startswith("cuda") and int(v.partition(":")[2] or 0) >= gpus:
        raise ValueError(f"{v} is not available: this machine has {has}; use device: cpu (or auto)")
    return v
