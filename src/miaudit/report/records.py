"""results.json of an audit that runs no membership attack on the target (``without_attacks``: a DP audit without
attacks, an unlearning audit, dataset inference) and what produced the numbers (``environment``); a membership
audit's results.json is decided and built by ``miaudit.membership.decide``."""

from __future__ import annotations

import platform
import sys
from datetime import datetime, timezone
from importlib import metadata

from .._version import __version__
from ..config.run import RunConfig
from ..data import Dataset
from ..results import SCHEMA_VERSION, AuditReport, Calibration, DPAudit, Environment, JsonObject, Target
from ..results.unlearning import UnlearningSection

ENVIRONMENT_PACKAGES = ("numpy", "scipy", "torch", "laplace-torch", "scikit-learn", "pydantic")


def without_attacks(
    cfg: RunConfig,
    ds: Dataset,
    model: str | None,
    target: Target,
    calibration: Calibration,
    config: JsonObject,
    *,
    dp_audit: DPAudit | None = None,
    unlearning: UnlearningSection | None = None,
    references: tuple[int, str] | None = None,
) -> AuditReport:
    """results.json of an audit that runs no membership attack on the target (a DP audit, an unlearning audit):
    the keys every run has, no verdict (the section given holds the answer), and that section; ``references``: how
    many models the answer rests on and how they were trained."""
    return AuditReport(
        schema_version=SCHEMA_VERSION,
        miaudit_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        dataset=cfg.dataset.label,
        data_fingerprint=ds.content_sha256,
        n_records=len(ds),
        model=model,
        seed=cfg.seed,
        **({} if references is None else {"references": references[0], "reference_training": references[1]}),
        target=target,
        calibration=calibration,
        verdict=None,  # no membership test of the target: the verdict is the section's
        attacks=[],
        **({} if dp_audit is None else {"dp_audit": dp_audit}),
        **({} if unlearning is None else {"unlearning": unlearning}),
        config=config,
        environment=environment(cfg.device),
    )


def environment(device: str) -> Environment:
    """What produced the numbers: versions, platform, torch threads (None: torch never ran, as in a scores-only
    audit) and device."""
    torch = sys.modules.get("torch")

    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return Environment(
        miaudit=__version__,
        python=platform.python_version(),
        numpy=version("numpy"),
        scipy=version("scipy"),
        torch=version("torch"),
        laplace_torch=version("laplace-torch"),
        scikit_learn=version("scikit-learn"),
        pydantic=version("pydantic"),
        platform=platform.platform(),
        torch_threads=None if torch is None else torch.get_num_threads(),
        device=device,
    )
