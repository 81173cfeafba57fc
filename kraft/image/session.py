"""One metadata shell session: a line in, the text Kafka's shell would print
out. No I/O: the prompt and the terminal are ``kraft shell``'s
(:mod:`kraft.tools.shell`); the commands are :mod:`kraft.image.commands`.

Lines are split into words as a shell does (quotes group, backslash
escapes), as jline's ``DefaultParser`` splits them for Kafka.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from kraft.image.commands import (
    TYPES,
    Commands,
    ImageHistory,
    Output,
    ShellExit,
    ShellState,
    complete_command,
    complete_path,
)
from kraft.image.model import MetadataImage
from kraft.image.tree import MetadataNode

__all__ = ["ShellSession", "ShellExit", "Result"]


class Result:
    """A command's output and whether it failed."""

    __slots__ = ("text", "failed")

    def __init__(self, text: str, failed: bool) -> None:
        self.text = text
        self.failed = failed


class ShellSession:
    """The state of one shell (working directory, history) over a root that
    may change between commands (a live observer hands in newer images)."""

    def __init__(self, root: Callable[[], MetadataNode] | MetadataNode, *, interactive: bool = True,
                 images: ImageHistory | None = None,
                 tree_of: Callable[[MetadataImage], MetadataNode] | None = None,
                 history: list[str] | None = None) -> None:
        provider = root if callable(root) else (lambda: root)
        self.state = ShellState(provider, history=history if history is not None else [], images=images,
                                tree_of=tree_of)
        self.commands = Commands(interactive)

    @property
    def working_directory(self) -> str:
        return self.state.working_directory

    def run_line(self, line: str) -> Result:
        """Run one command line (recorded in the history when not blank).
        Raises :class:`ShellExit` on ``exit``."""
        if line.strip():
            self.state.history.append(line)
        try:
            words = shlex.split(line)
        except ValueError as e:
            return Result(f"{e}\n", True)
        return self.run_words(words)

    def run_words(self, words: list[str]) -> Result:
        out = Output()
        self.commands.parse(words).run(self.state, out)
        return Result(out.text(), out.failed)

    def run(self, line: str) -> str:
        """The text of :meth:`run_line`."""
        return self.run_line(line).text

    def complete(self, line_before_cursor: str) -> list[str]:
        """Completions of the word under the cursor (``MetadataShellCompleter``):
        a command name first, then paths for commands that take paths."""
        try:
            words = shlex.split(line_before_cursor)
        except ValueError:
            return []
        if line_before_cursor.endswith((" ", "\t")) or not words:
            words.append("")
        if len(words) == 1:
            return complete_command(words[0], self.commands.interactive)
        if words[0] == "man" and len(words) == 2:  # ManCommandType.completeNext: command names
            return complete_command(words[1], True)
        command_type = TYPES.get(words[0])
        if command_type is None or command_type.completes_paths == "none":
            return []
        if command_type.completes_paths == "first" and len(words) != 2:
            return []
        return complete_path(self.state, words[-1])
