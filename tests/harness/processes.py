"""The multi-process cluster: real ``kraft node start`` processes
(:class:`NodeProcess`; :class:`ProcessCluster` for a quorum of them).

Each voter runs with the hidden demo load (``--demo-append-rate``: numbered
records appended while it leads) and ``--demo-ack-log``: one line per record
the process acknowledged as committed, written before the next append, so
the test knows every record any node ever reported committed, even from a
process it killed with SIGKILL.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


from kraft.tools.bench import node_process
from tests.harness import cli
from tests.harness.poll import settle, until, until_async

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


@dataclass
class ProcessCluster:
    """A quorum of :class:`NodeProcess` voters and their controller ports."""

    root: Path
    nodes: dict[int, NodeProcess]
    ports: dict[int, int]

    @property
    def bootstrap(self) -> str:
        """Every voter, as ``--bootstrap-controller``."""
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def describe_status(self, command_config: Path) -> subprocess.CompletedProcess[str]:
        """``kraft quorum describe --status`` with the client settings of ``command_config``."""
        return cli.run("quorum", "--bootstrap-controller", self.bootstrap, "--command-config", str(command_config),
                       "describe", "--status", timeout=60)

    def wait_for_status(self, command_config: Path, timeout_s: float = 60) -> dict[str, str]:
        """The first ``--status`` whose high watermark is past 0, as key -> value."""
        stderr = [""]

        def status() -> dict[str, str]:  # empty: not yet
            done = self.describe_status(command_config)
            stderr[0] = done.stderr
            if done.returncode != 0:
                return {}
            fields = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
            if int(fields.get("HighWatermark", "-1").strip()) <= 0:
                return {}
            return {k.strip(): v.strip() for k, v in fields.items()}

        return until("a quorum status with a high watermark", status, timeout_s, interval_s=0.5,
                     detail=lambda: "\n".join([stderr[0], *(n.output()[-3000:] for n in self.nodes.values())]))

    def stop(self) -> None:
        """SIGTERM each node (SIGKILL if it hangs)."""
        for node in self.nodes.values():
            node.terminate()


def start_processes(root: Path, paths: Mapping[int, Path], *, append_rate: float,
                    log_level: str = "INFO") -> ProcessCluster:
    """A :class:`NodeProcess` per config (node id -> server.properties), all
    started; its controller port read back from its ``listeners``."""
    ports = {}
    for node_id, path in paths.items():
        listeners = next(line for line in path.read_text().splitlines() if line.startswith("listeners="))
        ports[node_id] = int(listeners.rsplit(":", 1)[1])
    nodes = {n: NodeProcess(n, p, root, append_rate=append_rate, log_level=log_level) for n, p in paths.items()}
    for node in nodes.values():
        node.start()
    return ProcessCluster(root, nodes, ports)


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
