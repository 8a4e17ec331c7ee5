"""``miaudit unlearn``'s outputs: results.json (the ``unlearning`` section beside the keys a run has), report.md
and report.html (the verdict sentence first), forget.csv (per forgotten record: its score and both p-values),
the unlearned model miaudit made (``unlearned.safetensors``), the original training records (``members.npy``) and
the forgotten ones (``forget.npy``): what an auditor gives back as an own model (docs/unlearning.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..config.files import load_config, with_overrides
from ..config.run import RunConfig
from ..report import outdir
from ..report.records import without_attacks
from ..report.unlearning import html, markdown
from ..results import AuditReport, Calibration, Target
from . import verify
from .audit import UnlearnFn, Verification, run
from .config import UnlearnConfig, as_config, from_mapping

FILES = ("results.json", "report.md", "report.html", "forget.csv", "unlearned.safetensors", "members.npy", "forget.npy")


def results(u: UnlearnConfig, v: Verification) -> AuditReport:
    """results.json: the keys a run has where they apply (the target is the unlearned model), and ``unlearning``."""
    cfg, ds, s = u.cfg, v.records.dataset, v.section
    config = as_config(u)
    source = "trained" if s.method.name == "retrain" else s.method.label
    target = Target(
        train_accuracy=s.utility.retained.unlearned,
        test_accuracy=s.utility.test.unlearned,
        source=f"unlearned: {source}",
    )
    return without_attacks(
        cfg,
        ds,
        cfg.target_architecture,
        target,
        Calibration(calibrated=True, records=s.n_unseen),
        config,
        unlearning=s,
        references=(s.retrained_models, "retrained on the retained records by miaudit's loop (the original's recipe)"),
    )


def forget_csv(v: Verification) -> str:
    q_up, q_low = verify.qvalues(v.p_remembered), verify.qvalues(v.p_over_forgotten)
    out = ["record,z,p_remembered,q_remembered,p_over_forgotten,q_over_forgotten"]
    for i, z, a, b, c, d in zip(v.records.forget, v.z_forget, v.p_remembered, q_up, v.p_over_forgotten, q_low):
        out.append(f"{int(i)},{z:.6g},{a:.6g},{b:.6g},{c:.6g},{d:.6g}")
    return "\n".join(out) + "\n"


def write(u: UnlearnConfig, v: Verification, out: Path) -> AuditReport:
    """Every output file into ``out`` (held by the caller: ``outdir.reserved``)."""
    from safetensors.torch import save

    out.mkdir(parents=True, exist_ok=True)
    r = results(u, v)
    state = {k: t.detach().cpu().contiguous() for k, t in v.module.state_dict().items()}
    # bytes, then an ordinary write: safetensors' save_file creates its file 0600 whatever the umask
    (out / "unlearned.safetensors").write_bytes(save(state))
    np.save(out / "members.npy", v.records.members.astype(np.int64))
    np.save(out / "forget.npy", v.records.forget.astype(np.int64))
    (out / "forget.csv").write_text(forget_csv(v), encoding="utf-8")
    (out / "report.md").write_text(markdown(r), encoding="utf-8")
    (out / "report.html").write_text(html(r), encoding="utf-8")
    r.write(out / "results.json")
    return r


def verify_config(
    config: str | Path | Mapping[str, object],
    *,
    unlearn_fn: UnlearnFn | None = None,
    out: str | Path | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> AuditReport:
    """``miaudit.verify_unlearning``: the config read and checked, the audit run, and (with ``out``) every file
    written into ``out``, which is held from before the first model trains (``outdir.reserved``)."""
    if isinstance(config, str | Path):
        u = load_config(config, list(overrides), RunConfig, from_mapping)
    else:
        u = from_mapping(with_overrides(dict(config), list(overrides)))
    if out is None:
        return results(u, run(u, unlearn_fn))
    with outdir.reserved(Path(out), force):
        return write(u, run(u, unlearn_fn), Path(out))
