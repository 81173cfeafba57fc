"""The metadata shell's commands, one small class each, after Kafka's
``org.apache.kafka.shell.command`` (``CatCommandHandler``, ``CdCommandHandler``,
``FindCommandHandler``, ``LsCommandHandler``, ...) and ``Commands``, the
registry that parses a command line and returns its handler.

A handler writes to an :class:`Output`; an error line (``cat: /x: No such
file or directory.``) marks the command failed, which the non-interactive
shell turns into a non-zero exit status (Kafka 4.0.0 exits 0).

Beyond Kafka's commands: ``diff A B`` (what changed between two committed
offsets or times of a metadata log directory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from kraft.image.glob import absolute_components, visit
from kraft.image.model import MetadataImage
from kraft.image.printing import ShellNodePrinter, java_sorted
from kraft.image.tree import MetadataNode

__all__ = ["Output", "ShellState", "ShellExit", "Handler", "CommandType", "Commands", "TYPES", "complete_path",
           "complete_command", "ImageHistory"]


class ShellExit(Exception):
    """``exit`` was run."""


class ImageHistory(Protocol):
    """What ``diff`` needs: the image at a committed offset or time of the source."""

    def image_at(self, position: str) -> MetadataImage: ...


@dataclass
class ShellState:
    """``MetadataShellState``: the root, the working directory, and what the
    interactive shell adds (history, screen width)."""

    root: Callable[[], MetadataNode]
    working_directory: str = "/"
    history: list[str] = field(default_factory=list)
    #: Columns for ``ls`` (``None``: one entry per line, as when not on a terminal).
    screen_width: int | None = None
    #: The source's history, when it has one (a log directory): ``diff`` needs it.
    images: ImageHistory | None = None
    #: Turns an image into a root (for ``diff``).
    tree_of: Callable[[MetadataImage], MetadataNode] | None = None


class Output:
    """What a command prints; ``failed`` once it printed an error."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.failed = False

    def println(self, text: str = "") -> None:
        self.parts.append(text + "\n")

    def write(self, text: str) -> None:
        self.parts.append(text)

    def error(self, text: str) -> None:
        self.failed = True
        self.println(text)

    def text(self) -> str:
        return "".join(self.parts)


class Handler(Protocol):
    def run(self, state: ShellState, out: Output) -> None: ...


class _Usage(Exception):
    """An argument error: argparse4j's message."""


def _effective_paths(paths: list[str]) -> list[str]:
    """``CommandUtils.getEffectivePaths``."""
    return [p for p in paths if p] or ["."]


def _positionals(args: list[str], minimum: int, maximum: int | None) -> list[str]:
    for a in args:
        if a.startswith("-") and a != "-":
            raise _Usage(f"unrecognized arguments: '{a}'")
    if len(args) < minimum:
        raise _Usage("too few arguments")
    if maximum is not None and len(args) > maximum:
        raise _Usage("unrecognized arguments: '" + " ".join(args[maximum:]) + "'")
    return args


# ----------------------------------------------------------------- handlers


@dataclass
class CatHandler:
    targets: list[str]

    def run(self, state: ShellState, out: Output) -> None:
        root = state.root()
        for target in self.targets:
            found = visit(root, target, state.working_directory)
            if not found:
                out.error(f"cat: {target}: No such file or directory.")
            for info in found:
                if info.node.is_directory:
                    out.error(f"cat: {target}: Is a directory")
                else:
                    printer = ShellNodePrinter()
                    info.node.print(printer)
                    out.write(printer.text())


@dataclass
class CdHandler:
    target: str | None

    def run(self, state: ShellState, out: Output) -> None:
        target = self.target if self.target is not None else "/"
        found = visit(state.root(), target, state.working_directory)
        if not found:
            out.error(f"cd: {target}: no such directory.")
        elif len(found) > 1:
            # Kafka 4.0.0 enters each match in turn and ends in the last one.
            out.error(f"cd: {target}: matches more than one directory: "
                      + ", ".join(i.absolute_path for i in found) + ".")
        elif not found[0].node.is_directory:
            out.error(f"cd: {target}: not a directory.")
        else:
            state.working_directory = found[0].absolute_path


