"""The package's shape: no import cycle (deferred imports included), the layers of ARCHITECTURE.md equal to the
import-linter contract, the library without the benchmarks, a config that stays light, modules cut by concern
(each says its concern, is imported by its own name, keeps its private names) under a generous size ceiling, and
an ARCHITECTURE.md that names only what exists."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def contracts() -> list[dict]:
    tomllib = pytest.importorskip("tomllib", reason="pyproject.toml is read with tomllib (Python 3.11+)")
    return tomllib.loads((SRC.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "contracts"
    ]


def layer_names(layer: str) -> str:
    """A layer as written, its optional mark ``(name)`` and spacing aside: ``registries | errors``."""
    return " | ".join(part.strip().strip("()").strip() for part in layer.split("|"))


def diagram_layers(text: str) -> list[str]:
    """ARCHITECTURE.md's diagram (its first code block): each line's layer, the text before its role."""
    block = text.split("```")[1]
    return [
        layer_names(re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]) for line in block.splitlines() if line.strip()
    ]


def test_the_architecture_diagram_is_the_layers_contract() -> None:
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    assert layers["containers"] == ["miaudit"] and layers["exhaustive"] is True
    diagram = diagram_layers((SRC.parent / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert diagram == [layer_names(layer) for layer in layers["layers"]]
    assert diagram[0] == "cli" and len(diagram) > 15


def test_the_diagram_reader_sees_each_layer() -> None:
    text = "intro\n```\ncli          typer commands\n(results)    the typed results\na | b    two\n```\n"
    assert diagram_layers(text) == ["cli", "results", "a | b"]


@pytest.mark.slow
def test_the_library_imports_no_benchmark() -> None:
    """Only ``miaudit bench`` (cli.py, inside the command) loads miaudit_bench: no other module imports it, even
    deferred, the forbidden contract covers every other layer, and neither ``import miaudit`` nor the CLI's
    module loads it."""
    graph = import_graph()
    importers = sorted(m for m, targets in graph.items() if any(t.startswith("miaudit_bench") for t in targets))
    assert [m for m in importers if m.startswith("miaudit.")] == ["miaudit.cli"]
    (forbidden,) = [c for c in contracts() if c["type"] == "forbidden"]
    (layers,) = [c for c in contracts() if c["type"] == "layers"]
    below_cli = [f"miaudit.{name}" for layer in layers["layers"][1:] for name in layer_names(layer).split(" | ")]
    assert forbidden["forbidden_modules"] == ["miaudit_bench"]
    assert set(forbidden["source_modules"]) == {
        m for m in below_cli if (SRC / m.replace(".", "/")).exists() or (SRC / (m.replace(".", "/") + ".py")).exists()
    }
    code = "import sys, miaudit, miaudit.cli; print(sorted(m for m in sys.modules if 'bench' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_config_model_imports_no_attack_or_torch() -> None:
    heavy = "('miaudit.attacks', 'torch')"
    code = f"import sys, miaudit.config.run; print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ROOT = SRC.parent
PY_PATH = re.compile(r"(?<![\w./:<>-])((?:[\w.-]+/)*[\w-]+\.py)\b")
FOLDER = re.compile(r"(?<![\w./:-])((?:[\w-]+/)+)")
DOTTED = re.compile(r"(?<![\w./-])(miaudit(?:\.[A-Za-z_]\w*)+)")


def units(text: str) -> list[str]:
    """Markdown cut into paragraphs, list items and code lines: a path is read against the folders its
    own unit names (``data/: base.py, ...``)."""
    out, current, fence = [], [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not line.strip() or re.match(r"\s*[-*]\s", line) or line.startswith("#"):
            out.append(" ".join(current))
            current = []
        current.append(line)
    return [*out, " ".join(current)]


def stale_paths(text: str) -> list[str]:
    """The ``.py`` paths ``text`` names that exist neither from the project's root, ``src/``,
    ``src/miaudit/`` nor a folder named beside them; a bare file name may be anywhere in the project."""
    everywhere = {p.name for p in ROOT.rglob("*.py") if ".venv" not in p.parts}
    stale = []
    for unit in units(text):
        folders = [ROOT, SRC, SRC / "miaudit"]
        folders += [base / f for f in FOLDER.findall(unit) for base in (ROOT, SRC / "miaudit")]
        for path in PY_PATH.findall(unit):
            if not any((base / path).is_file() for base in folders) and ("/" in path or path not in everywhere):
                stale.append(path)
    return sorted(set(stale))


def stale_names(text: str) -> list[str]:
    """The ``miaudit.x.y`` names in ``text`` that neither import nor resolve as attributes."""
    stale = []
    for name in sorted(set(DOTTED.findall(text))):
        parts = name.split(".")
        obj: object = None
        for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ModuleNotFoundError:
                continue
            for attr in parts[i:]:
                obj = getattr(obj, attr, None)
            break
        if obj is None:
            stale.append(name)
    return stale


CODE = re.compile(r"`([^`\n]+)`")
SHORT_DOTTED = re.compile(r"^([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)$")  # `module.function`, `Class.field`
POSSESSIVE = re.compile(r"`((?:[\w-]+/)*[\w-]+\.py)`'s `([A-Za-z_]\w*)`")  # `experiment/run.py`'s `name`
FILE_SUFFIXES = {"py", "md", "json", "yaml", "yml", "csv", "parquet", "png", "html", "j2", "npy", "npz", "txt"}
OTHER_FILE = re.compile(r"^\.?\w[\w.-]*/(?:[\w.-]+/)*[\w.-]*$")  # a path with a folder: `docs/conventions.md`, `tests/`


def _modules_named(name: str) -> list[str]:
    """Every miaudit module or package whose last name is ``name`` (``registry`` -> miaudit.attacks.registry)."""
    found = []
    for path in (SRC / "miaudit").rglob("*.py"):
        mod = module_name(path)
        if mod.rpartition(".")[2] == name:
            found.append(mod)
    return sorted(found)


def _classes_named(name: str) -> list[type]:
    """The classes of that name defined at the top of a miaudit module (read from source, imported to check)."""
    found = []
    for path in (SRC / "miaudit").rglob("*.py"):
        if re.search(rf"^class {name}\b", path.read_text(encoding="utf-8"), re.MULTILINE):
            found.append(getattr(importlib.import_module(module_name(path)), name))
    return found


def _has(obj: object, attr: str) -> bool:
    """An attribute, or a field declared on a class (dataclass, pydantic or NamedTuple fields have no class
    attribute until given a default)."""
    if hasattr(obj, attr):
        return True
    return isinstance(obj, type) and any(attr in getattr(k, "__annotations__", {}) for k in obj.__mro__)


def _resolves(objects: list[object], attrs: list[str]) -> bool:
    for obj in objects:
        for attr in attrs:
            if not _has(obj, attr):
                break
            obj = getattr(obj, attr, obj)  # a declared field without a default: its class stands for it
        else:
            return True
    return False


def stale_code_names(text: str) -> list[str]:
    """Every code span naming a miaudit module's attribute (``pipeline.prepare``, ``registry.execute``), a
    class's attribute or field (``Plan.head_dropout``), a file's name (`` `experiment/run.py`'s `run_attack` ``)
    or a path with a folder (``docs/conventions.md``) that does not exist. Spans naming no miaudit module or
    class (``torch.func``, ``train.augment``, a config key) are not names of the code and are skipped."""
    stale = []
    for span in sorted(set(CODE.findall(text))):
        span = span.strip()
        if span.startswith("miaudit.") or any(c in span for c in "<>{}*: ="):
            continue  # the miaudit.x names are stale_names' part; placeholders and expressions are not names
        m = SHORT_DOTTED.match(span)
        if m and span.rpartition(".")[2] not in FILE_SUFFIXES:
            head, attrs = m.group(1), m.group(2).split(".")[1:]
            modules = [importlib.import_module(n) for n in _modules_named(head)]
            classes = _classes_named(head) if head[:1].isupper() else []
            if (modules or classes) and not _resolves([*modules, *classes], attrs):
                stale.append(span)
        elif OTHER_FILE.match(span) and not any(
            (base / span).exists() for base in (ROOT, SRC, SRC / "miaudit", SRC / "miaudit" / "report")
        ):
            stale.append(span)
    for path, name in POSSESSIVE.findall(text):
        files = [p for base in (ROOT, SRC, SRC / "miaudit") if (p := base / path).is_file()]
        if files and not any(re.search(rf"\b{name}\b", f.read_text(encoding="utf-8")) for f in files):
            stale.append(f"{path}'s {name}")
    return stale


def test_architecture_names_only_what_exists() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert len(PY_PATH.findall(text)) > 40
    assert stale_paths(text) == []
    assert stale_names(text) == []
    assert stale_code_names(text) == []


def test_the_architecture_check_catches_stale_code_names() -> None:
    text = (
        "`pipeline.prepare`, `pipeline.run_attack`, `registry.execute`, `registry.nowhere`, `Plan.head_dropout`, "
        "`Plan.nowhere`, `torch.func`, `train.augment`, `report.md`, `docs/conventions.md`, `docs/nowhere.md`, "
        "`templates/report.html.j2`, `-s/--set`, `experiment/run.py`'s `run_attack`, `experiment/run.py`'s `nowhere`"
    )
    assert stale_code_names(text) == [
        "Plan.nowhere",
        "docs/nowhere.md",
        "pipeline.run_attack",
        "registry.nowhere",
        "experiment/run.py's nowhere",
    ]


def test_the_architecture_check_catches_stale_names() -> None:
    text = "- `data/`: `base.py`, `nowhere.py`\n\n`experiment.py`, `training/loop.py`, `loop.py`\n"
    assert stale_paths(text) == ["experiment.py", "nowhere.py"]
    assert stale_names("`miaudit.config.RunConfig`, `miaudit.pipeline.obtain`, `miaudit.scores_only`") == [
        "miaudit.pipeline.obtain",
        "miaudit.scores_only",
    ]


# Modules are cut by concern, not by length: a module says its concern in its docstring, is imported by its own
# name (an alias means the name does not explain itself), and keeps its private names (a helper another module
# imports is public, in a module named for it). Length is only a smell alarm, far above a file cut by concern.
SMELL_LINES = 600


def _package_imports() -> list[tuple[str, ast.ImportFrom | ast.Import]]:
    found = []
    for path in sorted((SRC / "miaudit").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append((module_name(path), node))
    return found


def _ours(mod: str, node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.startswith("miaudit") for a in node.names)
    return bool(node.level) or (node.module or "").startswith("miaudit")


def test_no_module_over_the_smell_ceiling() -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in (SRC / "miaudit").rglob("*.py")}
    assert {str(p.relative_to(SRC)): n for p, n in sizes.items() if n > SMELL_LINES} == {}


def test_every_module_says_its_concern() -> None:
    bare = [
        str(p.relative_to(SRC))
        for p in (SRC / "miaudit").rglob("*.py")
        if p.name != "__init__.py" and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))
    ]
    assert bare == []


def test_modules_are_imported_by_their_own_names() -> None:
    aliased = {
        (mod, f"{a.name} as {a.asname}")
        for mod, node in _package_imports()
        if _ours(mod, node)
        for a in node.names
        if a.asname
    }
    assert aliased == set()


@pytest.mark.slow
def test_no_private_name_is_imported_from_another_module() -> None:
    modules = {module_name(p) for p in (SRC / "miaudit").rglob("*.py")}
    crossing = []
    for mod, node in _package_imports():
        if not isinstance(node, ast.ImportFrom) or not _ours(mod, node):
            continue
        package = mod.split(".")[: len(mod.split(".")) - node.level] if node.level else []
        base = ".".join(package + ([node.module] if node.module else [])) if node.level else node.module or ""
        for a in node.names:
            private = a.name.startswith("_") and not a.name.startswith("__")
            if private and f"{base}.{a.name}" not in modules:  # a private module may be imported; its names not
                crossing.append(f"{mod}: {base}.{a.name}")
    assert crossing == []


def test_test_modules_have_unique_basenames() -> None:
    """pytest imports test files by their basename (rootdir import mode, no __init__.py): two test_x.py in two
    folders stop the whole collection, so every test module's file name is unique."""
    names = [p.name for p in (ROOT / "tests").rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []
