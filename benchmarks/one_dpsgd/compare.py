"""One DP-SGD (issue 44): the weights both DP-SGD trainers give for fixed seeds, before and after the faults,
the optimizer and the schedule were defined once, compared.

    python benchmarks/one_dpsgd/compare.py OLD_SRC NEW_SRC > benchmarks/one_dpsgd/results.md

OLD_SRC and NEW_SRC are ``src`` folders of two checkouts (e.g. the commit before the change and this one); each
side runs in its own interpreter with its ``src`` first on the path. Cases: the stacked trainer (3 models of a
small MLP on 20 random 8x8 records, batch 4, 30 epochs, sigma 1, C 0.5, seeds 1-3) with no fault, a constant
schedule and each planted fault; Opacus' ``train_dp`` (an MLP on 64 random records, 3 epochs, batch 16, declared
epsilon 4, seed 5) with no fault and each planted fault. Per case: bit-identical, or the largest absolute weight
difference. One torch thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import warnings

STACKED = [("none", {}), ("constant schedule", {"cosine": False}), ("clip after_mean", {"clip": "after_mean"}),
           ("clip none", {"clip": "none"}), ("noise per_epoch", {"noise_per_epoch": True}),
           ("public_pass", {"public_pass": True}), ("noise_scale 0.5", {"noise_scale": 0.5})]  # fmt: skip
OPACUS = [("none", None), ("clip after_mean", {"clip": "after_mean"}), ("clip none", {"clip": "none"}),
          ("noise per_epoch", {"noise": "per_epoch"}), ("noise_scale 0.5", {"noise_scale": 0.5}),
          ("sampling x4", {"sampling": {"accounted_rate_factor": 4}}),
          ("public_pass", {"public_pass": True})]  # fmt: skip


def side(out: str) -> None:
    """This interpreter's miaudit: every case's final weights into ``out`` (npz)."""
    import numpy as np
    import torch

    from miaudit.models import build_model
    from miaudit.training import dp_sgd
    from miaudit.training import dp_stacked as st
    from miaudit.training.options import DPConfig, TrainConfig

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)

    def small() -> torch.nn.Module:
        return build_model("mlp", (1, 8, 8), 10, hidden=(16, 8))

    def spec(cosine: bool = True, **fault: object) -> st.StackSpec:
        base = {"epochs": 30, "batch_size": 4, "lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4}
        if hasattr(st.StackSpec, "of"):  # after: the TrainConfig and the faults (dp_faults.Faults)
            from miaudit.training.dp_faults import Faults

            train = TrainConfig(**base, schedule="cosine" if cosine else "constant")  # type: ignore[arg-type]
            return st.StackSpec(train=train, noise_multiplier=1.0, max_grad_norm=0.5, faults=Faults(**fault))  # type: ignore[arg-type]
        return st.StackSpec(**base, cosine=cosine, noise_multiplier=1.0, max_grad_norm=0.5, **fault)  # type: ignore[call-arg]

    x = np.random.default_rng(0).random((20, 1, 8, 8), dtype=np.float32)
    y = np.arange(20) % 10
    idx = [np.arange(10), np.arange(10, 20), np.arange(11)]
    torch.manual_seed(0)
    start = dict(small().named_parameters())
    found = {}
    for name, kw in STACKED:
        for i, params in enumerate(st.StackedDPSGD(small, spec(**kw)).train(x, y, idx, [1, 2, 3], 10, start=start)):
            found |= {f"stacked/{name}/{i}/{k}": v.numpy() for k, v in params.items()}
    rng = np.random.default_rng(0)
    xo, yo = rng.standard_normal((64, 6)).astype(np.float32) * 3, rng.integers(0, 3, 64)
    cfg = TrainConfig(epochs=3, batch_size=16, lr=0.1)
    for name, fault in OPACUS:
        torch.manual_seed(0)
        model = build_model("mlp", (6,), 3, hidden=(8,))
        dp_sgd.train_dp(model, xo, yo, cfg, DPConfig(epsilon=4.0, planted_fault=fault), 5)
        found |= {f"train_dp/{name}/{k}": v.numpy() for k, v in model.state_dict().items()}
    np.savez(out, **found)


def main(old: str, new: str) -> None:
    import numpy as np

    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which, src in (("old", old), ("new", new)):
            files[which] = os.path.join(tmp, f"{which}.npz")
            env = {**os.environ, "PYTHONPATH": os.path.abspath(src), "OMP_NUM_THREADS": "1"}
            subprocess.run([sys.executable, __file__, "--side", files[which]], env=env, check=True)
        a, b = np.load(files["old"]), np.load(files["new"])
        assert sorted(a.files) == sorted(b.files)
        rows: dict[str, list[float]] = {}
        for key in a.files:
            trainer, case = key.split("/")[:2]
            rows.setdefault(f"{trainer} | {case}", []).append(float(np.abs(a[key] - b[key]).max()))
    print("| trainer | case | weights, old vs new |\n|---|---|---|")
    for label, diffs in rows.items():
        worst = max(diffs)
        print(f"| {label} | {'bit-identical' if worst == 0 else f'max abs difference {worst:.3g}'} |")


if __name__ == "__main__":
    if sys.argv[1] == "--side":
        side(sys.argv[2])
    else:
        main(sys.argv[1], sys.argv[2])
