"""Loading a user's model safely: checkpoints that cannot run code, and factories the user named.

A checkpoint is read with safetensors, or with ``torch.load(weights_only=True)``,
whose unpickler only rebuilds tensors and plain containers: a file that needs any
other global (a pickled class, ``os.system`` ...) is refused before anything in it
runs. Code runs only where the config names it explicitly, as
``architecture: package.module:factory``.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn as nn
from safetensors import SafetensorError
from safetensors.torch import load_file

from .. import storage
from ..errors import ModelError

Factory = Callable[..., nn.Module]  # factory(input_shape, n_classes) -> a fresh nn.Module
StateDict = dict[str, torch.Tensor]
TORCH_SUFFIXES = (".pt", ".pth", ".bin")


def _convert_hint(path: Path) -> str:
    out = path.with_suffix(".safetensors").name
    return (
        f"python -c \"import torch, safetensors.torch as st; m = torch.load('{path.name}', weights_only=False); "
        f"st.save_file(m.state_dict() if hasattr(m, 'state_dict') else m, '{out}')\" (only for a file you trust)"
    )


def _torch_state(path: Path) -> object:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        # The weights-only unpickler stopped at something that is not a tensor or a plain container
        # (a class, a function, an opcode it does not allow). torch.save writes a zip, a bare pickle
        # starts with the PROTO opcode: either way the file needs the full unpickler, which can run code.
        with open(path, "rb") as f:
            head = f.read(2)
        if head == b"PK" or head[:1] == b"\x80":
            raise ModelError(
                f"target.checkpoint: {path.name} needs pickle to load, which miaudit refuses; "
                f"convert it with: {_convert_hint(path)}"
            ) from None
        raise ModelError(f"target.checkpoint: {path.name} is not a torch checkpoint miaudit can read") from None
    except (RuntimeError, OSError, EOFError, ValueError) as e:
        raise ModelError(
            f"target.checkpoint: {path.name} is not a readable torch checkpoint ({str(e).splitlines()[0][:120]})"
        ) from None


def _as_state_dict(obj: object, path: Path) -> StateDict:
    """A name -> tensor mapping, also when wrapped as {'state_dict': ...} (a common training-script layout)."""
    if isinstance(obj, dict) and not all(isinstance(v, torch.Tensor) for v in obj.values()):
        obj = obj.get("state_dict", obj.get("model_state_dict", obj))
    if (
        not isinstance(obj, dict)
        or not obj
        or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())
    ):
        raise ModelError(
            f"target.checkpoint: {path.name} does not hold a state_dict (parameter name -> tensor); "
            "save model.state_dict()"
        )
    return obj


def read_state_dict(path: str | Path) -> StateDict:
    """The tensors of a .safetensors or weights-only .pt/.pth checkpoint; never unpickles code."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelError(f"target.checkpoint: file {path} not found")
    suffix = path.suffix.lower()
    if suffix == ".safetensors":
        try:
            return load_file(str(path))
        except (SafetensorError, OSError) as e:
            raise ModelError(f"target.checkpoint: {path.name} is not a valid safetensors file ({e})") from None
    if suffix in TORCH_SUFFIXES:
        return _as_state_dict(_torch_state(path), path)
    raise ModelError(
        f"target.checkpoint: unsupported file type {suffix!r}; expected .safetensors or {'/'.join(TORCH_SUFFIXES)}"
    )


def load_weights(model: nn.Module, state: StateDict, name: str) -> nn.Module:
    """Load ``state`` into ``model`` exactly (every key, every shape), in eval mode."""
    own = model.state_dict()
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or unexpected:
        raise ModelError(
            f"target.checkpoint: does not match architecture {name} (missing {missing[:3]}, "
            f"unexpected {unexpected[:3]})"
        )
    for key, tensor in own.items():
        if tensor.shape != state[key].shape:
            raise ModelError(
                f"target.checkpoint: {key} has shape {tuple(state[key].shape)}, architecture {name} "
                f"built for this data expects {tuple(tensor.shape)}"
            )
    model.load_state_dict(state)
    return model.eval()


def is_import_path(name: str) -> bool:
    return ":" in name


def import_factory(spec: str) -> Factory:
    """The callable named by ``package.module:factory``; the working directory is importable, as for
    other tools that take such paths, so a factory next to the config can be found."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ModelError(f"{spec!r} is not of the form package.module:factory")
    added = "" not in sys.path and str(Path.cwd()) not in sys.path
    if added:
        sys.path.insert(0, str(Path.cwd()))
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ModelError(f"cannot import {spec!r} ({e})") from None
    except SyntaxError as e:  # the user's module does not parse: where, in one line
        raise ModelError(f"cannot import {spec!r}: syntax error in {e.filename}, line {e.lineno} ({e.msg})") from None
    except Exception as e:  # the user's module raised while importing: its error, in one line
        raise ModelError(f"cannot import {spec!r}: importing it raised {type(e).__name__}: {e}") from None
    finally:
        if added:
            sys.path.remove(str(Path.cwd()))
    if not callable(factory):
        raise ModelError(f"{spec!r} is not callable")
    return factory


def source_digest(spec: str) -> str:
    """Content hash of the module defining a factory: part of cache keys, so editing it retrains."""
    module = sys.modules.get(spec.partition(":")[0])
    source = inspect.getsourcefile(module) if module is not None else None
    return storage.hash_file(source)[:16] if source else "unknown"
