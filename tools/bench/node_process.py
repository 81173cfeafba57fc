"""Process faults on ``kraft node start`` subprocesses: the one place a
bench pauses (SIGSTOP), resumes (SIGCONT), kills (kill -9) and restarts a
node, each fault logged at its start and at its end.

``kraft bench chaos`` uses it (:mod:`kraft.tools.bench.chaos.run`, whose
run is the fault log: history, summary, availability), and so do the
multi-process tests (tests/harness/processes.py; the witness hand-over rounds of
tests/node/witness_handover.py log through :class:`SayFaultLog`)::

    fault = pause(log, node, "SIGSTOP: the follower falls behind")
    ...
    resume(log, node, fault)
    await kill_for(log, node, down_s=2.0)     # kill -9, restarted after 2 s
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

__all__ = ["KRAFT", "FaultLog", "NodeProcess", "SayFaultLog", "kill", "kill_for", "pause", "pause_for",
           "read_acks", "restart", "resume"]

#: ``python`` arguments that run ``kraft``.
KRAFT = ("-m", "kraft.cli")


@dataclass
class NodeProcess:
    """One ``kraft node start`` process (restarted as often as a bench
    likes; ``out`` holds every start's output). With ``acks`` it runs the
    demo load: appends ``rate`` records/s while it leads and logs each one
    acknowledged as committed there."""

    node_id: int
    config: Path
    out: Path
    acks: Path | None = None
    rate: float = 50.0
    #: ``python`` arguments that run ``kraft`` (a Kafka-played node's launcher, say).
    launcher: tuple[str, ...] = KRAFT
    #: Put before ``python`` (``ip netns exec NAME``).
    prefix: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    #: ``--log-level`` (None: the command's default, INFO).
    log_level: str | None = None
    #: With ``acks``: the load's complete history (every append's invocation and outcome, JSON lines).
    history: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    paused: bool = False
    #: Stopped by a fault: not an unexpected exit (a bench restarts the others).
    expected_down: bool = False
    #: Where the current start's output begins in ``out``.
    out_start: int = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def output(self) -> str:
        """Every start's output so far (role changes, hand-overs)."""
        return self.out.read_text(errors="replace") if self.out.exists() else ""

    def acknowledged(self) -> list[tuple[int, bytes]]:
        """The demo load's ack log: (offset, value) of every record acknowledged as committed."""
        return [] if self.acks is None else read_acks(self.acks)

    def start(self) -> None:
        args = [sys.executable, *self.launcher, "node", "start", "--config", str(self.config)]
        if self.log_level is not None:
            args += ["--log-level", self.log_level]
        if self.acks is not None:
            args += ["--demo-append-rate", str(self.rate), "--demo-ack-log", str(self.acks)]
            if self.history is not None:
                args += ["--demo-history", str(self.history)]
        self.out_start = self.out.stat().st_size if self.out.exists() else 0
        with open(self.out, "ab") as out:
            # A session of its own: a Ctrl-C at the terminal reaches the bench, which stops everything.
            self.proc = subprocess.Popen(self.prefix + args, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                         start_new_session=True)
        self.starts += 1
        self.paused = False
        self.expected_down = False

    def send(self, sig: signal.Signals) -> None:
        """``sig`` to the process if it runs (SIGUSR1 stops the demo load)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stop_signal(self) -> None:
        """SIGSTOP: the process stands still, its sockets and files open."""
        self.paused = True
        self.send(signal.SIGSTOP)

    def continue_signal(self) -> None:
        self.send(signal.SIGCONT)
        self.paused = False

    def kill_signal(self) -> None:
        """kill -9 (a paused process is continued first, so that it dies at once)."""
        self.expected_down = True
        if self.paused:
            self.continue_signal()
        self.send(signal.SIGKILL)

    async def exited(self, timeout_s: float = 30.0) -> int | None:
        """The exit code once the process is gone; None if it still runs after ``timeout_s``."""
        import trio

        if self.proc is None:
            return None
        with trio.move_on_after(timeout_s):
            while self.proc.poll() is None:
                await trio.sleep(0.05)
        return self.proc.poll()

    def terminate(self) -> None:
        """SIGTERM (continued first if paused): a leader hands over, then the node exits."""
        if self.paused:
            self.continue_signal()
        self.send(signal.SIGTERM)

    def wait_stopped(self, timeout_s: float = 30.0) -> int | None:
        """The exit code, killed -9 if it is not gone within ``timeout_s``."""
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode

    def stop(self, timeout_s: float = 30.0) -> int | None:
        self.terminate()
        return self.wait_stopped(timeout_s)


def read_acks(path: Path) -> list[tuple[int, bytes]]:
    """The client's ack log: ``OFFSET<TAB>RECORD`` lines (a line cut by a kill was never acknowledged)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        offset, _, value = line.partition("\t")
        if value and offset.isdigit():
            out.append((int(offset), value.encode()))
    return out


class FaultLog(Protocol):
    """Where a fault is logged at its start and at its end."""

    def begin(self, kind: str, nodes: list[int], detail: str) -> dict[str, Any]: ...

    def end(self, fault: dict[str, Any], detail: str = "healed") -> None: ...


def fault_line(t: float, fault: dict[str, Any], leader: int | None = None, end: str | None = None) -> str:
    """A fault's line at its start (``end`` None) or at its end, ``t`` seconds into the faults."""
    if end is not None:
        return f"  {t:6.1f} s  {fault['kind']:10} #{fault['id']} end: {end}"
    nodes = fault["nodes"]
    tag = ", ".join(f"{n}{' (leader)' if n == leader else ''}" for n in nodes)
    return (f"  {t:6.1f} s  {fault['kind']:10} #{fault['id']} start, node{'s' if len(nodes) > 1 else ''} "
            f"{tag}: {fault['detail']}")


class SayFaultLog:
    """A fault log that says each fault's start and end in a line (as the
    chaos run does), timed from its creation; ``faults`` keeps them."""

    def __init__(self, say: Callable[[str], None], leader: Callable[[], int | None] = lambda: None) -> None:
        self.say = say
        self.leader = leader
        self.t0 = time.monotonic()
        self.faults: list[dict[str, Any]] = []

    def begin(self, kind: str, nodes: list[int], detail: str) -> dict[str, Any]:
        fault: dict[str, Any] = {"id": len(self.faults) + 1, "kind": kind, "nodes": nodes, "detail": detail,
                 "t": time.monotonic() - self.t0}
        self.faults.append(fault)
        self.say(fault_line(fault["t"], fault, self.leader()))
        return fault

    def end(self, fault: dict[str, Any], detail: str = "healed") -> None:
        fault["end"] = time.monotonic() - self.t0
        self.say(fault_line(fault["end"], fault, end=detail))


def pause(log: FaultLog, node: NodeProcess, detail: str) -> dict[str, Any]:
    """SIGSTOP ``node``; the fault, for :func:`resume`."""
    fault = log.begin("pause", [node.node_id], detail)
    node.stop_signal()
    return fault


def resume(log: FaultLog, node: NodeProcess, fault: dict[str, Any]) -> None:
    node.continue_signal()
    log.end(fault, "SIGCONT")


async def kill(log: FaultLog, node: NodeProcess, detail: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """kill -9 ``node`` and wait until it is gone; the fault, for :func:`restart`."""
    fault = log.begin("kill", [node.node_id], detail)
    node.kill_signal()
    await node.exited(timeout_s)
    return fault


def restart(log: FaultLog, node: NodeProcess, fault: dict[str, Any], detail: str = "restarted") -> None:
    node.start()
    log.end(fault, detail)


async def pause_for(log: FaultLog, node: NodeProcess, hold_s: float) -> None:
    import trio

    fault = pause(log, node, f"SIGSTOP for {hold_s:.1f} s, then SIGCONT")
    await trio.sleep(hold_s)
    resume(log, node, fault)


async def kill_for(log: FaultLog, node: NodeProcess, down_s: float) -> None:
    import trio

    fault = await kill(log, node, f"kill -9, restarted after {down_s:.1f} s")
    await trio.sleep(down_s)
    restart(log, node, fault)
