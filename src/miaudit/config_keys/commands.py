"""``miaudit init``, ``config``, ``schema`` and ``attacks``: the commands that describe the keys a config may
hold and the attacks it may name, registered by ``miaudit.cli`` (typer only at import, so ``--help`` stays fast)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from ..errors import MiauditError
from ..report.console import refuse

SET_HELP = "override a config key, e.g. --set train.epochs=5 --set attacks.0.samples=200 (repeatable)"


def init(
    path: Path = typer.Argument(Path("miaudit.yaml"), help="where to write the config"),
    force: bool = typer.Option(False, "--force", "-f", help="replace an existing file"),
) -> None:
    """Write a commented config with every key and its default."""
    from .. import config_keys
    from ..config import describe

    try:
        print(describe.write_init(path, force, describe.keys_schema(config_keys.command_keys())))
    except MiauditError as e:
        refuse(e)


def show_config(
    config: Path | None = typer.Argument(None, help="YAML config; omit for the built-in default audit"),
    schema: bool = typer.Option(False, "--schema", help="print the JSON schema of every key (attacks under $defs)"),
    overrides: list[str] | None = typer.Option(None, "--set", "-s", help=SET_HELP),
) -> None:
    """Print a config as its command reads it (every key, defaults filled in, checked), or the JSON schema."""
    from .. import config_keys
    from ..config import describe

    if schema:
        print(json.dumps(describe.schema(config_keys.command_keys()), indent=1))
        return
    try:
        print(describe.as_yaml(config_keys.as_read(config, overrides or [])), end="")
    except MiauditError as e:
        refuse(e)


def schema(name: str = typer.Argument("results", help="results, config, compare, plan, inference-plan")) -> None:
    """Print the JSON Schema (draft 2020-12) of results.json, a config, compare.json or plan's answer."""
    from .. import config_keys
    from ..config import describe

    try:
        print(json.dumps(describe.printed_schema(name, config_keys.command_keys()), indent=1))
    except MiauditError as e:
        refuse(e)


def attacks(name: str | None = typer.Argument(None, help="an attack: show its parameters and needs")) -> None:
    """List the registered attacks, or show one attack's parameters (type, default, limits) and needs."""
    from ..config import describe

    try:
        out, notes = describe.attacks_listing(name)
    except MiauditError as e:
        refuse(e)
    print("\n".join(out))
    for line in notes:  # the choices within attacks, and the hint, on stderr: stdout stays one attack per line
        typer.echo(line, err=True)
