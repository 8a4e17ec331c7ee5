"""Helpers for the bring-your-own-model tests: a tiny user network, its data, files, and the CLI in-process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import yaml
from safetensors.torch import save_file
from typer.testing import CliRunner

from miaudit.cli import app
from miaudit.models.mlp import MLP

N_FEATURES, N_CLASSES = 6, 3


class TinyNet(nn.Module):
    """A user's network: features + head, as BMIA and GLS need."""

    def __init__(self, n_features: int = N_FEATURES, n_classes: int = N_CLASSES):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(n_features, 16), nn.Tanh())
        self.head = nn.Linear(16, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def tiny_data(n: int = 160, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian features with labels from a random linear rule: distinct rows, every class present."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
    y = np.argmax(x[:, :N_CLASSES] + 0.5 * rng.normal(size=(n, N_CLASSES)), axis=1).astype(np.int64)
    return x, y


def fitted_net(x: np.ndarray, y: np.ndarray, steps: int = 60) -> TinyNet:
    torch.manual_seed(0)
    net = TinyNet()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(net(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        opt.step()
    return net.eval()


def api_sets(x: np.ndarray, y: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """40 members, 40 non-members, 80 population records."""
    return {"members": (x[:40], y[:40]), "nonmembers": (x[40:80], y[40:80]), "population": (x[80:], y[80:])}


def write_audit_files(folder: Path, x: np.ndarray, y: np.ndarray) -> dict[str, Path]:
    """What an auditor holds: data.npz, an MLP checkpoint (safetensors), member/non-member index files."""
    np.savez(folder / "data.npz", x=x, y=y)
    torch.manual_seed(0)
    save_file(MLP((N_FEATURES,), N_CLASSES, hidden=(16,)).state_dict(), str(folder / "model.safetensors"))
    np.save(folder / "members.npy", np.arange(0, 40))
    np.savetxt(folder / "nonmembers.txt", np.arange(40, 80), fmt="%d")
    return {name: folder / name for name in ("data.npz", "model.safetensors", "members.npy", "nonmembers.txt")}


def audit_config(folder: Path, **overrides) -> dict:
    """A valid own-model config for the files above; the built-in MLP with one hidden layer of 16
    is named through ``package.module:factory`` (this module)."""
    return {
        "dataset": {"path": str(folder / "data.npz")},
        "target": {"architecture": "_byo:small_mlp", "checkpoint": str(folder / "model.safetensors")},
        "members": str(folder / "members.npy"),
        "nonmembers": str(folder / "nonmembers.txt"),
        "references": 0,
        "train": {"epochs": 2, "batch_size": 16},
        "attacks": ["attack-p"],
        **overrides,
    }


def small_mlp(input_shape: tuple[int, ...], n_classes: int) -> MLP:
    return MLP(input_shape, n_classes, hidden=(16,))


def run_cli(folder: Path, raw: dict | str, out: Path) -> tuple[int, str]:
    """``miaudit run`` in-process on a config written into ``folder``: (exit code, output)."""
    path = folder / "audit.yaml"
    path.write_text(raw if isinstance(raw, str) else yaml.safe_dump(raw))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is a failure of the test, shown as such
    return result.exit_code, result.output


def assert_refused(code: int, output: str, message: str, out: Path) -> None:
    """Exit code 2, a one-line error containing ``message``, and no output directory (nor its temp sibling)."""
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert code == 2, output
    assert len(errors) == 1 and message in errors[0], output
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]


TRAIN_FN_CALLS: list[int] = []  # records each call of adam_fit: how many records it trained on


def adam_fit(model: nn.Module, x: np.ndarray, y: np.ndarray) -> None:
    """A user's own training recipe (``target.train_fn: _byo:adam_fit``): a few full-batch Adam steps."""
    TRAIN_FN_CALLS.append(len(y))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(20):
        opt.zero_grad()
        nn.functional.cross_entropy(model(torch.as_tensor(x)), torch.as_tensor(y)).backward()
        opt.step()
