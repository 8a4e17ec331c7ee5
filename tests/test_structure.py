"""The package's shape: no import cycle (deferred imports included), and a config that stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).parents[1] / "src"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports anywhere in its body (not under `if TYPE_CHECKING:`)."""
    modules = {module_name(p): p for p in SRC.rglob("*.py")}

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [
                    resolve(f"{base}.{a.name}") if f"{base}.{a.name}" in modules else resolve(base) for a in node.names
                ]
            else:
                continue
            graph[mod] |= {t for t in targets if t and t != mod}
    return graph


def test_no_import_cycle() -> None:
    graph, done, on_path = import_graph(), set(), []

    def visit(mod: str) -> None:
        if mod in on_path:
            raise AssertionError("import cycle: " + " -> ".join(on_path[on_path.index(mod) :] + [mod]))
        if mod in done:
            return
        on_path.append(mod)
        for target in sorted(graph[mod]):
            visit(target)
        on_path.pop()
        done.add(mod)

    assert len(graph) > 40
    for mod in sorted(graph):
        visit(mod)


def test_the_config_model_imports_no_attack_or_torch() -> None:
    heavy = "('miaudit.attacks', 'torch')"
    code = f"import sys, miaudit.config.run; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