class ExitHandler:
    def run(self, state: ShellState, out: Output) -> None:
        raise ShellExit()


@dataclass
class FindHandler:
    paths: list[str]

    def run(self, state: ShellState, out: Output) -> None:
        root = state.root()
        for path in _effective_paths(self.paths):
            found = visit(root, path, state.working_directory)
            if not found:
                out.error(f"find: {path}: no such file or directory.")
            for info in found:
                for line in _find(path, info.node):
                    out.println(line)


def _find(path: str, node: MetadataNode) -> Iterator[str]:
    """``FindCommandHandler.find``: the path, then every descendant."""
    yield path
    if node.is_directory:
        for name in java_sorted(node.child_names()):
            child = node.child(name)
            if child is not None:
                # As Kafka: only "/" itself is not followed by another slash.
                yield from _find(path + name if path == "/" else path + "/" + name, child)


@dataclass
class HistoryHandler:
    count: int | None

    def run(self, state: ShellState, out: Output) -> None:
        history = state.history
        n = len(history) if self.count is None else max(0, min(self.count, len(history)))
        for index in range(len(history) - n, len(history)):
            out.println(f"{index: 5d}  {history[index]}")  # Java's "% 5d  %s"


@dataclass
class LsHandler:
    targets: list[str]

    def run(self, state: ShellState, out: Output) -> None:
        root = state.root()
        files: list[str] = []
        directories: list[tuple[str, list[str]]] = []
        for target in _effective_paths(self.targets):
            found = visit(root, target, state.working_directory)
            if not found:
                out.error(f"ls: {target}: no such file or directory.")
            for info in found:
                if info.node.is_directory:
                    directories.append((info.last_component, java_sorted(info.node.child_names())))
                else:
                    files.append(info.last_component)
        _print_entries(out, "", state.screen_width, files)
        need_intro = bool(files) or len(directories) > 1
        first_intro = not files
        for name, children in directories:
            intro = ""
            if need_intro:
                intro = ("" if first_intro else "\n") + name + ":"
                first_intro = False
            _print_entries(out, intro, state.screen_width, children)


def _print_entries(out: Output, intro: str, width: int | None, entries: list[str]) -> None:
    """``LsCommandHandler.printEntries``: column-major, as many columns as fit."""
    if not entries:
        return
    if intro:
        out.println(intro)
    widths, per_column = _column_schema(width, entries)
    lines = (len(entries) + len(widths) - 1) // len(widths)
    for line in range(lines):
        row = []
        for column in range(len(widths)):
            index = line + column * per_column
            if index < len(entries):
                entry = entries[index]
                row.append(entry if column == len(widths) - 1 else entry.ljust(widths[column]))
        out.println("".join(row))


