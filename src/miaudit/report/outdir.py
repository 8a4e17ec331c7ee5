"""The output directory: checked before any work, filled atomically at the end.

``check`` runs before data is loaded or a model trained, and creates nothing: the
path must be (or be creatable as) a writable directory, and an existing non-empty
directory is refused unless ``force``. With ``force``, miaudit's own files there
(``OUTPUT_FILES``) are replaced, and those this run does not write (a roc.png when
membership is unknown) are removed, so two runs never mix; any other file is left
alone.

``reserved`` holds ``out`` for one command from its start: a second run into it is refused at once
(a lock on the directory, which the OS releases when the run ends, however it ends), and staging
folders that killed runs left beside it (``.OUT.<random>/``, see ``report.write_decided``) are removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import OutputDirError

# Every file report.write_decided can produce (the only files --force removes), and what it holds: the docs'
# list of a run's files is generated from here (docs/gen_reference.py).
OUTPUT_FILES = {
    "results.json": "every number, per attack, with the config and environment",
    "report.md": "the metrics table, the data set and models, the operating points and the most exposed records",
    "report.html": "one self-contained page: the table, the log-log ROC, score and p-value histograms, the most "
    "exposed records, config and environment",
    "roc.png": "the log-log ROC curve of every attack (only when membership is known)",
    "scores.csv": "one row per queried record, most exposed first: its scores and p-values per attack",
    "scores.parquet": "the same table as scores.csv, typed",
    "at_risk.csv": "the records named at risk at the run's FDR, smallest q-value first: the attack that flagged "
    "them, its p-value and q-value (results.json records_at_risk says how)",
}


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


@contextlib.contextmanager
def reserved(out: Path, force: bool = False) -> Iterator[None]:
    """``check`` ``out``, then hold it until the block ends; folders made for it and left empty are removed."""
    out = Path(out)
    check(out, force)
    made = [p for p in (out, *out.parents) if not p.exists()]
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_RDONLY)
    try:
        if not _lock(fd):
            raise OutputDirError(
                f"output directory {out} is in use by another miaudit run; wait for it to finish, or choose another one"
            )
        remove_stale_staging(out)
        yield
    finally:
        os.close(fd)  # releases the lock
        for folder in made:  # innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty: a run that failed leaves nothing behind


def _lock(fd: int) -> bool:
    """An exclusive lock on an open directory, without waiting: whether it was taken (no flock: always)."""
    try:
        import fcntl
    except ImportError:  # Windows: no reservation
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def remove_stale_staging(out: Path) -> list[Path]:
    """Staging folders of ``out`` that runs killed while writing left (``.OUT.`` and tempfile's 8 random
    characters, holding nothing but miaudit's output files): stale, since the caller holds ``out``."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.[a-z0-9_]{{8}}")
    stale = [
        p
        for p in out.parent.iterdir()
        if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink() and set(os.listdir(p)) <= set(OUTPUT_FILES)
    ]
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    return stale
