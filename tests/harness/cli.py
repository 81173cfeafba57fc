"""The tests' one CLI runner, in two modes.

:func:`invoke` runs a click command in this process (click's
``CliRunner``: exit code, stdout, stderr and the exception in one
``Result``), by default ``kraft`` itself; a test of the click plumbing
passes its own command. :func:`run` runs ``kraft`` as a user does, in a
process of its own (``python -m kraft.cli`` under this interpreter, so
the worktree's install answers, not whatever ``kraft`` is first on PATH);
:func:`run_async` is its trio form, and :func:`kraft_args` the command line
for a long-lived process a test starts and watches itself (a node).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click
    from click.testing import Result

__all__ = ["invoke", "kraft_args", "run", "run_async"]

#: The bound on one run: it ends a hung process, it is no speed requirement.
TIMEOUT_S = 120.0


def invoke(args: Sequence[str], *, command: click.Command | None = None, input: str | bytes | None = None,
           env: Mapping[str, str | None] | None = None, catch_exceptions: bool = True) -> Result:
    """``command`` (``kraft``'s root when None) run in this process on ``args``."""
    from click.testing import CliRunner

    if command is None:
        from kraft.cli import main as command
    return CliRunner().invoke(command, list(args), input=input, env=env, catch_exceptions=catch_exceptions)


def kraft_args(*args: str) -> list[str]:
    """``kraft ARGS`` as this interpreter runs it (for a process a test
    starts and watches itself)."""
    return [sys.executable, "-m", "kraft.cli", *args]


def run(*args: str, timeout: float = TIMEOUT_S, input: str | None = None, env: Mapping[str, str] | None = None,
        cwd: Path | None = None, check: bool = False,
        python_options: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``kraft ARGS`` run to its end in a process of its own, its output as
    text. Its stdin is ``input``, or nothing (a command that would ask the
    terminal reads end of file instead of waiting for a test).
    ``python_options`` go to the interpreter (``-X importtime``); ``check``
    raises on a non-zero exit, as :func:`subprocess.run` does."""
    command = [sys.executable, *python_options, "-m", "kraft.cli", *args]
    stdin = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=check,
                          env=None if env is None else dict(env), **stdin)  # type: ignore[call-overload]


async def run_async(*args: str, cwd: Path | None = None,
                    env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """:func:`run` for a trio test: the process awaited, its output as
    bytes, no bound of its own (the caller's ``trio.fail_after`` is it)."""
    import trio

    return await trio.run_process(kraft_args(*args), capture_stdout=True, capture_stderr=True, check=False, cwd=cwd,
                                  env=None if env is None else dict(env))