def _column_schema(width: int | None, entries: list[str]) -> tuple[list[int], int]:
    """``LsCommandHandler.calculateColumnSchema``: column widths and entries per column."""
    if width is None or width // 4 <= 1:
        return [0], len(entries)
    for columns in range(width // 4, 1, -1):
        per_column = (len(entries) + columns - 1) // columns
        widths = [0] * columns
        for i, entry in enumerate(entries):
            widths[i // per_column] = max(widths[i // per_column], len(entry) + 2)
        if widths[-1] != 0 and sum(widths) <= width:
            return widths, per_column
    return [0], len(entries)


@dataclass
class ManHandler:
    command: str

    def run(self, state: ShellState, out: Output) -> None:
        command_type = TYPES.get(self.command)
        if command_type is None:
            out.error(f"man: unknown command {self.command}. Type help to get a list of commands.")
            return
        out.println(f"{command_type.name}: {command_type.description}")
        out.println()
        out.write(command_type.help_text())


class PwdHandler:
    def run(self, state: ShellState, out: Output) -> None:
        out.println(state.working_directory)


@dataclass
class TreeHandler:
    targets: list[str]

    def run(self, state: ShellState, out: Output) -> None:
        root = state.root()
        for target in self.targets:
            found = visit(root, target, state.working_directory)
            if not found:
                out.error(f"tree: {target}: No such file or directory.")
            for info in found:
                printer = ShellNodePrinter()
                info.node.print(printer)
                out.write(printer.text())


class HelpHandler:
    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive

    def run(self, state: ShellState, out: Output) -> None:
        out.println("Welcome to the kraft metadata shell (the commands of Apache Kafka's metadata shell).")
        out.println()
        out.write(Commands(self.interactive).help_text())


@dataclass
class DiffHandler:
    """``diff A B``: what changed between the images at A and B."""

    before: str
    after: str

    def run(self, state: ShellState, out: Output) -> None:
        from kraft.image.diff import diff_trees

        if state.images is None or state.tree_of is None:
            out.error("diff: needs a metadata log directory: start the shell with --directory DIR")
            return
        try:
            before = state.images.image_at(self.before)
            after = state.images.image_at(self.after)
        except ValueError as e:
            out.error(f"diff: {e}")
            return
        for line in diff_trees(state.tree_of(before), state.tree_of(after)):
            out.println(line)


@dataclass
class ErroneousHandler:
    message: str

    def run(self, state: ShellState, out: Output) -> None:
        out.error(self.message)


class NoOpHandler:
    def run(self, state: ShellState, out: Output) -> None:
        pass


# ----------------------------------------------------------------- the registry


@dataclass(frozen=True)
class CommandType:
    """``Commands.Type``: a command's name, help, arguments and completion."""

    name: str
    description: str
    shell_only: bool
    arguments: tuple[tuple[str, str, str], ...]  # (name, nargs, help)
    create: Callable[[list[str], bool], Handler]
    completes_paths: str = "none"  # "none", "last" (every argument) or "first" (one argument)

    def help_text(self) -> str:
        usage = " ".join(_usage_word(n, nargs) for n, nargs, _ in self.arguments)
        lines = [f"usage: {self.name} {usage}".rstrip(), ""]
        if self.arguments:
            lines.append("positional arguments:")
            for n, _, text in self.arguments:
                lines.append(f"  {n:<22} {text}" if len(n) < 22 else f"  {n}\n  {'':<22} {text}")
        return "\n".join(lines) + "\n"


def _usage_word(name: str, nargs: str) -> str:
    return {"+": f"{name} [{name} ...]", "*": f"[{name} [{name} ...]]", "?": f"[{name}]", "1": name}[nargs]


def _no_arguments(args: list[str], handler: Handler) -> Handler:
    _positionals(args, 0, 0)
    return handler


def _history_count(args: list[str]) -> int | None:
    if not args:
        return None
    try:
        return int(args[0])
    except ValueError:
        raise _Usage(f"argument numEntriesToShow: could not convert '{args[0]}' to Integer "
                      f"(For input string: \"{args[0]}\")") from None


TYPES: dict[str, CommandType] = {t.name: t for t in (
    CommandType("cat", "Show the contents of metadata files.", False,
                (("targets", "+", "The metadata files to display."),),
                lambda a, i: CatHandler(_positionals(a, 1, None)), "last"),
    CommandType("cd", "Set the current working directory.", True,
                (("target", "?", "The directory to change to."),),
                lambda a, i: CdHandler(next(iter(_positionals(a, 0, 1)), None)), "first"),
    CommandType("diff", "Show what changed between two offsets or times (a log directory only).", False,
                (("before", "1", "An offset or an ISO-8601 time."), ("after", "1", "An offset or an ISO-8601 time.")),
                lambda a, i: DiffHandler(*_positionals(a, 2, 2))),
    CommandType("exit", "Exit the metadata shell.", True, (), lambda a, i: _no_arguments(a, ExitHandler())),
    CommandType("find", "Search for nodes in the directory hierarchy.", False,
                (("paths", "*", "The paths to start at."),),
                lambda a, i: FindHandler(_positionals(a, 0, None)), "last"),
    CommandType("help", "Display this help message.", True, (),
                lambda a, i: _no_arguments(a, HelpHandler(i))),
    CommandType("history", "Print command history.", True,
                (("numEntriesToShow", "?", "The number of entries to show."),),
                lambda a, i: HistoryHandler(_history_count(_positionals(a, 0, 1)))),
    CommandType("ls", "List metadata nodes.", False, (("targets", "*", "The metadata node paths to list."),),
                lambda a, i: LsHandler(_positionals(a, 0, None)), "last"),
    CommandType("man", "Show the help text for a specific command.", True,
                (("cmd", "1", "The command to get help text for."),),
                lambda a, i: ManHandler(_positionals(a, 1, 1)[0])),
    CommandType("pwd", "Print the current working directory.", True, (),
                lambda a, i: _no_arguments(a, PwdHandler())),
    CommandType("tree", "Show the contents of metadata nodes in a tree structure.", False,
                (("targets", "+", "The metadata nodes to display."),),
                lambda a, i: TreeHandler(_positionals(a, 1, None)), "last"),
)}


class Commands:
    """``Commands``: the command types a shell offers (interactive shells
    offer all; a command given on the command line only those that are not
    shell-only, as Kafka's ``Commands(false)``) and the parser."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self.types = {n: t for n, t in TYPES.items() if interactive or not t.shell_only}

    def parse(self, words: list[str]) -> Handler:
        """``Commands.parseCommand``: never raises; a bad line gives an
        :class:`ErroneousHandler` with argparse4j's message."""
        words = list(words)
        while words and not words[-1]:
            words.pop()
        if not words:
            return NoOpHandler()
        name, args = words[0], words[1:]
        command_type = self.types.get(name)
        if command_type is None:
            matches = [n for n in self.types if n.startswith(name)] if name else []
            if len(matches) == 1:
                return ErroneousHandler(f"invalid choice: '{name}': did you mean '{matches[0]}'?")
            if len(matches) > 1:
                return ErroneousHandler(f"ambiguous command: '{name}' could match {', '.join(matches)}")
            choices = ", ".join(f"'{n}'" for n in self.types)
            return ErroneousHandler(f"invalid choice: '{name}' (choose from {choices})")
        try:
            return command_type.create(args, self.interactive)
        except _Usage as e:
            return ErroneousHandler(str(e))

    def help_text(self) -> str:
        names = ",".join(self.types)
        lines = [f"usage: {{{names}}} ...", "", "positional arguments:", f"  {{{names}}}"]
        for t in self.types.values():
            lines.append(f"    {t.name:<21}{t.description}")
        return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- completion


def complete_command(prefix: str, interactive: bool = True) -> list[str]:
    """``CommandUtils.completeCommand``."""
    return [n for n in Commands(interactive).types if n.startswith(prefix)]


def complete_path(state: ShellState, prefix: str) -> list[str]:
    """``CommandUtils.completePath``: the children of the directory ``prefix``
    names that start with its last component; directories end in ``/``."""
    components = absolute_components(prefix, state.working_directory)
    directories = len(components) if prefix.endswith("/") else len(components) - 1
    node: MetadataNode | None = state.root()
    for c in components[:max(directories, 0)]:
        node = node.child(c) if node is not None and node.is_directory else None
        if node is None or not node.is_directory:
            return []
    assert node is not None
    last = components[directories] if 0 <= directories < len(components) else ""
    head = prefix[: prefix.rfind("/") + 1]
    out = []
    for name in java_sorted(node.child_names()):
        if name.startswith(last):
            child = node.child(name)
            out.append(head + name + ("/" if child is not None and child.is_directory else ""))
    return out
