"""One registration idiom for every pluggable part: attacks, data sets, models, model sources, posteriors.

Each kind keeps a ``Registry`` (a read-only mapping from name to entry) whose ``register(name)`` decorates
the entry where it is defined; its package imports every one of its modules (``discover``), so adding an
attack, a data set, a model, a model source or a posterior is adding one file with one decorator.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar, cast

T = TypeVar("T")
E = TypeVar("E")  # what a decorator receives and returns: a function or a class registered as a T


class Registry(Mapping[str, T], Generic[T]):
    """Named entries of one kind, registered once each."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name``; a second entry of the same name is a programming error."""
        if name in self._entries:
            raise RuntimeError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[E], E]:
        """Decorator: the decorated function or class is the entry for ``name``, returned as it is (a
        class stays its own type for its users)."""

        def wrap(entry: E) -> E:
            self.add(name, cast(T, entry))
            return entry

        return wrap

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def discover(package: str, path: Iterable[str], skip: Iterable[str] = ()) -> None:
    """Import every module of ``package`` (its ``__path__``) but ``skip``: each registers its entries."""
    for module in pkgutil.iter_modules(path):
        if module.name not in set(skip):
            importlib.import_module(f"{package}.{module.name}")
