"""MkDocs hooks: list every attack page in the navigation, and refuse stale generated pages (attacks, reference).

The attack pages (docs/attacks/) are generated from the registry by docs/gen_attack_pages.py.
``on_config`` puts each of them under the "Attacks" entry of the navigation, so a new attack
needs no edit of mkdocs.yml; ``on_pre_build`` logs a warning (an error under ``--strict``)
when a page is missing or differs from what the generator writes.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.attack_pages")
DOCS = Path(__file__).resolve().parent


def _generator(name: str = "gen_attack_pages"):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_title(page: Path) -> str:
    """The page's H1 without its code part: "# BMIA (`bmia`)" -> "BMIA"."""
    for line in page.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].split(" (`")[0].strip()
    return page.stem


def on_config(config, **kwargs):
    pages = sorted(p for p in (DOCS / "attacks").glob("*.md") if p.name != "index.md")
    for i, entry in enumerate(config.nav or []):
        if isinstance(entry, dict) and entry.get("Attacks") == "attacks/index.md":
            entries = [{"Overview": "attacks/index.md"}]
            entries += [{_nav_title(page): f"attacks/{page.name}"} for page in pages]
            config.nav[i] = {"Attacks": entries}
    return config


def on_pre_build(config, **kwargs):
    problems = _generator().stale_pages()
    for problem in problems:
        log.warning("attack page %s: run `make docs` (python docs/gen_attack_pages.py)", problem)
    for problem in _generator("gen_reference").stale_pages():
        log.warning("generated reference %s: run `make docs` (python docs/gen_reference.py)", problem)
