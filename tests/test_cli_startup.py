"""The ``kraft`` command line answers at once: ``kraft --help`` and every
``kraft SUB --help`` import no heavy module (checked with ``python -X
importtime`` in a fresh interpreter, no timing asserted), and the lazy
registry in :mod:`kraft.cli` cannot go stale (each line's short help is the
command's own)."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from kraft import cli
from tests.harness.cli import run

#: Modules ``--help`` must not load: the event loop, the Spark stack, the
#: metrics library and the node (each command imports them when it runs).
HEAVY = ("trio", "pyarrow", "pyspark", "prometheus_client", "kraft.node", "kraft.programs", "pandas", "numpy",
         "pyfuse3", "matplotlib")


def _loaded_modules(args: list[str]) -> set[str]:
    """The modules a fresh ``python -m kraft.cli ARGS`` imports."""
    result = run(*args, python_options=("-X", "importtime"))
    assert result.returncode == 0, result.stderr[-2000:]
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    assert "kraft.cli" in names or "click" in names, result.stderr[-2000:]
    return names


def _heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


def _help_paths() -> list[list[str]]:
    """``[]`` (the top level) and every command path under it: ``quorum``,
    ``quorum describe``, ``bench codec``, ..."""
    paths: list[list[str]] = [[]]

    def walk(group: click.Group, prefix: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            paths.append([*prefix, name])
            if isinstance(command, click.Group):
                walk(command, [*prefix, name])

    walk(cli.main, [])
    return paths


HELP_PATHS = _help_paths()


def test_import_kraft_cli_loads_nothing_heavy() -> None:
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import kraft.cli"],
                            capture_output=True, text=True, timeout=120, check=False)
    names = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
             if line.startswith("import time:") and "|" in line}
    assert "kraft.cli" in names
    assert not _heavy(names)
    # Only click, the standard library and the error classes the top-level
    # handler maps to exit codes (kraft.errors imports errno alone): no command module.
    assert not sorted(n for n in names if n.startswith("kraft.") and n not in ("kraft.cli", "kraft.errors"))


def test_every_subcommand_is_reached() -> None:
    flat = {" ".join(p) for p in HELP_PATHS}
    assert {"", "quorum", "quorum describe", "node start", "bench", "bench quorum", "spark"} <= flat


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda p: " ".join(p) or "kraft")
def test_help_imports_nothing_heavy(path: list[str]) -> None:
    heavy = _heavy(_loaded_modules([*path, "--help"]))
    assert not heavy, f"`kraft {' '.join(path)} --help` imports {heavy[:8]}: import them inside the command"


@pytest.mark.parametrize("registry,name", [
    *((cli.COMMANDS, name) for name in cli.COMMANDS),
    *((cli.BENCH_COMMANDS, name) for name in cli.BENCH_COMMANDS),
], ids=lambda x: x if isinstance(x, str) else "")
def test_registry_help_is_the_commands_own(registry: dict[str, cli.LazyCommand], name: str) -> None:
    """``kraft --help`` shows the registry's line without importing the
    command; it must say what the command itself says."""
    entry = registry[name]
    command = cli._load(entry.target)
    assert entry.short_help == command.get_short_help_str(limit=1000), (
        f"update the short help of {name!r} in kraft/cli.py (or the command's docstring)")
