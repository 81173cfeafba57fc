"""``kraft bench chaos --load client``: the load as a process of its own
(:mod:`kraft.tools.bench.chaos_client`) beside the voters, which run
Kafka's controller (``kraft.controller=true``) and no demo load. Under the
partition nemeses the nodes are in network namespaces, and so is the
client: one of its own on the same bridge (:data:`CLIENT_NODE`), which no
partition cuts (a client outside the nodes' quarrels, as Jepsen's talks to
whichever node answers): a node cut off from the majority answers it with
timeouts or NOT_CONTROLLER, the ``info`` the checker counts both ways.

The run watches the client's history for ``ok`` lines (its liveness
signal, as the demo load's ack logs are otherwise), stops the client with
SIGINT before the final settle, and judges the history with
:func:`~kraft.tools.bench.chaos.checker.check_client_load`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft.tools.bench.chaos.checker import check_client_load
from kraft.tools.bench.chaos.operations import appended_lines, read_named_operations
from kraft.tools.bench.chaos.segments import NodeFiles

__all__ = ["CLIENT_NODE", "LOADS", "ClientLoad"]

#: The client's place on the partition nemeses' bridge (address 10.211.0.200): no node has this id.
CLIENT_NODE = 200

#: ``--load``: each voter's own demo load, the independent client, or a
#: Kafka cluster on the controllers with Kafka's VerifiableProducer (:mod:`.kafka_load`).
LOADS = ("demo", "client", "kafka")


@dataclass
class ClientLoad:
    """The client process: started once, stopped at the end of the run."""

    history: Path
    out: Path
    bootstrap: list[tuple[str, int]]
    rate: float
    proc: subprocess.Popen[bytes] | None = None
    read_pos: int = 0
    #: Put before ``python`` (``ip netns exec NAME``: the client's namespace under the partition nemeses).
    prefix: list[str] = field(default_factory=list)

    def start(self) -> None:
        with self.out.open("ab") as out:
            self.proc = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "kraft.tools.bench.chaos_client", "--bootstrap-controller",
                 ",".join(f"{h}:{p}" for h, p in self.bootstrap), "--history", str(self.history),
                 "--rate", f"{self.rate:g}"], stdout=out, stderr=subprocess.STDOUT)

    def new_oks(self) -> int:
        """How many operations completed ok since the last call."""
        lines, self.read_pos = appended_lines(self.history, self.read_pos)
        return sum(1 for line in lines.splitlines() if b'"type": "ok"' in line)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGINT (the client finishes its operation's history and exits), then kill."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def close(self) -> None:
        """Stop it on a way out of the run that judges nothing."""
        self.stop(5.0)

    def verdict(self, files: dict[int, NodeFiles], voters: set[int]) -> dict[str, Any]:
        from kraft.tools.bench.chaos_client import QUOTA_KEY

        return check_client_load(read_named_operations(self.history), files, voters, QUOTA_KEY)
