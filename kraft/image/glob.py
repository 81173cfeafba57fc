"""Paths and globs of the metadata shell, after Kafka's ``CommandUtils``,
``GlobComponent`` and ``GlobVisitor``.

A path is split on ``/`` (repeated and trailing slashes ignored), made
absolute against the working directory, and ``.``/``..`` are folded. Each
component is a glob: ``*``, ``?``, ``{a,b}`` and ``\\`` escapes, as Kafka's
``GlobComponent`` (no ``[...]`` ranges: Kafka treats brackets literally).
A component without glob characters names one child; a glob component
visits every matching child, in ``String.compareTo`` order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from kraft.image.printing import java_sorted
from kraft.image.tree import MetadataNode

__all__ = ["split_path", "strip_dots", "absolute_components", "glob_regex", "NodeInfo", "visit"]


def split_path(path: str) -> list[str]:
    """``CommandUtils.splitPath``."""
    return [c for c in path.split("/") if c]


def strip_dots(components: list[str]) -> list[str]:
    """``CommandUtils.stripDotPathComponents``."""
    out: list[str] = []
    for c in components:
        if c == "..":
            if out:
                out.pop()
        elif c != ".":
            out.append(c)
    return out


def absolute_components(path: str, working_directory: str) -> list[str]:
    return strip_dots(split_path(path if path.startswith("/") else working_directory + "/" + path))


def glob_regex(glob: str) -> str | None:
    """``GlobComponent.toRegularExpression``: ``None`` for a literal; raises
    ``ValueError`` for a malformed group (then the component is literal)."""
    out = ["^"]
    literal = True
    in_group = False
    i = 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "?":
            literal = False
            out.append(".")
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "\\":
            if i == len(glob):
                # Kafka emits a lone backslash, which does not compile as a
                # regular expression: the component is then a literal.
                raise ValueError("trailing backslash")
            out.append(re.escape(glob[i]))  # an escaped character matches itself
            i += 1
        elif c == "{":
            if in_group:
                raise ValueError("Can't nest glob groups.")
            literal = False
            out.append("(?:(?:")
            in_group = True
        elif c == "," and in_group:
            out.append(")|(?:")
        elif c == "}" and in_group:
            out.append("))")
            in_group = False
        else:
            out.append(re.escape(c))
    if in_group:
        raise ValueError("Unterminated glob group.")
    if literal:
        return None
    out.append("$")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """``GlobVisitor.MetadataNodeInfo``: a node and the path it was reached by."""

    path: tuple[str, ...]
    node: MetadataNode

    @property
    def last_component(self) -> str:
        return self.path[-1] if self.path else "/"

    @property
    def absolute_path(self) -> str:
        return "/" + "/".join(self.path)


def visit(root: MetadataNode, glob: str, working_directory: str) -> list[NodeInfo]:
    """Every node ``glob`` names (``GlobVisitor.accept``); empty when none."""
    components = absolute_components(glob, working_directory)
    return list(_visit(components, 0, root, ()))


def _visit(components: list[str], index: int, node: MetadataNode, path: tuple[str, ...]) -> Iterator[NodeInfo]:
    if index >= len(components):
        yield NodeInfo(path, node)
        return
    if not node.is_directory:
        return
    component = components[index]
    try:
        regex = glob_regex(component)
    except ValueError:
        regex = None  # Kafka logs it and treats the component as a literal
    if regex is None:
        child = node.child(component)
        if child is not None:
            yield from _visit(components, index + 1, child, path + (component,))
        return
    pattern = re.compile(regex, re.DOTALL)
    for name in java_sorted(node.child_names()):
        if pattern.match(name):
            child = node.child(name)
            if child is not None:
                yield from _visit(components, index + 1, child, path + (name,))
