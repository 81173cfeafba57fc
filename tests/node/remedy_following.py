"""Following a remedy kraft printed, as an operator would: the commands are
read from the text (each one in backquotes, in order) and run literally by a
shell that has this checkout's ``kraft`` on PATH; nothing in them is
substituted. Then the quorum must be healthy: every configured voter is a
voter, no node is listed twice, ``kraft doctor`` (live and offline over
every config) finds nothing."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.harness import cli
from tests.harness.poll import until


#: Bound of each wait: ends a hung test, not a speed requirement.
HANG_S = 90


def kraft_env(root: Path) -> dict[str, str]:
    """PATH with a `kraft` that is this checkout, as an operator's shell has it."""
    bin_dir = root / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "kraft"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kraft.cli "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def corrupt_middle_batch(segment: Path) -> int:
    """Flip a byte inside a batch in the middle of the segment (its CRC then
    fails, and CRC-valid batches follow it): the byte position changed."""
    data = bytearray(segment.read_bytes())
    position = len(data) // 2
    data[position] ^= 0xFF
    segment.write_bytes(bytes(data))
    return position


def commands_of(remedy: str) -> list[str]:
    """The commands of a remedy line, in the order given."""
    return re.findall(r"`([^`]+)`", remedy)


class Operator:
    """Runs the commands of a remedy, the long-running ``kraft node start``
    in the background (stopped at :meth:`close`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = kraft_env(root)
        self.started: list[subprocess.Popen[bytes]] = []

    def run(self, command: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(shlex.split(command), capture_output=True, text=True, env=self.env, timeout=120)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        return done

    def start(self, command: str) -> None:
        assert shlex.split(command)[:3] == ["kraft", "node", "start"], command
        with open(self.root / f"followed-{len(self.started)}.out", "wb") as sink:
            self.started.append(subprocess.Popen(shlex.split(command), stdout=sink, stderr=subprocess.STDOUT,
                                                 env=self.env))

    def follow(self, commands: list[str], after_start: Callable[[], None]) -> None:
        """Every command in order; ``after_start``: what the operator waits
        for once the node runs again (it has caught up) before the next one."""
        for command in commands:
            if shlex.split(command)[:3] == ["kraft", "node", "start"]:
                self.start(command)
                after_start()
            else:
                self.run(command)

    def kraft(self, *args: str) -> subprocess.CompletedProcess[str]:
        return cli.run(*args, env=self.env)

    def close(self) -> None:
        for proc in self.started:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def replication_rows(operator: Operator, bootstrap: str) -> list[list[str]]:
    """``describe --replication`` rows (NodeId, DirectoryId, LogEndOffset, Lag, ..., Status); [] if no answer."""
    out = operator.kraft("metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--replication")
    if out.returncode != 0:
        return []
    return [line.split() for line in out.stdout.splitlines()[1:] if line.strip()]


def healthy(operator: Operator, ports: Mapping[int, int], configs: Mapping[int, Path]) -> str:
    """Why the quorum is not healthy yet ('' when it is): every node of
    ``ports`` a voter exactly once, no voter's directory an observer, doctor clean."""
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    rows = replication_rows(operator, bootstrap)
    voters = [r for r in rows if r[-1] in ("Leader", "Follower")]
    # A voter's directory is never an observer too. The directory a
    # replacement removed may stay listed as an observer: the leader keeps
    # an observer that fetched within Kafka's
    # LeaderState.OBSERVER_SESSION_TIMEOUT_MS (5 min).
    observer_dirs = {r[1] for r in rows if r[-1] == "Observer"}
    if sorted(int(r[0]) for r in voters) != sorted(ports) or observer_dirs & {r[1] for r in voters}:
        return f"replication: {rows}"
    doctor = operator.kraft("doctor", "--bootstrap-controller", bootstrap,
                            *(a for c in configs.values() for a in ("--config", str(c))))
    if doctor.returncode != 0:
        return f"doctor exit {doctor.returncode}: {doctor.stdout}{doctor.stderr}"
    return ""


def wait_healthy(operator: Operator, ports: Mapping[int, int], configs: Mapping[int, Path]) -> None:
    last: list[str] = []

    def check() -> bool:
        last[:] = [healthy(operator, ports, configs)]
        return not last[0]
    try:
        until("a healthy quorum", check, timeout_s=HANG_S)
    except AssertionError:
        raise AssertionError(f"not healthy: {last}") from None
