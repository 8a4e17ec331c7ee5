"""The output directory: checked before any work, filled atomically at the end.

``check`` runs before data is loaded or a model trained, and creates nothing: the
path must be (or be creatable as) a writable directory, and an existing non-empty
directory is refused unless ``force``. With ``force``, miaudit's own files there
(``OUTPUT_FILES``) are replaced, and those this run does not write (a roc.png when
membership is unknown) are removed, so two runs never mix; any other file is left
alone.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import OutputDirError

# Every file report.write can produce: the only files --force removes.
OUTPUT_FILES = (
    "results.json",
    "report.md",
    "report.html",
    "roc.png",
    "scores.csv",
    "scores.parquet",
)


def check(out: Path, force: bool = False, force_hint: str = "--force") -> None:
    """Refuse ``out`` now, before any work, if the results could not be written there at the end."""
    out = Path(out)
    if out.is_dir():
        entries = sorted(os.listdir(out))
        if entries and not force:
            shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
            raise OutputDirError(
                f"output directory {out} is not empty ({shown}); choose another one, or pass {force_hint} "
                "to replace miaudit's output files there"
            )
        _probe(out, out)
        return
    if out.exists():
        raise OutputDirError(f"output directory {out} is a file, not a directory")
    ancestor = out.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputDirError(f"output directory {out}: {ancestor} is a file, not a directory")
    _probe(ancestor, out)


def _probe(directory: Path, out: Path) -> None:
    """Create and remove a file in ``directory``: permission bits lie (root, read-only mounts, ACLs)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".miaudit-probe-", dir=directory)
    except OSError as e:
        where = "" if directory == out else f" ({directory})"
        raise OutputDirError(f"output directory {out} is not writable{where}: {e.strerror}") from None
    os.close(fd)
    os.unlink(name)


def publish(staged: Path, out: Path) -> None:
    """Move the files of ``staged`` into ``out``; miaudit's files from an earlier run that are not among
    them are removed (``check`` has already refused a non-empty ``out`` without ``force``)."""
    out.mkdir(exist_ok=True)
    for name in OUTPUT_FILES:
        if not (staged / name).exists():
            (out / name).unlink(missing_ok=True)
    for f in staged.iterdir():
        os.replace(f, out / f.name)
