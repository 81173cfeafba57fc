"""The commands of ``kafka-metadata-shell.sh`` over a metadata tree
(:mod:`kraft.image.tree`), after Kafka's command handlers: ``ls`` lists one
entry per line when not on a terminal (files first, then ``name:`` before
each directory when there are several), ``find`` prints paths, ``tree``
indents two spaces per level, errors read ``cat: /x: No such file or
directory.``. Paths accept ``.``, ``..`` and per-component globs (``*``,
``?``, ``[...]``, ``{a,b}``), as Kafka's ``GlobVisitor``.

Nothing here does I/O: a :class:`ShellSession` turns a command line into
output text; the interactive loop is ``kraft shell`` (``kraft/tools/shell.py``).
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Iterator

from kraft.image.tree import Dir, File, Node

__all__ = ["ShellSession", "ShellExit", "COMMANDS", "split_path", "strip_dots", "resolve"]


# ----------------------------------------------------------------- paths


def split_path(path: str) -> list[str]:
    """``CommandUtils.splitPath``: repeated and trailing slashes ignored."""
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


def _absolute(path: str, cwd: str) -> list[str]:
    return strip_dots(split_path(path if path.startswith("/") else cwd + "/" + path))


_GLOB_CHARS = re.compile(r"[*?\[{]")


def _expand_braces(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    out: list[str] = []
    for alt in m.group(1).split(","):
        out += _expand_braces(pattern[: m.start()] + alt + pattern[m.end():])
    return out


def _matches(pattern: str, name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in _expand_braces(pattern))


def resolve(root: Dir, path: str, cwd: str = "/") -> list[tuple[list[str], Node]]:
    """Every node ``path`` names (globs expand, in sorted order): Kafka's
    ``GlobVisitor``. Empty when nothing matches."""
    components = _absolute(path, cwd)
    out: list[tuple[list[str], Node]] = []

    def visit(i: int, node: Node, at: list[str]) -> None:
        if i == len(components):
            out.append((at, node))
            return
        if not isinstance(node, Dir):
            return
        component = components[i]
        if not _GLOB_CHARS.search(component):
            child = node.child(component)
            if child is not None:
                visit(i + 1, child, at + [component])
            return
        for name in sorted(node.entries):
            if _matches(component, name):
                visit(i + 1, node.entries[name], at + [name])

    visit(0, root, [])
    return out


def _abs_text(components: list[str]) -> str:
    return "/" + "/".join(components)


# ----------------------------------------------------------------- commands


COMMANDS: dict[str, str] = {
    "cat": "Show the contents of metadata files.",
    "cd": "Set the current working directory.",
    "exit": "Exit the metadata shell.",
    "find": "Search for nodes in the directory hierarchy.",
    "help": "Display this help message.",
    "history": "Print command history.",
    "ls": "List metadata nodes.",
    "man": "Show the help text for a specific command.",
    "pwd": "Print the current working directory.",
    "tree": "Print a tree of metadata nodes.",
}


class ShellExit(Exception):
    """``exit`` was run."""


class ShellSession:
    """State of one shell (working directory, history) over a root that may
    change between commands (a live observer hands in a newer image)."""

    def __init__(self, root: Callable[[], Dir] | Dir) -> None:
        self._root = root
        self.cwd = "/"
        self.history: list[str] = []

    @property
    def root(self) -> Dir:
        return self._root() if callable(self._root) else self._root

    def run(self, line: str) -> str:
        """Run one command line; the text it prints. Raises :class:`ShellExit`."""
        line = line.strip()
        if not line:
            return ""
        self.history.append(line)
        try:
            words = shlex.split(line)
        except ValueError as e:
            return f"error: {e}\n"
        return self.run_words(words)

    def run_words(self, words: list[str]) -> str:
        name, args = words[0], words[1:]
        handler = getattr(self, f"_cmd_{name}", None)
        if handler is None:
            return f"Unknown command {name}. Type help to get a list of commands.\n"
        return "".join(handler(args))

    # -- the commands, named after Kafka's handlers

    def _cmd_ls(self, args: list[str]) -> Iterator[str]:
        root = self.root
        files: list[str] = []
        dirs: list[tuple[str, list[str]]] = []
        for target in [a for a in args if a] or ["."]:
            found = resolve(root, target, self.cwd)
            if not found:
                yield f"ls: {target}: no such file or directory.\n"
            for path, node in found:
                last = path[-1] if path else "/"
                if isinstance(node, Dir):
                    dirs.append((last, sorted(node.entries)))
                else:
                    files.append(last)
        for f in files:
            yield f + "\n"
        need_intro = bool(files) or len(dirs) > 1
        first = not files
        for name, children in dirs:
            if not children:
                continue
            if need_intro:
                yield ("" if first else "\n") + f"{name}:\n"
                first = False
            for child in children:
                yield child + "\n"

    def _cmd_cat(self, args: list[str]) -> Iterator[str]:
        if not args:
            yield "usage: cat targets [targets ...]\n"
            return
        root = self.root
        for target in args:
            found = resolve(root, target, self.cwd)
            if not found:
                yield f"cat: {target}: No such file or directory.\n"
            for _, node in found:
                if isinstance(node, Dir):
                    yield f"cat: {target}: Is a directory\n"
                else:
                    yield node.contents() + "\n"

    def _cmd_cd(self, args: list[str]) -> Iterator[str]:
        target = args[0] if args else "/"
        found = resolve(self.root, target, self.cwd)
        if not found:
            yield f"cd: {target}: no such directory.\n"
            return
        path, node = found[0]
        if not isinstance(node, Dir):
            yield f"cd: {target}: not a directory.\n"
            return
        self.cwd = _abs_text(path)

    def _cmd_pwd(self, args: list[str]) -> Iterator[str]:
        yield self.cwd + "\n"

    def _cmd_find(self, args: list[str]) -> Iterator[str]:
        root = self.root
        for target in [a for a in args if a] or ["."]:
            found = resolve(root, target, self.cwd)
            if not found:
                yield f"find: {target}: no such file or directory.\n"
            for _, node in found:
                yield from _find(target, node)

    def _cmd_tree(self, args: list[str]) -> Iterator[str]:
        root = self.root
        for target in [a for a in args if a] or ["."]:
            found = resolve(root, target, self.cwd)
            if not found:
                yield f"tree: {target}: No such file or directory.\n"
            for _, node in found:
                yield from _print_node(node, 0)

    def _cmd_history(self, args: list[str]) -> Iterator[str]:
        count = len(self.history)
        if args:
            try:
                count = int(args[0])
            except ValueError:
                yield f"history: {args[0]}: numeric argument required\n"
                return
        start = max(0, len(self.history) - count)
        for i in range(start, len(self.history)):
            yield f"{i + 1}: {self.history[i]}\n"

    def _cmd_help(self, args: list[str]) -> Iterator[str]:
        yield "Welcome to the kraft metadata shell (the commands of kafka-metadata-shell.sh).\n\n"
        yield "usage: {" + ",".join(COMMANDS) + "} ...\n\n"
        for name, text in COMMANDS.items():
            yield f"    {name:<21}{text}\n"

    def _cmd_man(self, args: list[str]) -> Iterator[str]:
        if not args:
            yield "usage: man cmd\n"
            return
        text = COMMANDS.get(args[0])
        yield (f"{args[0]}: {text}\n" if text is not None else f"man: unknown command {args[0]}. "
               "Type help to get a list of commands.\n")

    def _cmd_exit(self, args: list[str]) -> Iterator[str]:
        raise ShellExit()
        yield ""  # pragma: no cover - makes this a generator

    # -- completion (readline)

    def complete_path(self, prefix: str) -> list[str]:
        """``CommandUtils.completePath``: children of the directory ``prefix``
        names that start with its last component; directories end in ``/``."""
        components = _absolute(prefix, self.cwd)
        ends_with_slash = prefix.endswith("/") or prefix == ""
        dir_components = components if ends_with_slash else components[:-1]
        last = "" if ends_with_slash else (components[-1] if components else "")
        if prefix in ("..", ".") or prefix.endswith(("/..", "/.")):
            return [prefix + "/"]
        node: Node | None = self.root
        for c in dir_components:
            node = node.child(c) if isinstance(node, Dir) else None
            if node is None:
                return []
        if not isinstance(node, Dir):
            return []
        head = prefix[: prefix.rfind("/") + 1]
        out = []
        for name in sorted(node.entries):
            if name.startswith(last):
                out.append(head + name + ("/" if isinstance(node.entries[name], Dir) else ""))
        return out


def _find(path: str, node: Node) -> Iterator[str]:
    yield path + "\n"
    if isinstance(node, Dir):
        for name in sorted(node.entries):
            yield from _find(path + name if path == "/" else path + "/" + name, node.entries[name])


def _print_node(node: Node, level: int) -> Iterator[str]:
    """Kafka's ``MetadataNode.print`` with ``ShellNodePrinter``."""
    indent = "  " * level
    if isinstance(node, File):
        for line in node.contents().split("\n"):
            yield f"{indent}{line}\n"
        return
    for name in sorted(node.entries):
        yield f"{indent}{name}:\n"
        yield from _print_node(node.entries[name], level + 1)
