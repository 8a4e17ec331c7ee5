"""Every error miaudit raises for bad input, in one place.

Each is a one-line message naming the field or file at fault (``attacks.1.samples: ...``,
``members: ...``). They share the base ``MiauditError`` (a ``ValueError``), which the
command line turns into exit code 2 before anything is written.
"""

from __future__ import annotations


class MiauditError(ValueError):
    """Bad input of any kind: one line, naming the field or file."""


class ConfigError(MiauditError):
    """A configuration problem: a key, a value, a combination of keys."""


class DataError(MiauditError):
    """A data set or record file that cannot be used as given."""


class ModelError(MiauditError):
    """A model, architecture or checkpoint that cannot be used as given."""


class AttackRequirementError(MiauditError):
    """An attack asked to run outside its assumptions (too few references, wrong mode, missing inputs)."""


class OutputDirError(MiauditError):
    """An output directory that cannot or may not receive a run's files."""


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """``; did you mean 'x'?`` for the closest of ``choices`` to a mistyped ``word``, else ''."""
    import difflib

    close = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
