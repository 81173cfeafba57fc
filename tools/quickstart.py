"""``kraft quickstart``: a three-voter quorum on 127.0.0.1, as separate
processes, with a leader kill in the middle.

What it does, step by step, printing as it goes:

1. formats three metadata directories in a temporary directory with
   ``kraft storage format`` (one cluster id) and starts three
   ``kraft node start`` processes (static voters 1, 2, 3);
2. follows the quorum with an in-process observer (node 100), which prints
   the leader and how many records are committed (whoever leads appends
   real metadata records: two topics with their partitions, a config, the
   bootstrap feature levels, then one numbered config change per record;
   :mod:`kraft.tools.quickstart_records`);
3. kills the leader with SIGKILL, shows the re-election and how long it took;
4. restarts the killed node, lets it catch up, stops everything, and checks
   every voter's log: each record the observer saw committed is there, at
   the same offset, on all three.

5. then, where ``java`` and Kafka's jars are present, a whole Kafka
   cluster: three kraft controllers running Kafka's controller and three
   real Kafka brokers, a topic, records produced and consumed, the broker
   leading partition 0 killed and its leaderships moved
   (:mod:`kraft.tools.quickstart_kafka`); without them it says what it skips.

It ends by saying where ``kraft`` is (the virtualenv's ``bin``) and, with
``--keep``, the exact commands that start the kept cluster again and stop
it, and what to explore it with.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

# The node, trio and the log are imported when the command runs (``kraft
# quickstart --help`` answers at once; the bench reuses the helpers here).

VOTERS = (1, 2, 3)
OBSERVER_ID = 100

#: Where the quickstart's ports come from unless ``--port-range`` says:
#: Kafka's controller port and up, below the kernel's ephemeral range (from
#: 32768 on Linux), where an outgoing connection's source port could take a
#: port the restart commands print, and below the test suite's ports.
DEFAULT_PORT_RANGE = (9093, 9999)


def ephemeral_range() -> tuple[int, int]:
    """The kernel's source-port range for outgoing connections."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default; IANA's dynamic range starts at 49152


