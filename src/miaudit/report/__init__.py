"""The report stage: every output file of a run, written atomically.

results.json (``records``), report.md (``markdown``), report.html (``html``), roc.png
(``plots``), scores.csv and scores.parquet (``ranking``), at_risk.csv (``at_risk``). Everything is first written
into a temporary sibling folder and moved into place at the end (``outdir.publish``),
so a failure never leaves a half-written output directory.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from ..experiment.run import RunResult
from . import at_risk, html, outdir
from .markdown import report_md
from .plots import roc_plot
from .ranking import risk_basis, slug
from .records import results_json
from .scores import scores_frame

OUTPUT_FILES = outdir.OUTPUT_FILES

__all__ = ["OUTPUT_FILES", "results_json", "risk_basis", "scores_frame", "slug", "write"]


def write(res: RunResult, out_dir: Path) -> dict:
    """Write every output file atomically; return the results dict."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    results = results_json(res)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        (tmp / "results.json").write_text(json.dumps(results, indent=1))
        claims = at_risk.named(res)
        frame = scores_frame(res, claims)
        (tmp / "report.md").write_text(report_md(res, results, frame))
        if res.experiment.membership_known:  # no ROC without membership
            roc_plot(res, tmp / "roc.png")
        frame.write_csv(tmp / "scores.csv")
        frame.write_parquet(tmp / "scores.parquet")
        at_risk.flagged_table(res, claims[1]).write_csv(tmp / "at_risk.csv")
        html.write(res, results, frame, tmp)
        outdir.publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results
