"""The interactive ``kraft shell`` in a real pseudo-terminal: a user types
commands, presses Tab to complete a path, and finds the history of the last
session again (``~/.kraft_shell_history``; HOME is a temp dir here)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from tests.conftest import fixture_path

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]|\r")


class Terminal:
    """A child process on a pty, 100 columns by 30 lines."""

    def __init__(self, args: list[str], home: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = dict(os.environ, HOME=str(home), TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                                     start_new_session=True)
        os.close(slave)
        self.master = master
        self.raw = b""

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def screen(self) -> str:
        return _ANSI.sub("", self.raw.decode("utf-8", "replace"))

    def expect(self, pattern: str, timeout_s: float = 60.0) -> str:
        """Read until the de-escaped output matches ``pattern`` (a regex)."""
        deadline = time.monotonic() + timeout_s
        while not re.search(pattern, self.screen(), re.S):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {pattern!r} within {timeout_s} s; screen:\n{self.screen()[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], min(remaining, 1.0))
            if ready:
                try:
                    self.raw += os.read(self.master, 65536)
                except OSError:  # the child closed the pty
                    assert re.search(pattern, self.screen(), re.S), self.screen()[-2000:]
                    break
        return self.screen()

    def close(self) -> int:
        """Wait for the child to exit, reading what it still writes (a child
        blocked on a full pty would never exit)."""
        deadline = time.monotonic() + 60
        try:
            while self.proc.poll() is None and time.monotonic() < deadline:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if ready:
                    try:
                        self.raw += os.read(self.master, 65536)
                    except OSError:
                        pass
            return self.proc.wait(timeout=5)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)
            os.close(self.master)


def test_interactive_editing_completion_and_history(tmp_path: Path) -> None:
    snapshot = fixture_path("kafka-4.0-real", "broker4", "__cluster_metadata-0",
                           "00000000000000000358-0000000001.checkpoint")
    args = [sys.executable, "-m", "kraft.cli", "shell", "--snapshot", str(snapshot)]
    term = Terminal(args, tmp_path)
    try:
        term.expect(r"\[ Kafka Metadata Shell \]\n>>")
        # Tab completes the one path that starts with /image/topics/byName/al.
        term.type("ls /image/topics/byName/al\t")
        term.expect(r"ls /image/topics/byName/alpha/")
        term.type("\r")
        term.expect(r"\n0  id  name\n>>")  # columns, as on a terminal
        term.type("cd /image/clu\t")
        term.expect(r"cd /image/cluster/")
        term.type("\r")
        term.type("pwd\r")
        term.expect(r"\n/image/cluster\n>>")
        # Line editing: type a typo, move left over it and fix it.
        term.type("cat brokerz/4")
        term.type("\x1b[D\x1b[D\x7fs\r")  # Left, Left, Backspace, 's'
        term.expect(r"BrokerRegistration\(id=4, epoch=8, ")
        term.type("exit\r")
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    history_file = tmp_path / ".kraft_shell_history"
    assert "ls /image/topics/byName/alpha/" in history_file.read_text()

    # A new session remembers: `history` lists the earlier session's lines, and
    # Up recalls the last one.
    term = Terminal(args, tmp_path)
    try:
        term.expect(r">>")
        term.type("history\r")
        term.expect(r"    0  ls /image/topics/byName/alpha/\n    1  cd /image/cluster/\n    2  pwd\n"
                      r"    3  cat brokers/4\n    4  exit\n    5  history\n>>")
        term.type("\x1b[A")  # Up: the previous line, `history`
        term.type("\x1b[A\x1b[A")  # ... then `exit`, then `cat brokers/4`
        term.type("\r")
        term.expect(r"cat: brokers/4: No such file or directory\.")  # cwd is / again
        term.type("ls /nothing-yet")
        term.type("\x03")  # Ctrl-C drops the line, as Kafka's shell: "^C" and a new prompt
        term.expect(r"\^C\s*>>")  # a new line or a cursor move, as the terminal renders it
        term.type("\x04")  # Ctrl-D ends the shell
        assert term.close() == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
