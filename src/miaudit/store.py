"""Artifact cache: trained models (safetensors) and their logits, keyed by a hash of
everything that determines them (data content, training indices, architecture,
training config, seed). A finished model is never retrained; an interrupted run
resumes at the first model not yet saved. Writes are atomic (temp file + rename).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file


def spec_key(spec: dict[str, Any]) -> str:
    blob = json.dumps(spec, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def indices_digest(idx: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


def _atomic_write(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def _save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:  # a file object: np.save would append ".npy" to a temp name
        np.save(f, array)


@dataclass(frozen=True)
class ModelEntry:
    key: str
    dir: Path

    @property
    def weights(self) -> Path:
        return self.dir / "model.safetensors"

    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    @property
    def logits_path(self) -> Path:
        return self.dir / "logits.npy"

    def complete(self) -> bool:
        return self.weights.is_file() and self.meta_path.is_file() and self.logits_path.is_file()


class Store:
    """A directory of ``models/<key>/{model.safetensors, meta.json, logits.npy}``."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def entry(self, spec: dict[str, Any]) -> ModelEntry:
        return ModelEntry(key=spec_key(spec), dir=self.root / "models" / spec_key(spec))

    def save(self, entry: ModelEntry, model: torch.nn.Module, meta: dict[str, Any], logits: np.ndarray) -> None:
        entry.dir.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        _atomic_write(entry.weights, lambda p: save_file(state, str(p)))
        _atomic_write(entry.logits_path, lambda p: _save_npy(p, logits))
        _atomic_write(
            entry.meta_path, lambda p: p.write_text(json.dumps(meta, indent=1, default=str))
        )  # last: marks complete

    def load_weights(self, entry: ModelEntry, model: torch.nn.Module) -> torch.nn.Module:
        model.load_state_dict(load_file(str(entry.weights)))
        return model.eval()

    def load_meta(self, entry: ModelEntry) -> dict[str, Any]:
        return json.loads(entry.meta_path.read_text())

    def load_logits(self, entry: ModelEntry) -> np.ndarray:
        return np.load(entry.logits_path, allow_pickle=False)
