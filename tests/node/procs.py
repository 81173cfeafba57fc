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
import sys
import time
from pathlib import Path

import trio

#: What ``kraft node start`` logs once SIGUSR1 stops its demo writer.
DEMO_WRITER_STARTED = "demo writer started"


class NodeProcess:
    def __init__(self, node_id: int, config: Path, root: Path, append_rate: float,
                 env: dict[str, str] | None = None, log_level: str = "INFO",
                 launcher: tuple[str, ...] = ("-m", "kraft.cli")) -> None:
        self.node_id = node_id
        #: What runs ``kraft ...`` (e.g. a test launcher injecting a hook).
        self.launcher = launcher
        #: The process environment (e.g. LD_PRELOAD of a fault shim); None: ours.
        self.env = env
        self.log_level = log_level
        self.config = config
        self.log_path = root / f"node-{node_id}.out"
        self.ack_path = root / f"acks-{node_id}.tsv"
        self.append_rate = append_rate
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        assert not self.alive, f"node {self.node_id} is already running"
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, *self.launcher, "node", "start", "--config", str(self.config),
                 "--log-level", self.log_level,
                 "--demo-append-rate", str(self.append_rate), "--demo-ack-log", str(self.ack_path)],
                stdout=out, stderr=subprocess.STDOUT, env=self.env,
            )
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9: no shutdown, no flush beyond what the node already did."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def _load_ready(self) -> bool:
        return not self.alive or self.output().count(DEMO_WRITER_STARTED) >= self.starts

    def _send_stop(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGUSR1)

    def stop_load(self, timeout_s: float = 30) -> None:
        """SIGUSR1, once the demo writer listens for it (before that the
        signal's default action would kill the process). Blocks."""
        deadline = time.monotonic() + timeout_s
        while not self._load_ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._send_stop()

    async def stop_load_async(self) -> None:
        """:meth:`stop_load` for trio tests (in-process nodes keep running)."""
        while not self._load_ready():
            await trio.sleep(0.05)
        self._send_stop()

    def terminate(self, timeout_s: float = 15) -> int | None:
        """SIGTERM (a leader hands over first); SIGKILL if it hangs. The exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def acks(self) -> list[tuple[int, bytes]]:
        """(offset, record) for every record this node acknowledged."""
        if not self.ack_path.exists():
            return []
        out = []
        for line in self.ack_path.read_text().splitlines():
            offset, _, value = line.partition("\t")
            if value:  # a line cut by a kill has no value yet: not acknowledged
                out.append((int(offset), value.encode()))
        return out


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
