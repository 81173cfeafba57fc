"""``kraft quickstart``: a three-voter quorum on 127.0.0.1, as separate
processes, with a leader kill in the middle.

What it does, step by step, printing as it goes:

1. formats three metadata directories in a temporary directory with
   ``kraft storage format`` (one cluster id) and starts three
   ``kraft node start`` processes (static voters 1, 2, 3);
2. follows the quorum with an in-process observer (node 100), which prints
   the leader and the committed records as they arrive (whoever leads appends
   a stream of numbered records);
3. kills the leader with SIGKILL, shows the re-election and how long it took;
4. restarts the killed node, lets it catch up, stops everything, and checks
   every voter's log: each record the observer saw committed is there, at
   the same offset, on all three.
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import click

# The node, trio and the log are imported when the command runs (``kraft
# quickstart --help`` answers at once; the bench reuses the helpers here).

VOTERS = (1, 2, 3)
OBSERVER_ID = 100


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def write_properties(path: Path, node_id: int, port: int, voters: str, log_dir: Path, extra: dict[str, str]) -> None:
    props = {
        "process.roles": "controller",
        "node.id": str(node_id),
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": voters,
        "metadata.log.dir": str(log_dir),
        **extra,
    }
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


class Cluster:
    """Three voter processes and their files, in ``root``."""

    def __init__(self, root: Path, extra: dict[str, str] | None = None) -> None:
        self.root = root
        self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        ports = free_ports(len(VOTERS) + 1)
        self.ports = dict(zip(VOTERS, ports))
        self.voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.ports.items())
        self.observer_port = ports[-1]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.extra = extra or {}
        for node_id in VOTERS:
            self._prepare(node_id, self.ports[node_id])
        self._prepare(OBSERVER_ID, self.observer_port)

    def config_path(self, node_id: int) -> Path:
        return self.root / f"server-{node_id}.properties"

    def log_dir(self, node_id: int) -> Path:
        return self.root / f"metadata-{node_id}"

    def _prepare(self, node_id: int, port: int) -> None:
        write_properties(self.config_path(node_id), node_id, port, self.voters, self.log_dir(node_id), self.extra)
        subprocess.run(
            [sys.executable, "-m", "kraft.cli", "storage", "format", "--config", str(self.config_path(node_id)),
             "--cluster-id", self.cluster_id],
            check=True, capture_output=True,
        )

    def start(self, node_id: int, append_rate: float = 100.0) -> None:
        out = open(self.root / f"node-{node_id}.log", "ab")
        self.procs[node_id] = subprocess.Popen(
            [sys.executable, "-m", "kraft.cli", "node", "start", "--config", str(self.config_path(node_id)),
             "--demo-append-rate", str(append_rate)],
            stdout=out, stderr=subprocess.STDOUT,
        )

    def kill(self, node_id: int) -> None:
        self.procs[node_id].send_signal(signal.SIGKILL)
        self.procs[node_id].wait()

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def read_log(log_dir: Path) -> dict[int, bytes]:
    """offset -> value of every data record in a stopped node's log."""
    from kraft.records.log import MetadataLog, metadata_partition_dir

    mlog = MetadataLog.open(metadata_partition_dir(log_dir))
    try:
        out: dict[int, bytes] = {}
        for batch in mlog.iter_batches():
            if batch.is_control:
                continue
            for rec in batch.records():
                out[rec.offset] = bytes(rec.value or b"")
        return out
    finally:
        mlog.close()


async def _observe(cluster: Cluster, say: Callable[[str], None]) -> dict[int, bytes]:
    import trio

    from kraft.config import NodeConfig
    from kraft.node.node import CommittedBatch, KraftNode

    config = NodeConfig.load(cluster.config_path(OBSERVER_ID))
    observer = KraftNode(config)
    committed: dict[int, bytes] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(observer.run)

        async def follow() -> None:
            # Start at offset 0: a fresh quorum has no snapshot to load first.
            async for batch in observer.committed_batches(0):
                if isinstance(batch, CommittedBatch) and not batch.is_control:
                    for i, value in enumerate(batch.records):
                        committed[batch.base_offset + i] = value

        nursery.start_soon(follow)
        with trio.fail_after(30):
            leader = await observer.wait_for_leader()
        say(f"leader elected: node {leader.leader_id} in epoch {leader.epoch}")
        await trio.sleep(3)
        say(f"committed so far: {len(committed)} records (high watermark {observer.high_watermark})")
        old = observer.leader
        before = dict(committed)
        say(f"kill -9 the leader, node {old.leader_id}")
        t0 = time.monotonic()
        cluster.kill(old.leader_id)  # type: ignore[arg-type]
        assert observer.shell is not None
        with trio.fail_after(30):
            async with observer.shell.leader_changed:
                while observer.leader.leader_id in (None, old.leader_id):
                    await observer.shell.leader_changed.wait()
        new = observer.leader
        say(f"re-elected: node {new.leader_id} leads epoch {new.epoch}, {time.monotonic() - t0:.2f} s after the kill")
        hwm = observer.high_watermark
        with trio.fail_after(30):
            while observer.high_watermark <= hwm + 10:
                await trio.sleep(0.1)
        say(f"the new leader commits: {len(committed)} records now")
        lost = [o for o, v in before.items() if committed.get(o) != v]
        if lost:
            raise click.ClickException(f"records committed before the kill changed or vanished at offsets {lost[:10]}")
        say(f"restarting node {old.leader_id}; it rejoins as a follower and catches up")
        cluster.start(old.leader_id, append_rate=100.0)  # type: ignore[arg-type]
        await trio.sleep(3)
        await observer.shutdown()
        nursery.cancel_scope.cancel()
    return committed


@click.command("quickstart", short_help="Start a local three-voter quorum, append, fail over.")
@click.option("--keep", is_flag=True, help="Keep the temporary directory (configs, logs, data).")
def quickstart_command(keep: bool) -> None:
    """Start a local 3-voter quorum, kill its leader, show nothing committed is lost."""
    import trio

    root = Path(tempfile.mkdtemp(prefix="kraft-quickstart-"))

    def say(msg: str) -> None:
        click.echo(f"[quickstart] {msg}")

    say(f"working in {root}")
    cluster = Cluster(root)
    say(f"formatted 3 voters + 1 observer, cluster id {cluster.cluster_id}; voters {cluster.voters}")
    ok = False
    try:
        for node_id in VOTERS:
            cluster.start(node_id)
        committed = trio.run(_observe, cluster, say)
        cluster.stop_all()
        say("stopped all nodes; checking every voter's log against what the observer saw committed")
        logs = {n: read_log(cluster.log_dir(n)) for n in VOTERS}
        for offset, value in committed.items():
            for n, records in logs.items():
                if records.get(offset) != value:
                    raise click.ClickException(f"node {n} lacks committed record at offset {offset}")
        say(f"no committed record lost: {len(committed)} records present on all {len(VOTERS)} voters")
        ok = True
    finally:
        cluster.stop_all()
        if keep or not ok:
            say(f"files kept in {root} (node-N.log has each node's log)")
        else:
            shutil.rmtree(root, ignore_errors=True)