def ports_in_range(n: int, first: int, last: int) -> list[int]:
    """The first ``n`` ports from ``first`` to ``last`` that 127.0.0.1 can bind now."""
    ports: list[int] = []
    for port in range(first, last + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: the next one
        ports.append(port)
        if len(ports) == n:
            return ports
    raise click.ClickException(f"only {len(ports)} of the {n} ports needed are free in {first}-{last}: "
                               "give another range with --port-range FIRST-LAST")


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
    voter_ids = {int(item.partition("@")[0]) for item in voters.split(",") if item}
    props = {
        # A node outside the voters follows without voting: Kafka's broker role.
        "process.roles": "controller" if node_id in voter_ids else "broker",
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

    def __init__(self, root: Path, extra: dict[str, str] | None = None, demo_records: str = "text",
                 port_range: tuple[int, int] = DEFAULT_PORT_RANGE) -> None:
        self.root = root
        #: What the leader appends: "text" (numbered lines, the benches) or
        #: "metadata" (real metadata records, the quickstart).
        self.demo_records = demo_records
        from kraft.records.state_files import random_cluster_id
        self.cluster_id = random_cluster_id()
        ports = ports_in_range(len(VOTERS) + 1, *port_range)
        self.ports = dict(zip(VOTERS, ports))
        self.voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.ports.items())
        self.observer_port = ports[-1]
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        #: How many times each node was started (its log says so each time).
        self.starts: dict[int, int] = {}
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
        self.starts[node_id] = self.starts.get(node_id, 0) + 1
        out = open(self.root / f"node-{node_id}.log", "ab")
        self.procs[node_id] = subprocess.Popen(
            [sys.executable, "-m", "kraft.cli", "node", "start", "--config", str(self.config_path(node_id)),
             "--demo-append-rate", str(append_rate), "--demo-records", self.demo_records],
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


async def _wait_listening(cluster: Cluster) -> None:
    """Until each voter process says it listens (its port is then its own)."""
    import trio

    for node_id, proc in cluster.procs.items():
        log_path = cluster.root / f"node-{node_id}.log"
        while log_path.read_text(errors="replace").count("listening for CONTROLLER on") < cluster.starts[node_id]:
            if proc.poll() is not None:
                raise click.ClickException(f"node {node_id} exited: "
                                           f"{log_path.read_text(errors='replace').strip().splitlines()[-1:]}")
            await trio.sleep(0.05)


async def _observe(cluster: Cluster, say: Callable[[str], None],
                   listening: Callable[[], None] = lambda: None) -> dict[int, bytes]:
    import trio

    from kraft.config import NodeConfig
    from kraft.node.node import CommittedBatch, KraftNode

    config = NodeConfig.load(cluster.config_path(OBSERVER_ID))
    observer = KraftNode(config)
    committed: dict[int, bytes] = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(observer.run)
        await _wait_listening(cluster)
        listening()  # every port of this quickstart is bound now

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
        with trio.fail_after(30):
            while observer.leader.leader_id in (None, old.leader_id):
                await observer.wait_leader_change(observer.leader)
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
        await _stop_writers_and_wait_for_all(cluster)
        say(f"node {old.leader_id} caught up: every voter's log ends at the leader's")
        await observer.shutdown()
        nursery.cancel_scope.cancel()
    return committed


async def _stop_writers_and_wait_for_all(cluster: Cluster, timeout_s: float = 60) -> None:
    """Stop the demo writers (SIGUSR1, once each one listens for it), then
    wait until DescribeQuorum shows every voter's log end offset at the
    leader's: the logs compared afterwards then hold the same records."""
    import trio

    from kraft.admin_client.admin import ENDPOINT_TYPE_CONTROLLER, AdminSession, AdminSettings, Bootstrap
    from kraft.admin_client.errors import AdminError

    with trio.fail_after(timeout_s):
        for node_id, proc in cluster.procs.items():
            log_path = cluster.root / f"node-{node_id}.log"
            # node-N.log is appended to: a restarted node says it twice.
            while log_path.read_text(errors="replace").count("demo writer started") < cluster.starts[node_id]:
                if proc.poll() is not None:
                    raise click.ClickException(f"node {node_id} exited; see {log_path}")
                await trio.sleep(0.1)
            proc.send_signal(signal.SIGUSR1)
        bootstrap = Bootstrap(tuple(("127.0.0.1", port) for port in cluster.ports.values()),
                              ENDPOINT_TYPE_CONTROLLER)
        while True:
            try:
                async with AdminSession(bootstrap, AdminSettings(api_timeout_ms=5000)) as session:
                    _, info = await session.describe_quorum()
                ends = {v.replica_id: v.log_end_offset for v in info.voters}
                if len(set(ends.values())) == 1 and info.high_watermark == ends[info.leader_id]:
                    return
            except AdminError:
                pass  # the leader moved or is still being elected: ask again
            await trio.sleep(0.2)


def _port_range(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, int]:
    first_text, sep, last_text = value.partition("-")
    try:
        first, last = int(first_text), int(last_text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not FIRST-LAST (e.g. 9093-9999)") from None
    if not sep or not 1 <= first <= last <= 65535:
        raise click.BadParameter(f"{value!r} is not FIRST-LAST with 1 <= FIRST <= LAST <= 65535")
    low, high = ephemeral_range()
    if first <= high and last >= low:
        raise click.BadParameter(f"{value} overlaps the ephemeral port range {low}-{high} (outgoing connections "
                                 f"take their source ports there): choose ports below {low}")
    return first, last


@click.command("quickstart", short_help="Start a local three-voter quorum, append, fail over.")
@click.option("--keep", is_flag=True, help="Keep the temporary directory (configs, logs, data).")
@click.option("--port-range", default=f"{DEFAULT_PORT_RANGE[0]}-{DEFAULT_PORT_RANGE[1]}", show_default=True,
              callback=_port_range, metavar="FIRST-LAST",
              help="Where the nodes' ports come from (the first free ones); never the ephemeral range.")
@click.option("--kafka/--no-kafka", default=True, show_default=True,
              help="Then run real Kafka brokers on three kraft controllers (needs java and Kafka's jars).")
def quickstart_command(keep: bool, port_range: tuple[int, int], kafka: bool) -> None:
    """Start a local 3-voter quorum, kill its leader, show nothing committed is lost;
    then real Kafka brokers on kraft controllers: a topic, records, a broker killed."""
    import trio

    def say(msg: str) -> None:
        click.echo(f"[quickstart] {msg}")

    root: Path | None = None
    cluster: Cluster | None = None
    try:
        # Every exit from here removes the directory (without --keep): a
        # failure, a node that could not start, Ctrl-C at any moment. SIGINT
        # is held while the directory is made and its name kept: a Ctrl-C
        # then is handled the moment `root` is set, inside this try.
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            root = working_directory()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        say(f"working in {root}")
        with PortLock(root.parent) as ports_held:
            # kraft.witness=false: the log holds Kafka controller metadata (the
            # bootstrap feature levels), which in the default auto mode makes a
            # kraft voter a witness that never leads (kraft/raft/witness_policy.py).
            cluster = Cluster(root, extra={"kraft.witness": "false"}, demo_records="metadata", port_range=port_range)
            say(f"formatted 3 voters + 1 observer, cluster id {cluster.cluster_id}; voters {cluster.voters}")
            for node_id in VOTERS:
                cluster.start(node_id)
            committed = trio.run(_observe, cluster, say, ports_held.release)
        cluster.stop_all()
        say("stopped all nodes; checking every voter's log against what the observer saw committed")
        logs = {n: read_log(cluster.log_dir(n)) for n in VOTERS}
        for offset, value in committed.items():
            for n, records in logs.items():
                if records.get(offset) != value:
                    raise click.ClickException(f"node {n} lacks committed record at offset {offset}")
        say(f"no committed record lost: {len(committed)} records present on all {len(VOTERS)} voters")
        if kafka:
            from kraft.tools.quickstart_kafka import run_kafka_cluster

            say("now a Kafka cluster: three kraft controllers running Kafka's controller, three real Kafka brokers")
            with PortLock(root.parent) as held:  # two quickstarts at once choose in turn, as above
                run_kafka_cluster(root / "kafka-cluster", ports_in_range(6, *port_range), say, held.release)
    finally:
        if cluster is not None:
            cluster.stop_all()
        if root is not None and keep:
            say(f"files kept in {root} (node-N.log has each node's log)")
        elif root is not None:  # None: refused (TMPDIR) before anything was made
            shutil.rmtree(root, ignore_errors=True)
    for line in reach_kraft_lines():
        say(line)
    if keep and cluster is not None:
        for line in kept_cluster_lines(cluster):
            say(line)


def working_directory() -> Path:
    """A new ``kraft-quickstart-*`` directory under ``$TMPDIR``; a TMPDIR
    that is no writable directory is named (Python's ``tempfile`` would
    fall back to /tmp without a word)."""
    from kraft.errors import ConfigurationError

    tmpdir = os.environ.get("TMPDIR", "")
    if tmpdir and not (os.path.isdir(tmpdir) and os.access(tmpdir, os.W_OK | os.X_OK)):
        why = "does not exist" if not os.path.exists(tmpdir) else "is not a writable directory"
        raise ConfigurationError(f"TMPDIR={tmpdir} {why}: create it, set TMPDIR to a writable directory, "
                                 "or unset it to work under /tmp")
    return Path(tempfile.mkdtemp(prefix="kraft-quickstart-", dir=tmpdir or None))


class PortLock:
    """One quickstart at a time chooses ports: an OS lock (``flock``) on
    ``kraft-quickstart.ports.lock`` beside the working directories, held from
    the choice until every node listens (:meth:`release`), so a second
    quickstart started meanwhile finds those ports taken and picks others.
    The kernel drops the lock with its holder."""

    def __init__(self, directory: Path) -> None:
        self._path = directory / "kraft-quickstart.ports.lock"
        self._fd: int | None = None

    def __enter__(self) -> PortLock:
        import fcntl

        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __exit__(self, *exc: object) -> None:
        self.release()


def kraft_command() -> str:
    """How this installation's ``kraft`` is run: the script beside this
    Python (a virtualenv's ``bin``), else ``python -m kraft.cli``."""
    script = Path(sys.executable).parent / "kraft"
    return str(script) if script.exists() else f"{sys.executable} -m kraft.cli"


def reach_kraft_lines() -> list[str]:
    kraft = kraft_command()
    bin_dir = Path(sys.executable).parent
    if not kraft.endswith("/kraft"):
        return [f"kraft is not installed as a command here; run it as: {kraft} ..."]
    activate = bin_dir / "activate"
    how = f". {activate}" if activate.exists() else f'export PATH="{bin_dir}:$PATH"'
    return [f"kraft is {kraft}; to type plain `kraft` in this shell: {how}"]


def kept_cluster_lines(cluster: Cluster) -> list[str]:
    """The exact commands that start the kept cluster again (each node in
    the background, its PID in node-N.pid) and stop it, and what to look at."""
    from kraft.tools.quickstart_records import EVENTS_TOPIC

    kraft = kraft_command()
    root = cluster.root
    ids = " ".join(str(n) for n in VOTERS)
    start = (f"for n in {ids}; do {kraft} node start -c {root}/server-$n.properties >> {root}/node-$n.log 2>&1 & "
             f"echo $! > {root}/node-$n.pid; done")
    stop = f"for n in {ids}; do kill $(cat {root}/node-$n.pid); done"
    first = f"127.0.0.1:{cluster.ports[VOTERS[0]]}"
    return [
        "start the kept cluster again:",
        f"  {start}",
        "look at it (the quickstart's topics, configs and feature levels):",
        f"  {kraft} quorum --bootstrap-controller {first} describe --status",
        f"  {kraft} observe --bootstrap-controller {first} --timeout 30",
        f"  {kraft} shell --bootstrap-controller {first} find /image/topics/byName",
        "stop it (SIGTERM: a leader hands over first):",
        f"  {stop}",
        "and, stopped, read its files:",
        f"  {kraft} shell --directory {cluster.log_dir(VOTERS[0])} cat /image/configs/TOPIC:{EVENTS_TOPIC}/retention.ms",
        f"  {kraft} dump-log --cluster-metadata-decoder --files "
        f"{cluster.log_dir(VOTERS[0])}/__cluster_metadata-0/00000000000000000000.log",
    ]
