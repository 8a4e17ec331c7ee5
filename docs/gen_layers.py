"""Print miaudit's layers as the code has them: each layer of the import-linter ``layers`` contract in
pyproject.toml (which ``lint-imports`` holds the imports to) with the modules in it, and the import graph's depth
(the longest chain of imports among miaudit's top-level packages and modules, found with grimp, the graph
import-linter reads). ARCHITECTURE.md's diagram is this list with each layer's role:
``python docs/gen_layers.py`` (from the project's root, ``src`` on the path)."""

from __future__ import annotations

import functools
from pathlib import Path

import grimp
import tomllib

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "miaudit"


def layers() -> list[list[str]]:
    """The layers contract, top to bottom, each layer's names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    return [[name.strip() for name in layer.split("|")] for layer in contract["layers"]]


def modules(name: str) -> list[str]:
    """A top-level module's file, or a package's modules (``__init__`` aside), as paths under src/miaudit/."""
    if (SRC / f"{name}.py").is_file():
        return [f"{name}.py"]
    found = sorted(p.relative_to(SRC).as_posix() for p in (SRC / name).rglob("*.py") if p.name != "__init__.py")
    return found or [f"{name}/__init__.py"]


def depth() -> tuple[int, list[str]]:
    """The longest chain of imports among miaudit's top-level packages and modules (each counted once)."""
    graph = grimp.build_graph("miaudit")
    top = {m: m.split(".")[1] for m in graph.modules if m.count(".") >= 1}
    edges: dict[str, set[str]] = {t: set() for t in top.values()}
    for module, name in top.items():
        edges[name] |= {top[t] for t in graph.find_modules_directly_imported_by(module) if t in top} - {name}

    @functools.cache
    def longest(name: str) -> tuple[str, ...]:
        return (name, *max((longest(t) for t in edges[name]), key=len, default=()))

    chain = max((longest(n) for n in edges), key=len)
    return len(chain), list(chain)


def main() -> None:
    for layer in layers():
        print(" | ".join(layer))
        for name in layer:
            print(f"    {name}: {', '.join(modules(name))}")
    n, chain = depth()
    print(f"{len(layers())} layers; the import graph's depth: {n} ({' -> '.join(chain)})")


if __name__ == "__main__":
    main()
