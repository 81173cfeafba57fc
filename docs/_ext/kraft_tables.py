"""Reference pages generated from the code, so they cannot drift from it.

``.. kraft-config-keys::`` renders ``kraft.config.DEFAULTS`` (every key a node
reads, with its default) beside ``NUMERIC_KEYS`` (type and range);
``.. kraft-exit-codes::`` renders the ``EXIT_*`` constants of
``kraft.errors`` with their ``#:`` comments. A key or code added to those
modules appears here at the next build. Every lazily registered command is
loaded before the build, for sphinx-click's ``.. click::``.
"""

from __future__ import annotations

import importlib
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective


def _cell(text: str) -> str:
    # A list-table cell is one reST paragraph; an empty one still needs a body.
    return text.replace("\n", " ").strip() or "\\-"


def _list_table(title: str, header: list[str], rows: list[list[str]], widths: str) -> list[str]:
    lines = [f".. list-table:: {title}", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [header, *rows]:
        lines.append(f"   * - {_cell(row[0])}")
        lines.extend(f"     - {_cell(cell)}" for cell in row[1:])
    return lines


class _TableDirective(SphinxDirective):
    has_content = False

    def rows(self) -> list[str]:  # pragma: no cover - overridden
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        self.state.nested_parse(StringList(self.rows(), source=f"<{self.name}>"), self.content_offset, container)
        return list(container.children)


def _default(value: str) -> str:
    return f"``{value}``" if value else "(none)"


class ConfigKeys(_TableDirective):
    """Every ``server.properties`` key a kraft node reads."""

    def rows(self) -> list[str]:
        config: Any = importlib.import_module("kraft.config")
        rows = []
        for key, default in config.DEFAULTS.items():
            spec = config.NUMERIC_KEYS.get(key)
            if spec is None:
                kind = "string"
            else:
                low, high = spec.bounds
                kind = f"{spec.type}, {low} to {high}"
            rows.append([f"``{key}``", _default(default), kind])
        return _list_table("Configuration keys (kraft.config.DEFAULTS, NUMERIC_KEYS)",
                           ["key", "default", "type and range"], rows, "50 25 25")


class ExitCodes(_TableDirective):
    """The exit-code classes of ``kraft.errors``, with their comments."""

    def rows(self) -> list[str]:
        errors: Any = importlib.import_module("kraft.errors")
        docs = ModuleAnalyzer.for_module("kraft.errors").find_attr_docs()
        rows = [["0", "success", "The command did what it was asked."]]
        names = sorted((name for name in errors.__all__ if name.startswith("EXIT_")),
                       key=lambda name: getattr(errors, name))
        for name in names:
            comment = " ".join(docs.get(("", name), [])).strip()
            rows.append([str(getattr(errors, name)), f"``{name}``", comment])
        return _list_table("Exit codes (kraft.errors)", ["code", "name", "meaning"], rows, "10 30 60")


def load_every_command(app: Sphinx) -> None:
    """Import every lazily registered command of ``kraft`` (kraft.cli loads a
    command on first use, so that ``--help`` stays fast): sphinx-click lists
    only a group's loaded commands once it has any."""
    import click

    from kraft.cli import main

    def load(group: click.Group, ctx: click.Context) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                load(command, click.Context(command, parent=ctx, info_name=name))

    load(main, click.Context(main, info_name="kraft"))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", load_every_command)
    app.add_directive("kraft-config-keys", ConfigKeys)
    app.add_directive("kraft-exit-codes", ExitCodes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
