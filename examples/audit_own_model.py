"""Audit a model you trained yourself, with the Python API and with the command line.

    python examples/audit_own_model.py [WORKDIR]

1. Train a small torch network on scikit-learn's digits, the way any training
   script would (nothing from miaudit), and save what an auditor keeps: the
   weights as safetensors, the data as .npz, and which rows were training
   members (.npy index files).
2. Audit it in Python: ``miaudit.audit(model, members=..., nonmembers=...,
   population=...)``, with reference models built by ``make_net`` and trained
   by this script's own ``train`` function.
3. Audit the saved files from the command line: ``miaudit run audit.yaml``,
   where the YAML names the architecture as ``audit_own_model:make_net`` (this
   file, importable because its folder is on PYTHONPATH).

BMIA and GLS read the network's last layer, so ``Net`` exposes ``features(x)``
and ``head`` with ``forward(x) == head(features(x))``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file
from sklearn.datasets import load_digits

if TYPE_CHECKING:
    from miaudit.results import AuditReport

HERE = Path(__file__).resolve().parent
ATTACKS = ["attack-p", "gls", {"name": "bmia", "references": 1, "samples": 200}, {"name": "lira", "references": 2}]


class Net(nn.Module):
    """A one-hidden-layer network; ``features`` and ``head`` are what BMIA and GLS need."""

    def __init__(self, n_inputs: int, n_classes: int, width: int = 128):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(n_inputs, width), nn.Tanh())
        self.head = nn.Linear(width, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def make_net(input_shape: tuple[int, ...], n_classes: int) -> Net:
    """The factory the config names (``audit_own_model:make_net``): miaudit calls it with the data's shape."""
    return Net(int(np.prod(input_shape)), n_classes)


def train(model: nn.Module, x: np.ndarray, y: np.ndarray, epochs: int = 150) -> None:
    """Full-batch Adam without regularisation: it overfits, so membership leaks (what an audit should find)."""
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    xt, yt = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.long)
    model.train()
    for _ in range(epochs):
        opt.zero_grad()
        nn.functional.cross_entropy(model(xt), yt).backward()
        opt.step()
    model.eval()


def train_and_save(workdir: Path) -> tuple[Net, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Step 1: the user's side, no miaudit involved."""
    digits = load_digits()
    keep = np.random.default_rng(0).permutation(len(digits.target))[:1000]  # a subset keeps the example quick
    x, y = (digits.data[keep] / 16.0).astype(np.float32), digits.target[keep].astype(np.int64)
    parts = {
        "members": np.arange(250),
        "nonmembers": np.arange(250, 500),
        "population": np.arange(500, 850),
        "validation": np.arange(850, 1000),
    }
    torch.manual_seed(0)
    model = make_net(x.shape[1:], 10)
    train(model, x[parts["members"]], y[parts["members"]])
    save_file(model.state_dict(), str(workdir / "model.safetensors"))
    np.savez(workdir / "digits.npz", x=x, y=y)
    for name in ("members", "nonmembers"):
        np.save(workdir / f"{name}.npy", parts[name])
    return model, {name: (x[idx], y[idx]) for name, idx in parts.items()}


def audit_in_python(model: Net, sets: dict, workdir: Path) -> AuditReport:
    """Step 2: the Python API, with this script's factory and training loop for the reference models."""
    import miaudit

    result = miaudit.audit(
        model, **sets, attacks=ATTACKS, references=2, model_factory=lambda: make_net((64,), 10), train_fn=train
    )
    print(result.scores.head(5).to_string(index=False))
    return result.report(workdir / "api-report", force=True)  # this script owns its workdir: rerun replaces


AUDIT_YAML = """\
dataset: {path: digits.npz}
target: {architecture: "audit_own_model:make_net", checkpoint: model.safetensors}
members: members.npy
nonmembers: nonmembers.npy
references: 2
train: {epochs: 15, batch_size: 64, lr: 0.1}
attacks:
  - attack-p
  - gls
  - {name: bmia, references: 1, samples: 200}
  - {name: lira, references: 2}
"""


def audit_from_cli(workdir: Path) -> None:
    """Step 3: the same files from the command line (references trained by miaudit's own loop)."""
    (workdir / "audit.yaml").write_text(AUDIT_YAML)
    command = [shutil.which("miaudit") or sys.executable, "run", "audit.yaml", "--out", "cli-report", "--force"]
    if not shutil.which("miaudit"):
        command[1:1] = ["-m", "miaudit.cli"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))}
    print("$ miaudit run audit.yaml --out cli-report --force", flush=True)
    subprocess.run(command, cwd=workdir, env=env, check=True)


def main() -> None:
    torch.set_num_threads(1)
    workdir = Path(sys.argv[1] if len(sys.argv) > 1 else "audit-own-model").resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    model, sets = train_and_save(workdir)
    results = audit_in_python(model, sets, workdir)
    for a in results.attacks:  # results.json, typed (miaudit.results.AuditReport)
        print(f"API  {a.label:<12} AUC {a.auc:.3f}  TPR@1% {100 * a.tpr_at_fpr['0.01']:.1f}%")
    audit_from_cli(workdir)
    print(f"reports in {workdir}/api-report and {workdir}/cli-report")


if __name__ == "__main__":
    main()
