"""Real ``kraft node start`` processes for the multi-process tests.

Each voter runs with the hidden demo load (``--demo-append-rate``: numbered
records appended while it leads) and ``--demo-ack-log``: one line per record
the process acknowledged as committed, written before the next append, so
the test knows every record any node ever reported committed, even from a
process it killed with SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import trio

from kraft.tools.bench import node_process
from tests.harness.poll import settle, until_async

#: What ``kraft node start`` logs once SIGUSR1 stops its demo writer.
DEMO_WRITER_STARTED = "demo writer started"


class NodeProcess:
    """A voter process with the demo load: the benches' process
    (:class:`kraft.tools.bench.node_process.NodeProcess`, which owns the
    signals) with the blocking helpers the tests use."""

    def __init__(self, node_id: int, config: Path, root: Path, append_rate: float,
                 env: dict[str, str] | None = None, log_level: str = "INFO",
                 launcher: tuple[str, ...] = node_process.KRAFT) -> None:
        self.node_id = node_id
        self.config = config
        self.log_path = root / f"node-{node_id}.out"
        self.ack_path = root / f"acks-{node_id}.tsv"
        self.append_rate = append_rate
        #: ``launcher``: what runs ``kraft ...`` (e.g. a Kafka-played node's);
        #: ``env``: the process environment (e.g. LD_PRELOAD of a fault shim), None: ours.
        self.process = node_process.NodeProcess(node_id, config, self.log_path, self.ack_path, append_rate,
                                                tuple(launcher), env=env, log_level=log_level)

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.process.proc

    @property
    def starts(self) -> int:
        return self.process.starts

    @property
    def alive(self) -> bool:
        return self.process.alive

    def start(self) -> None:
        assert not self.alive, f"node {self.node_id} is already running"
        self.process.start()

    def kill(self) -> None:
        """kill -9: no shutdown, no flush beyond what the node already did."""
        assert self.proc is not None
        self.process.kill_signal()
        self.process.wait_stopped()

    def _load_ready(self) -> bool:
        return not self.alive or self.output().count(DEMO_WRITER_STARTED) >= self.starts

    def _send_stop(self) -> None:
        self.process.send(signal.SIGUSR1)

    def stop_load(self, timeout_s: float = 30) -> None:
        """SIGUSR1, once the demo writer listens for it (before that the
        signal's default action would kill the process). Blocks."""
        settle(self._load_ready, bool, timeout_s, interval_s=0.05)
        self._send_stop()

    async def stop_load_async(self) -> None:
        """:meth:`stop_load` for trio tests (in-process nodes keep running)."""
        await until_async("the demo writer to listen for SIGUSR1", self._load_ready, interval_s=0.05)
        self._send_stop()

    def terminate(self, timeout_s: float = 15) -> int | None:
        """SIGTERM (a leader hands over first); SIGKILL if it hangs. The exit code."""
        if self.proc is None:
            return None
        return self.process.stop(timeout_s)

    def output(self) -> str:
        return self.process.output()

    def acks(self) -> list[tuple[int, bytes]]:
        """(offset, record) for every record this node acknowledged."""
        return self.process.acknowledged()


def snapshot_offsets(metadata_log_dir: Path) -> list[int]:
    """End offsets of the snapshots a node has on disk (a read-only listing)."""
    from kraft.records.log import metadata_partition_dir
    from kraft.records.snapshot import list_snapshot_paths

    part = metadata_partition_dir(metadata_log_dir)
    if not part.is_dir():
        return []
    return [p.snapshot_id.offset for p in list_snapshot_paths(part) if not p.partial and not p.deleted]


def first_segment_base(metadata_log_dir: Path) -> int:
    from kraft.records.log import metadata_partition_dir

    bases = [int(p.name.split(".")[0]) for p in metadata_partition_dir(metadata_log_dir).glob("*.log")]
    return min(bases) if bases else 0
