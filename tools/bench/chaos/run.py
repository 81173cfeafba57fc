"""``kraft bench chaos``: a Jepsen-style run on real node processes.

Voters (3, or 5) and observers, each a ``kraft node start`` process; with
``partition`` in ``--nemesis`` each in a network namespace of its own
(:mod:`.netns`), otherwise on 127.0.0.1. KRaft has no client RPC that
appends to the metadata log, so the client is the one Kafka's controller is:
each voter, while it leads, appends numbered records one at a time
(``--demo-append-rate``), writes each append's invocation and outcome to
its history (:mod:`.operations`) and each one acknowledged as committed to
its ack log before the next append (line buffered: a kill -9 cannot lose an
acknowledgement).

Meanwhile faults drawn from ``--seed`` overlap (up to
``--max-concurrent-faults``), each logged at its start and end:

* ``partition``: isolate the leader or a follower, a majority/minority
  split, a bridge (one node in both halves), a one-way drop, Jepsen's
  majorities ring (5 voters), a flapping link, a flaky link (loss, delay
  with jitter: netem, or a userspace relay where the kernel has none);
* ``power-loss``: the voter's disk is a LazyFS mount (:mod:`.lazyfs`): the
  node is killed and every write since its file's last fsync is lost, half
  the time with a torn page; each cut says what it dropped;
* ``kill``: kill -9, restarted later; ``pause``: SIGSTOP past the fetch
  timeout, then SIGCONT;
* ``disk-full``: one voter's metadata directory is a small tmpfs, filled to
  the last byte, then freed;
* ``fsync``: the LD_PRELOAD shim makes the voter's fsyncs fail with EIO; it
  must fail-stop (exit 1), and is restarted on a healthy disk;
* ``lying-disk`` (opt-in): every voter's fsync succeeds and persists
  nothing; the power of a majority is cut at once while the rest is paused,
  so acknowledged records must be lost and the checker must say so.

A voter that exits by itself (fail-stop) is restarted. At the end
everything heals, the quorum must commit again, the load stops, the logs
settle, and :mod:`.checker` judges the files. ``--scenario NAME`` replaces
the random schedule by a named one (:mod:`.scenarios`).
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft.records.state_files import random_cluster_id
from kraft.tools.bench.chaos.checker import Sampler, check, chaos_ok
from kraft.tools.bench.chaos.disks import LazyDisk, fuse_unavailable_reason
from kraft.tools.bench.chaos.run_history import History
from kraft.tools.bench.chaos.client_load import CLIENT_NODE, ClientLoad
from kraft.tools.bench.chaos.kafka_load import BROKER_IDS as KAFKA_BROKER_IDS
from kraft.tools.bench.chaos.kafka_load import KafkaLoad, KafkaLoadError
from kraft.tools.bench.chaos.netns import Network, NetworkUnavailable, network_unavailable_reason
from kraft.tools.bench.extras import missing_line
from kraft.tools.bench.node_process import NodeProcess, fault_line, kill_for, pause_for

__all__ = ["ChaosError", "ChaosNode", "ChaosOptions", "FUSE_NEMESES", "NEMESES", "PARTITION_NEMESES",
           "PARTITION_SHAPES", "Chaos", "chaos_ok", "fault_phase_header", "packages_needed", "run_chaos", "run_figures",
           "unavailable_reason"]

OBSERVER_ID = 99
#: Every nemesis, in the order the summary lists them.
#: The partition nemesis one shape at a time, by name (``--nemesis ring``):
#: each a partition fault whose shape is drawn from these.
PARTITION_NEMESES: dict[str, tuple[str, ...]] = {
    "cut": ("isolate-leader", "isolate-follower", "split"),
    "one-way": ("one-way",),
    "bridge": ("bridge",),
    "ring": ("majorities-ring",),
    "flaky": ("flaky",),
    "flapping": ("flapping",),
}
NEMESES = ("partition", "power-loss", "kill", "pause", "disk-full", "fsync", "lying-disk", *PARTITION_NEMESES)
#: The nemeses on the FUSE disk (:mod:`.lazyfs`, served with pyfuse3 of the ``[chaos]`` extra).
FUSE_NEMESES = ("power-loss", "lying-disk")
#: What runs without ``--nemesis``: every kind the machine can run (the others are skipped, said why).
DEFAULT_NEMESES = ("partition", "power-loss", "kill", "pause", "disk-full", "fsync")
#: Kafka's default controller.quorum.fetch.timeout.ms: a pause or a partition must outlast it.
FETCH_TIMEOUT_S = 2.0
#: The shortest fault (a hold past the fetch timeout, then its heal): a shorter run cannot hold one.
MIN_FAULT_S = 5.0
DISK_FULL_SIZE = "32m"
#: How long a power cut waits for the nodes' next fsyncs to hold.
HOLD_WAIT_S = 3.0
CONTROLLER_PORT = 9093
#: The partition nemesis's shapes (``majorities-ring`` needs 5 voters: with 3, every ring is whole).
PARTITION_SHAPES = ("isolate-leader", "isolate-follower", "split", "bridge", "one-way", "majorities-ring",
                    "flapping", "flaky")


@dataclass(frozen=True)
class ChaosOptions:
    duration_s: float = 60.0
    seed: int = 0
    voters: int = 3
    #: Records/s each leader's client appends (one at a time, each waited for).
    append_rate: float = 50.0
    #: Seconds between the starts of two faults.
    gap_s: tuple[float, float] = (0.5, 3.0)
    #: Every liveness wait (a leader again, commits again) gives up after this.
    patience_s: float = 90.0
    nemesis: tuple[str, ...] = DEFAULT_NEMESES
    #: True when ``nemesis`` was asked for: a kind the machine cannot run is refused, not skipped.
    nemesis_explicit: bool = False
    max_concurrent: int = 2
    observers: int = 1
    witness: bool = False
    scenario: str | None = None
    #: ``demo``: each voter's own demo load; ``client``: the independent chaos client
    #: (:mod:`.client_load`) against voters running Kafka's controller; ``kafka``: real
    #: Kafka brokers on those voters, Kafka's VerifiableProducer the client (:mod:`.kafka_load`).
    load: str = "demo"


def packages_needed(kinds: tuple[str, ...], explicit: bool) -> tuple[str, ...]:
    """The ``[chaos]`` extra's modules a run of the nemeses ``kinds`` imports:
    pyfuse3 when it mounts a FUSE disk (a FUSE nemesis asked for by name, or
    one of the default's that the machine could otherwise run; the default
    skips the others). Never matplotlib: without it the run draws no timeline."""
    fuse = [k for k in kinds if k in FUSE_NEMESES and (explicit or unavailable_reason(k, package=False) is None)]
    return ("pyfuse3",) if fuse else ()


class ChaosError(Exception):
    """The run could not go on (no leader for too long, a setup step failed)."""


def unavailable_reason(kind: str, package: bool = True) -> str | None:
    """Why this machine cannot run the nemesis ``kind``, or None (with
    ``package`` False: pyfuse3 not asked for, see :func:`packages_needed`)."""
    if kind == "partition" or kind in PARTITION_NEMESES:
        return network_unavailable_reason()
    if kind in FUSE_NEMESES:
        return fuse_unavailable_reason(package) or (None if os.geteuid() == 0 else "mounting FUSE disks needs root")
    if kind == "disk-full" and os.geteuid() != 0:
        return "mounting the small tmpfs needs root"
    if kind == "fsync" and not (shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")):
        return "no C compiler (cc, gcc or clang) to build the fsync fault shim (Debian: apt-get install gcc)"
    return None


@dataclass
class ChaosNode(NodeProcess):
    """A node process (voters run the demo load: ``acks`` set) and what the run knows of it."""

    voter: bool = False
    log_dir: Path = Path()
    #: Under a process fault now (another one must pick someone else).
    busy: bool = False
    disk: LazyDisk | None = None
    role: str = "down"
    epoch: int = -1
    read_pos: int = 0
    ack_pos: int = 0

    def start(self) -> None:
        super().start()
        self.role = "starting"


_ROLE_AT_START = re.compile(r"raft role (\w+) in epoch (\d+) at start-up")
_ROLE_CHANGE = re.compile(r"raft role \w+ -> (\w+) in epoch (\d+)")


class Chaos:
    """One run: its nodes, disks, network and history. Scenarios drive it
    through the public methods (see :mod:`.scenarios`)."""

    def __init__(self, options: ChaosOptions, root: Path, say: Callable[[str], None]) -> None:
        self.options = options
        self.root = root
        self.say = say
        self.rng = random.Random(options.seed)
        self.nodes: dict[int, ChaosNode] = {}
        self.skipped: dict[str, str] = {}
        self.kinds: list[str] = []
        self.faults: list[dict[str, Any]] = []
        self.active: dict[int, dict[str, Any]] = {}
        self.fault_seq = 0
        self.leaders_seen: dict[int, set[int]] = {}
        self.leader_changes = 0
        #: Seconds without a leader during the faults (from the first commits to the last fault's end),
        #: the part of them with no majority of the voters up, and those after the last fault ended.
        self.no_leader_s = 0.0
        self.no_majority_s = 0.0
        self.no_leader_after_s = 0.0
        self.faults_over = False
        self.shim: Any = None
        self.tmpfs: Path | None = None
        self.disk_full_voter: int | None = None
        self.network: Network | None = None
        self.history: History | None = None
        self.client: ClientLoad | KafkaLoad | None = None
        self.cluster_id = random_cluster_id()
        self.jars: Any = None
        self.sampler = Sampler()
        #: Nodes that left on a failed fsync otherwise than Kafka's fail-stop (exit 1).
        self.wrong_exits: list[str] = []
        #: What each power cut dropped: node, bytes, files, whether the disk said.
        self.power_cuts: list[dict[str, Any]] = []
        self.acks_seen = 0
        self.last_ack_t = 0.0
        #: Heals waiting for a leader and a commit again: (fault, time of the heal).
        self.recovering: list[tuple[dict[str, Any], float]] = []
        self.recoveries: list[dict[str, Any]] = []
        #: When the faults began (seconds on the history's clock, which starts with the nodes).
        self.t0 = 0.0
        #: A scenario's own figures, and its lines for the summary.
        self.report: dict[str, Any] = {}
        self.report_lines: list[str] = []

    # --- who is who ---------------------------------------------------------------------

    @property
    def voter_ids(self) -> list[int]:
        return sorted(n for n, node in self.nodes.items() if node.voter)

    @property
    def observer_ids(self) -> list[int]:
        return sorted(n for n, node in self.nodes.items() if not node.voter)

    @property
    def witness_id(self) -> int | None:
        return self.options.voters if self.options.witness else None

    def leader(self) -> int | None:
        """A live, running voter whose latest role is leader in the highest epoch any logged."""
        epoch = max((v.epoch for v in self.nodes.values()), default=-1)
        for node in self.nodes.values():
            if node.alive and not node.paused and node.role == "leader" and node.epoch == epoch:
                return node.node_id
        return None

    def voters_up(self) -> int:
        """Voters that could vote now: running, not paused, started up (a role logged since their start)."""
        return sum(1 for n in self.voter_ids if (node := self.nodes[n]).alive and not node.paused
                   and node.role not in ("starting", "down"))

    def account(self, interval_s: float) -> None:
        """Count ``interval_s`` (since the last look) as without a leader if
        there is none now: during the faults, and then whether a majority of
        the voters was up at all (killed, paused or still starting: no
        election could win); or after the last fault, apart."""
        if self.leader() is not None:
            return
        if self.faults_over:
            self.no_leader_after_s += interval_s
            return
        self.no_leader_s += interval_s
        if self.voters_up() <= len(self.voter_ids) // 2:
            self.no_majority_s += interval_s

    # --- setup -----------------------------------------------------------------------------

    def prepare(self) -> None:
        from kraft.tools.bench.fsync_fault import build_fsync_shim
        from kraft.tools.quickstart import free_ports

        opts = self.options
        for kind in opts.nemesis:
            reason = unavailable_reason(kind)
            if reason is not None:
                if opts.nemesis_explicit:
                    raise ChaosError(f"nemesis {kind} cannot run here: {reason}")
                self.skipped[kind] = reason
        self.kinds = [k for k in opts.nemesis if k not in self.skipped]
        voters = list(range(1, opts.voters + 1))
        observers = [OBSERVER_ID - i for i in range(opts.observers)]
        ids = voters + observers
        _remove_stale_namespaces()
        if any(k == "partition" or k in PARTITION_NEMESES for k in self.kinds):
            # The chaos client gets a namespace of its own on the bridge, which no partition cuts.
            self.network = Network(ids + ([CLIENT_NODE] if opts.load == "client" else []))
            try:
                self.network.create()
            except NetworkUnavailable as e:
                raise ChaosError(f"nemesis partition cannot run here: {e}") from None
        if "fsync" in self.kinds:
            shim = build_fsync_shim(self.root / "shim")
            if isinstance(shim, str):
                raise ChaosError(f"nemesis fsync cannot run here: {shim}")
            self.shim = shim
        if "disk-full" in self.kinds:
            self.disk_full_voter = self.rng.choice(voters)
            mount_dir = self.root / f"metadata-{self.disk_full_voter}"
            mount_dir.mkdir()
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_FULL_SIZE}", "tmpfs", str(mount_dir)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise ChaosError(f"nemesis disk-full cannot run here: cannot mount a tmpfs "
                                 f"({done.stderr.strip() or done.returncode})")
            self.tmpfs = mount_dir
        ports = free_ports(len(ids) + (len(KAFKA_BROKER_IDS) if opts.load == "kafka" else 0))
        if self.network is not None:
            addresses = {n: (self.network.address(n), CONTROLLER_PORT) for n in ids}
        else:
            addresses = {n: ("127.0.0.1", p) for n, p in zip(ids, ports)}
        if opts.load == "kafka":
            self.jars = _kafka_jars()
        configs = self._format(ids, voters, addresses)
        self._make_nodes(ids, voters, configs)
        if opts.load == "client":
            self.client = ClientLoad(self.root / "client-history.jsonl", self.root / "client.log",
                                     [addresses[n] for n in voters], opts.append_rate,
                                     prefix=self.network.exec_prefix(CLIENT_NODE) if self.network else [])
        elif opts.load == "kafka":
            quorum = ",".join(f"{n}@{addresses[n][0]}:{addresses[n][1]}" for n in voters)
            self.client = KafkaLoad(self.root, self.jars, self.cluster_id, quorum, ports[len(ids):],
                                    opts.append_rate)

    def _format(self, ids: list[int], voters: list[int], addresses: dict[int, tuple[str, int]]) -> dict[int, Path]:
        """Each node's server.properties, formatted with ``kraft storage format`` (one cluster id)."""
        opts = self.options
        quorum = ",".join(f"{n}@{addresses[n][0]}:{addresses[n][1]}" for n in voters)
        cluster_id = self.cluster_id
        # Kafka's brokers need the controllers' metadata.version to be one their release knows.
        release = ["--kafka-version", self.jars.version] if self.jars is not None and self.jars.version else []
        configs = {}
        for node_id in ids:
            host, port = addresses[node_id]
            configs[node_id] = self.root / f"server-{node_id}.properties"
            props = {
                "process.roles": "controller" if node_id in voters else "broker", "node.id": str(node_id),
                "listeners": f"CONTROLLER://{host}:{port}", "controller.listener.names": "CONTROLLER",
                "controller.quorum.voters": quorum, "metadata.log.dir": str(self.root / f"metadata-{node_id}"),
            }
            if opts.load in ("client", "kafka") and node_id in voters:
                props["kraft.controller"] = "true"  # the client's writes are Kafka controller requests
                props["kraft.witness"] = "false"
            if node_id == self.witness_id:
                props["kraft.witness"] = "true"
            configs[node_id].write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        formats = [subprocess.Popen([sys.executable, "-m", "kraft.cli", "storage", "format", "--config", str(path),
                                     "--cluster-id", cluster_id, *release], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                   for path in configs.values()]
        for proc in formats:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                raise ChaosError(f"kraft storage format failed: {output.decode(errors='replace')}")
        return configs

    def _make_nodes(self, ids: list[int], voters: list[int], configs: dict[int, Path]) -> None:
        """The node processes (not started) and the voters' FUSE disks (mounted)."""
        opts = self.options
        env = self.shim.env() if self.shim is not None else None
        lazy = any(k in FUSE_NEMESES for k in self.kinds)
        for node_id in ids:
            voter = node_id in voters
            demo = voter and opts.load == "demo"
            node = ChaosNode(node_id, configs[node_id], self.root / f"node-{node_id}.log",
                             self.root / f"acks-{node_id}.tsv" if demo else None, opts.append_rate,
                             prefix=self.network.exec_prefix(node_id) if self.network is not None else [],
                             env=env, voter=voter, log_dir=self.root / f"metadata-{node_id}",
                             history=self.root / f"operations-{node_id}.jsonl" if demo else None)
            if voter and lazy and node_id != self.disk_full_voter:
                backing = self.root / f"disk-{node_id}"
                node.log_dir.rename(backing)
                node.disk = LazyDisk(node.log_dir, backing, self.root / f"lazyfs-{node_id}.log",
                                     lie="lying-disk" in self.kinds, seed=opts.seed * 100 + node_id)
                node.disk.mount()
            self.nodes[node_id] = node

    def cleanup(self) -> None:
        """Stop every process, unmount every disk, delete the namespaces: on every way out."""
        if self.client is not None:
            self.client.close()
        for node in self.nodes.values():
            if node.alive:
                node.kill_signal()
                node.wait_stopped()
        for node in self.nodes.values():
            if node.disk is not None:
                node.disk.close()
        if self.shim is not None:
            self.shim.disarm()
        if self.tmpfs is not None:
            subprocess.run(["umount", "-l", str(self.tmpfs)], capture_output=True)
        if self.network is not None:
            self.network.close()
        if self.history is not None:
            self.history.close()

    # --- watching --------------------------------------------------------------------------

    def _scan(self) -> None:
        assert self.history is not None
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is not None and node.role != "down":
                node.role = "down"
                self.history.add("role", node=node.node_id, role="down", epoch=node.epoch)
            try:
                with open(node.out, "rb") as f:
                    f.seek(node.read_pos)
                    data = f.read()
            except FileNotFoundError:
                data = b""
            cut = data.rfind(b"\n") + 1
            node.read_pos += cut
            for line in data[:cut].decode(errors="replace").splitlines():
                match = _ROLE_CHANGE.search(line) or _ROLE_AT_START.search(line)
                if match:
                    node.role, node.epoch = match.group(1).lower(), int(match.group(2))
                    self.history.add("role", node=node.node_id, role=node.role, epoch=node.epoch)
                    if node.role == "leader":
                        leaders = self.leaders_seen.setdefault(node.epoch, set())
                        if node.node_id not in leaders:
                            leaders.add(node.node_id)
                            self.leader_changes += 1
            if node.voter and node.acks is not None:
                self._read_acks(node)
        if self.client is not None and (oks := self.client.new_oks()):
            self.acks_seen += oks
            self.last_ack_t = self.history.now()

    def _read_acks(self, node: ChaosNode) -> None:
        assert self.history is not None and node.acks is not None
        try:
            with open(node.acks, "rb") as f:
                f.seek(node.ack_pos)
                data = f.read()
        except FileNotFoundError:
            return
        cut = data.rfind(b"\n") + 1
        node.ack_pos += cut
        for line in data[:cut].decode(errors="replace").splitlines():
            offset, _, value = line.partition("\t")
            if value and offset.isdigit():
                self.acks_seen += 1
                self.last_ack_t = self.history.now()
                self.history.add("ack", node=node.node_id, offset=int(offset), value=value)
                self.high_watermark = max(getattr(self, "high_watermark", 0), int(offset) + 1)

    async def watch(self) -> None:
        import trio

        assert self.history is not None
        last = time.monotonic()
        last_sample = last
        while True:
            await trio.sleep(0.2)
            self._scan()
            now = time.monotonic()
            self.account(now - last)
            last = now
            t = self.history.now()
            for fault, healed_at in list(self.recovering):
                if self.leader() is not None and self.last_ack_t > healed_at:
                    self.recovering.remove((fault, healed_at))
                    self.recoveries.append({"kind": fault["kind"], "id": fault["id"],
                                            "recovered_s": round(self.last_ack_t - healed_at, 2),
                                            "clean": fault.get("clean", True)})
            if now - last_sample >= 3.0:
                last_sample = now
                hw = getattr(self, "high_watermark", 0)
                dirs = {n: node.log_dir for n, node in self.nodes.items()
                        if node.disk is None or node.disk.proc is not None and node.disk.proc.poll() is None}
                await trio.to_thread.run_sync(self.sampler.sample, dirs, set(self.voter_ids), hw)
            del t

    async def restart_exited(self) -> None:
        for node in self.nodes.values():
            if node.proc is not None and node.proc.poll() is not None and not node.expected_down:
                code = node.proc.returncode
                assert self.history is not None
                self.history.add("exit", node=node.node_id, code=code, detail=_fatal_line(node.out))
                self.say(f"  {self.history.now() - self.t0:6.1f} s  exited    node {node.node_id}: exit code {code}"
                         f"{_fatal_line(node.out)}; restarted")
                self.faults.append({"kind": "exited", "nodes": [node.node_id], "t": self.history.now()})
                node.start()

    async def keep_restarting(self) -> None:
        import trio

        while True:
            await trio.sleep(0.5)
            await self.restart_exited()

    async def progress(self, what: str, records: int = 5) -> None:
        """Wait until ``records`` more acknowledgements arrive (the quorum is live)."""
        import trio

        target = self.acks_seen + records
        with trio.move_on_after(self.options.patience_s):
            while self.acks_seen < target:
                await self.restart_exited()
                await trio.sleep(0.1)
            return
        raise ChaosError(f"no progress within {self.options.patience_s:g} s {what} (files in {self.root})")

    # --- faults: each logged at its start and at its end ----------------------------------

    def begin(self, kind: str, nodes: list[int], detail: str) -> dict[str, Any]:
        assert self.history is not None
        self.fault_seq += 1
        leader = self.leader()
        fault: dict[str, Any] = {"id": self.fault_seq, "kind": kind, "nodes": nodes, "detail": detail,
                 "leader": leader, "t": self.history.now()}
        self.faults.append(fault)
        self.active[fault["id"]] = fault
        self.history.add("fault", phase="start", **{k: v for k, v in fault.items() if k != "t"})
        self.say(fault_line(fault["t"] - self.t0, fault, leader))
        return fault

    def end(self, fault: dict[str, Any], detail: str = "healed") -> None:
        assert self.history is not None
        self.active.pop(fault["id"], None)
        fault["end"] = self.history.now()
        # Availability counts a heal only when nothing else is broken then (a majority is connected).
        fault["clean"] = not self.active
        self.history.add("fault", phase="end", id=fault["id"], kind=fault["kind"], nodes=fault["nodes"],
                         detail=detail)
        self.say(fault_line(fault["end"] - self.t0, fault, end=detail))
        self.recovering.append((fault, fault["end"]))

    def pick(self, prefer_leader: float = 0.5, disk: bool = False) -> ChaosNode | None:
        """A voter no other process fault holds (the leader with probability ``prefer_leader``)."""
        free = [n for n in self.voter_ids if not self.nodes[n].busy and self.nodes[n].alive
                and (not disk or self.nodes[n].disk is not None)]
        if not free:
            return None
        leader = self.leader()
        if leader in free and self.rng.random() < prefer_leader:
            return self.nodes[leader]
        return self.nodes[self.rng.choice(free)]

    async def kill(self, node_id: int, down_s: float) -> None:
        await kill_for(self, self.nodes[node_id], down_s)

    async def pause(self, node_id: int, hold_s: float) -> None:
        await pause_for(self, self.nodes[node_id], hold_s)

    async def power_loss(self, node_ids: list[int], down_s: float, tear: bool = False,
                         kind: str = "power-loss") -> dict[str, Any]:
        """Cut the power of ``node_ids`` at once: kill -9, lose what was never fsynced (optionally a torn page)."""
        import trio

        what = "lying disk: everything since the mount" if kind == "lying-disk" else "unsynced writes"
        fault = self.begin(kind, node_ids, f"power cut ({what} lost{', a torn page' if tear else ''}), "
                                           f"back after {down_s:.1f} s")
        await self._hold_fsyncs(node_ids)
        for node_id in node_ids:
            self.nodes[node_id].kill_signal()
        said = []
        for node_id in node_ids:
            node = self.nodes[node_id]
            # A node whose fsync the disk holds dies only when the disk does (the kernel
            # waits for the FUSE reply): a short wait, then the cut, then its exit.
            await node.exited(0.5)
            assert node.disk is not None
            cut = await trio.to_thread.run_sync(node.disk.power_cut, tear)
            await node.exited(30)
            self.power_cuts.append({"node": node_id, "bytes": cut.bytes, "files": len(cut.dropped),
                                    "reported": cut.reported})
            said.append(f"node {node_id} {cut.describe()}")
        fault["dropped"] = "; ".join(said)
        await trio.sleep(down_s)
        for node_id in node_ids:
            node = self.nodes[node_id]
            assert node.disk is not None
            await trio.to_thread.run_sync(node.disk.mount)
            node.start()
        self.end(fault, f"power back, restarted ({fault['dropped']})")
        return fault

    async def _hold_fsyncs(self, node_ids: list[int]) -> None:
        """The power goes in the middle of an fsync: each disk hangs its
        node's next fsync, and the cut waits (up to :data:`HOLD_WAIT_S`) until
        every one holds one, so that each cut drops what the node was syncing
        (never acknowledged: the fsync did not return). A node that does not
        sync in that time (paused, cut off) loses whatever it has unsynced."""
        import trio

        disks = [d for d in (self.nodes[n].disk for n in node_ids) if d is not None and not d.lie]
        since = [(d, d.hold_next_fsync()) for d in disks]
        with trio.move_on_after(HOLD_WAIT_S):
            while not all(d.held(pos) for d, pos in since):
                await trio.sleep(0.05)

    async def disk_full(self, hold_s: float) -> None:
        import trio

        assert self.disk_full_voter is not None and self.tmpfs is not None
        fault = self.begin("disk-full", [self.disk_full_voter], f"{self.tmpfs} full for {hold_s:.1f} s")
        filler = _fill(self.tmpfs)
        await trio.sleep(hold_s)
        filler.unlink()
        self.end(fault, "freed")

    async def fsync_fault(self, node_id: int) -> None:
        import trio

        assert self.shim is not None
        node = self.nodes[node_id]
        fault = self.begin("fsync", [node_id], "fsync -> EIO until the node fail-stops")
        node.expected_down = True
        self.shim.arm(node.log_dir.resolve())
        code = await node.exited(30)
        self.shim.disarm()
        if code is None:
            node.expected_down = False
            self.end(fault, "the node never synced in 30 s: disarmed")
            return
        if code != 1:
            # A finding, not the end of the run: the rest of the run's evidence still counts.
            self.wrong_exits.append(f"node {node_id} exited {code} on EIO from fsync, not 1 (Kafka's fatal "
                                    f"fault){_last_error(node.out)}")
            await trio.sleep(self.rng.uniform(0.5, 2.0))
            node.start()
            self.end(fault, f"exit code {code}, restarted on a healthy disk")
            return
        await trio.sleep(self.rng.uniform(0.5, 2.0))
        node.start()
        self.end(fault, f"fail-stop (exit 1{_fatal_line(node.out)}), restarted on a healthy disk")

    def partition_directions(self, shape: str) -> tuple[list[tuple[int, int]], list[int], str]:
        """The dropped directions of a clean-cut shape, its target nodes and its description."""
        assert self.network is not None
        voters, leader, rng = self.voter_ids, self.leader(), self.rng
        shuffled = rng.sample(voters, len(voters))
        split = self.network.split
        if shape in ("isolate-leader", "isolate-follower"):
            followers = [v for v in voters if v != leader]
            target = leader if shape == "isolate-leader" and leader is not None else rng.choice(followers or voters)
            return split([target], [n for n in self.nodes if n != target]), [target], \
                f"{shape}: node {target} cut off from every node"
        if shape == "split":
            minority = shuffled[: len(voters) // 2]
            majority = [n for n in self.nodes if n not in minority]
            return split(minority, majority), minority, f"split: {minority} | {sorted(majority)}"
        if shape == "bridge":
            middle, rest = shuffled[0], shuffled[1:]
            a, b = rest[: len(rest) // 2], rest[len(rest) // 2:]
            return split(a, b), [middle], f"bridge: {sorted(a)} | {sorted(b)}, node {middle} in both"
        if shape == "one-way":
            src, dst = shuffled[0], shuffled[1]
            return [(src, dst)], [src, dst], (f"one-way: node {dst} hears nothing from node {src}, "
                                              f"node {src} still hears node {dst}")
        if shape == "majorities-ring":
            # Jepsen's majorities ring: the voters in a seeded ring, each linked to its
            # neighbours only; every voter sees a majority, no two the same one (5 voters;
            # observers keep every link).
            ring, reach = shuffled, (len(voters) // 2 + 1) // 2
            far = [(a, b) for i, a in enumerate(ring) for j, b in enumerate(ring)
                   if min((i - j) % len(ring), (j - i) % len(ring)) > reach]
            return far, ring, f"majorities ring {'-'.join(map(str, ring))}: each voter sees its neighbours"
        raise ValueError(f"unknown partition shape {shape}")

    async def partition(self, shape: str, hold_s: float, kind: str = "partition") -> None:
        """One of :data:`PARTITION_SHAPES`; healed after ``hold_s``; the
        fault recorded as ``kind`` (a :data:`PARTITION_NEMESES` name when
        the shape was asked for by name)."""
        import trio

        net = self.network
        assert net is not None
        if shape == "flaky":
            target = self.rng.choice(self.voter_ids)
            detail = net.flaky(target, self.rng.choice([10, 20, 30]), self.rng.choice([20, 50, 100]),
                               seed=self.rng.randrange(1 << 30))
            fault = self.begin(kind, [target], f"flaky link of node {target}: {detail}")
            await trio.sleep(hold_s)
            relayed = net.steady(target)
            self.end(fault, f"link steady ({relayed})" if relayed else "link steady")
            return
        if shape == "flapping":
            # Isolate a voter and heal it, again and again, each phase shorter than the fetch timeout.
            target = self.rng.choice(self.voter_ids)
            directions = net.split([target], [n for n in self.nodes if n != target])
            fault = self.begin(kind, [target], f"flapping: node {target} cut off and back every 0.5-1.5 s")
            end = trio.current_time() + hold_s
            while trio.current_time() < end:
                net.drop(directions)
                await trio.sleep(self.rng.uniform(0.5, 1.5))
                net.undrop(directions)
                await trio.sleep(self.rng.uniform(0.5, 1.5))
            self.end(fault, "link steady")
            return
        directions, nodes, detail = self.partition_directions(shape)
        fault = self.begin(kind, nodes, detail)
        net.drop(directions)
        await trio.sleep(hold_s)
        net.undrop(directions)
        self.end(fault, "healed")

    async def lying_power_cut(self) -> None:
        """Pause a minority, cut the power of the majority (the leader among
        them): with a lying disk they come back empty, elect a leader and
        acknowledge new records at offsets the paused minority holds other
        records at. One of the two histories must lose."""
        import trio

        voters = self.voter_ids
        leader = self.leader()
        majority_n = len(voters) // 2 + 1
        cut = ([leader] if leader is not None else []) + self.rng.sample(
            [v for v in voters if v != leader], majority_n - (1 if leader is not None else 0))
        rest = [v for v in voters if v not in cut]
        stop = self.begin("pause", rest, "SIGSTOP while the majority's power is cut")
        for v in rest:
            self.nodes[v].stop_signal()
        await self.power_loss(sorted(cut), 0.5, kind="lying-disk")
        with trio.move_on_after(min(60.0, self.options.patience_s)):
            await self.progress("after the lying power cut", 10)
        for v in rest:
            self.nodes[v].continue_signal()
        self.end(stop, "SIGCONT")

    async def inject(self, kind: str) -> None:
        rng = self.rng
        if kind == "partition":
            shapes = [s for s in PARTITION_SHAPES if s != "majorities-ring" or len(self.voter_ids) >= 5]
            shape = rng.choice(shapes)
            await self.partition(shape, FETCH_TIMEOUT_S + rng.uniform(1.0, 6.0))
            return
        if kind in PARTITION_NEMESES:
            await self.partition(rng.choice(PARTITION_NEMESES[kind]), FETCH_TIMEOUT_S + rng.uniform(1.0, 6.0), kind)
            return
        if kind == "disk-full":
            if self.nodes[self.disk_full_voter or 0].busy:
                return
            node = self.nodes[self.disk_full_voter or 0]
            node.busy = True
            try:
                await self.disk_full(rng.uniform(2.0, 5.0))
            finally:
                node.busy = False
            return
        if kind == "lying-disk":
            for n in self.voter_ids:
                self.nodes[n].busy = True
            try:
                await self.lying_power_cut()
            finally:
                for n in self.voter_ids:
                    self.nodes[n].busy = False
            return
        picked = self.pick(disk=kind == "power-loss")
        if picked is None:
            return
        picked.busy = True
        try:
            if kind == "kill":
                await self.kill(picked.node_id, rng.uniform(0.5, 4.0))
            elif kind == "pause":
                await self.pause(picked.node_id, FETCH_TIMEOUT_S + rng.uniform(0.5, 3.0))
            elif kind == "power-loss":
                await self.power_loss([picked.node_id], rng.uniform(0.5, 3.0), tear=rng.random() < 0.5)
            elif kind == "fsync":
                await self.fsync_fault(picked.node_id)
        finally:
            picked.busy = False

    async def schedule(self) -> None:
        """Faults drawn from the seed, overlapping up to ``max_concurrent``, until the duration ends."""
        import trio

        assert self.history is not None
        end = self.t0 + self.options.duration_s
        cycle: list[str] = []
        running = 0
        exclusive = {"disk-full", "fsync", "lying-disk"}  # one shared tmpfs, shim trigger, cut at a time
        busy_kinds: set[str] = set()

        async def one(kind: str) -> None:
            nonlocal running
            try:
                await self.inject(kind)
            finally:
                running -= 1
                busy_kinds.discard(kind)

        async with trio.open_nursery() as nursery:
            while self.history.now() < end:
                await trio.sleep(self.rng.uniform(*self.options.gap_s))
                while running >= self.options.max_concurrent and self.history.now() < end:
                    await trio.sleep(0.1)
                if self.history.now() >= end:
                    break
                if not cycle:
                    # Every kind once per cycle, in a seeded order.
                    cycle = self.rng.sample(self.kinds, len(self.kinds))
                kind = cycle.pop()
                if kind in busy_kinds:
                    continue
                if kind in exclusive:
                    busy_kinds.add(kind)
                if kind == "lying-disk":
                    # Alone: wait for the other faults to end and for commits first.
                    while running:
                        await trio.sleep(0.1)
                    await self.progress("before the lying power cut", 20)
                running += 1
                nursery.start_soon(one, kind)

    async def heal_all(self) -> None:
        if self.network is not None:
            self.network.heal_all()
        for node in self.nodes.values():
            if node.paused:
                node.continue_signal()
        await self.restart_exited()

    async def stop_load(self) -> None:
        """SIGUSR1 to every voter once its demo writer listens (before that
        the signal's default action would kill the process); SIGINT to the
        chaos client."""
        import trio

        if self.client is not None:
            await trio.to_thread.run_sync(self.client.stop)
            return

        def listening(node: ChaosNode) -> bool:
            with open(node.out, "rb") as f:
                f.seek(node.out_start)
                return b"demo writer started" in f.read()

        for node in self.nodes.values():
            if not node.voter:
                continue
            with trio.move_on_after(self.options.patience_s):
                while node.alive and not listening(node):
                    await trio.sleep(0.1)
            if node.alive:
                node.send(signal.SIGUSR1)

    async def settle(self, for_s: float = 2.0) -> None:
        """Wait until every node's log ends at the same batch and stays there for ``for_s``."""
        import trio

        from kraft.tools.bench.chaos.segments import segment_crcs

        def ends() -> tuple[int, ...]:
            return tuple(max((last for last, _ in segment_crcs(n.log_dir).values()), default=-1)
                         for n in self.nodes.values())

        seen: tuple[int, ...] = ()
        with trio.move_on_after(self.options.patience_s):
            while True:
                now = await trio.to_thread.run_sync(ends)
                if now == seen and len(set(now)) == 1:
                    return
                seen = now
                await trio.sleep(for_s)

    def terminate(self) -> dict[int, int | None]:
        codes: dict[int, int | None] = {}
        for node in self.nodes.values():
            node.terminate()
        for node in self.nodes.values():
            if node.proc is not None:
                codes[node.node_id] = node.wait_stopped(30)
        return codes


def _kafka_jars() -> Any:
    """Kafka's jars and ``java`` for ``--load kafka``, or the ChaosError naming the fix."""
    from kraft.tools.kafka_brokers import find_kafka

    found = find_kafka()
    if isinstance(found, str):
        raise ChaosError(f"--load kafka needs real Kafka: {found}")
    return found


def _remove_stale_namespaces() -> None:
    """Namespaces left by a run that was killed -9 (its pid is gone): the
    only way out the tool cannot clean up after itself."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    for line in done.stdout.splitlines():
        match = re.match(r"kraftchaos(\d+)-\S+", line)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            subprocess.run(["ip", "netns", "del", match.group(0)], capture_output=True)


def _fatal_line(out: Path) -> str:
    try:
        lines = [line for line in out.read_text(errors="replace").splitlines() if "Encountered fatal fault" in line]
    except OSError:
        return ""
    if not lines:
        return ""
    match = re.search(r"(fsync|write|truncate|rename|create) of \S+ failed: \w+", lines[-1])
    return f" ({match.group(0)})" if match else ""


def _last_error(out: Path) -> str:
    """The node's last ``Error:`` line (what a failing command printed), as `` (...)``."""
    try:
        lines = [line for line in out.read_text(errors="replace").splitlines() if line.startswith("Error:")]
    except OSError:
        return ""
    return f" ({lines[-1]})" if lines else ""


def _fill(directory: Path) -> Path:
    """Fill the filesystem of ``directory`` to the last byte; the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 1 << 16, 4096, 1):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler


def run_figures(chaos: Chaos) -> dict[str, Any]:
    """What the run did: faults per kind, leaders, availability, what power loss dropped, notes."""
    counts = {k: 0 for k in (*(k for k in NEMESES if k in chaos.options.nemesis), "exited")}
    for fault in chaos.faults:
        counts[fault["kind"]] = counts.get(fault["kind"], 0) + 1
    notes = list(chaos.network.notes) if chaos.network is not None else []
    return {"fault_counts": counts, "faults": [{k: v for k, v in f.items() if k != "clean"} for f in chaos.faults],
            "leader_changes": max(0, chaos.leader_changes - 1), "time_without_leader_s": chaos.no_leader_s,
            "time_without_majority_s": chaos.no_majority_s,
            "time_without_leader_after_faults_s": chaos.no_leader_after_s,
            "availability": _availability(chaos), **_power_loss(chaos), "after_heals": _after_heals(chaos),
            "notes": notes + chaos.report_lines, "wrong_fail_stops": list(chaos.wrong_exits), **({"scenario_report": dict(chaos.report)} if chaos.report else {})}


def _verdict(chaos: Chaos) -> dict[str, Any]:
    """The checker's verdict on the files as the nodes left them (through
    their disks, still powered; every process stopped), read by our own
    reader and, where its jars are, by Kafka's DumpLogSegments."""
    from kraft.tools.bench.chaos.kafka_dump import cross_check
    from kraft.tools.bench.chaos.operations import read_operations
    from kraft.tools.bench.chaos.segments import read_node_files

    dirs = {n: node.log_dir for n, node in chaos.nodes.items()}
    files = {n: read_node_files(d) for n, d in dirs.items()}
    ops = read_operations(node.history for node in chaos.nodes.values() if node.history is not None)
    result = check(ops, files, set(chaos.voter_ids), chaos.sampler)
    if chaos.client is not None:
        # The client's verdict stands for the demo load's (whose history is empty).
        client = chaos.client.verdict(files, set(chaos.voter_ids))
        result.update({k: v for k, v in client.items() if k != "files_corrupt"})  # check() judged the files
        result["acknowledged"] = result["operations"]["ok"]
    result["dump_log"], result["dump_log_disagrees"] = cross_check(dirs, files)
    return result


def _power_loss(chaos: Chaos) -> dict[str, Any]:
    """What the power cuts dropped in total. A run whose cuts dropped
    nothing at all proved no more than kill -9 would have: it fails."""
    cuts = chaos.power_cuts
    total = sum(c["bytes"] for c in cuts)
    return {"power_loss": {"cuts": len(cuts), "bytes_dropped": total, "files_dropped": sum(c["files"] for c in cuts),
                           "cuts_that_dropped_nothing": sum(1 for c in cuts if c["reported"] and not c["bytes"]),
                           "cuts_unreported": sum(1 for c in cuts if not c["reported"])},
            "power_loss_dropped_nothing": bool(cuts) and total == 0}


def _availability(chaos: Chaos) -> dict[str, dict[str, float]]:
    """Per fault kind: heals measured (with nothing else broken), mean and worst
    seconds from the heal to a leader committing again."""
    out: dict[str, dict[str, float]] = {}
    for kind in sorted({r["kind"] for r in chaos.recoveries}):
        times = [r["recovered_s"] for r in chaos.recoveries if r["kind"] == kind and r["clean"]]
        if times:
            out[kind] = {"heals": len(times), "mean_s": round(sum(times) / len(times), 2), "max_s": max(times)}
    return out


#: Kafka's defaults for the two timeouts that bound a new leader: controller.quorum.election.timeout.ms
#: and controller.quorum.fetch.timeout.ms (``QuorumConfig``).
ELECTION_TIMEOUT_S, KAFKA_FETCH_TIMEOUT_S = 1.0, 2.0


def _after_heals(chaos: Chaos) -> dict[str, float] | None:
    """Every heal with nothing else broken: seconds to a leader committing
    again, median and p99 (nearest rank), beside Kafka's own timeouts."""
    times = sorted(r["recovered_s"] for r in chaos.recoveries if r["clean"])
    if not times:
        return None
    p99 = times[min(len(times) - 1, max(0, -(-99 * len(times) // 100) - 1))]
    return {"heals": len(times), "median_s": times[len(times) // 2] if len(times) % 2 else
            round((times[len(times) // 2 - 1] + times[len(times) // 2]) / 2, 2), "p99_s": p99,
            "election_timeout_s": ELECTION_TIMEOUT_S, "fetch_timeout_s": KAFKA_FETCH_TIMEOUT_S}


# --- the run ---------------------------------------------------------------------------------


def fault_phase_header(options: ChaosOptions, root: Path, *, namespaces: bool, kinds: list[str]) -> str:
    """The line said when the faults begin: the nodes, where they run, and
    what the run will do -- the seeded schedule for ``--duration`` seconds,
    or a scenario, which ends when it does (the duration and the overlap
    limit do not apply to it)."""
    where = "each in its own network namespace" if namespaces else "on 127.0.0.1"
    nodes = (f"{options.voters} voters{' (the last a witness)' if options.witness else ''} and "
             f"{options.observers} observer{'s' if options.observers != 1 else ''} {where}, in {root}")
    if options.scenario:
        from kraft.tools.bench.chaos.scenarios import scenario_summary

        return (f"{nodes}; scenario {options.scenario} (seed {options.seed}), until it ends: "
                f"{scenario_summary(options.scenario)}")
    return (f"{nodes}; faults for {options.duration_s:g} s (seed {options.seed}, up to {options.max_concurrent} "
            f"at once: {', '.join(kinds) or 'none'}):")


async def run_chaos(options: ChaosOptions, root: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """Run the schedule (or the scenario) in ``root``; the figures and checks as a JSON-able dict."""
    import trio

    chaos = Chaos(options, root, say)
    result: dict[str, Any] = {"seed": options.seed, "voters": options.voters, "observers": options.observers,
                              "witness": options.witness, "duration_s": options.duration_s,
                              "append_rate": options.append_rate, "load": options.load, "cpus": os.cpu_count(),
                              "max_concurrent_faults": options.max_concurrent, "scenario": options.scenario,
                              "nemesis": list(options.nemesis),
                              "load_average_before": os.getloadavg()[0], "root": str(root)}
    try:
        chaos.prepare()
        chaos.history = History(root / "history.jsonl")
        if chaos.jars is not None:
            result["kafka_version"] = chaos.jars.version
        result["network"] = "network namespaces (10.211.0.0/24)" if chaos.network is not None else "127.0.0.1"
        for kind, reason in chaos.skipped.items():
            say(f"nemesis {kind} skipped: {reason}")
        result["skipped"] = dict(chaos.skipped)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_on_signals)
            for node in chaos.nodes.values():
                node.start()
            nursery.start_soon(chaos.watch)
            if chaos.client is not None:
                try:
                    await trio.to_thread.run_sync(chaos.client.start, abandon_on_cancel=True)
                except KafkaLoadError as e:
                    raise ChaosError(f"--load kafka: {e} (files in {root})") from None
            await chaos.progress("after start-up", 20)
            chaos.t0 = chaos.history.now()
            chaos.history.add("faults", phase="start", seed=options.seed,
                              **({"scenario": options.scenario} if options.scenario else
                                 {"duration_s": options.duration_s}))
            chaos.no_leader_s = chaos.no_majority_s = 0.0  # counted from the first commits on
            say(fault_phase_header(options, root, namespaces=chaos.network is not None, kinds=chaos.kinds))
            async with trio.open_nursery() as faults:
                faults.start_soon(chaos.keep_restarting)
                if options.scenario:
                    from kraft.tools.bench.chaos.scenarios import load_scenario

                    await load_scenario(options.scenario)(chaos)
                else:
                    await chaos.schedule()
                faults.cancel_scope.cancel()
            result["fault_phase_s"] = chaos.history.now() - chaos.t0
            chaos.faults_over = True  # what follows is the recovery, counted apart
            # Heal: everything runs again, the quorum commits, then the load stops.
            await chaos.heal_all()
            chaos.history.add("heal", detail="every fault healed")
            try:
                await chaos.progress("after the final heal", 20)
            except ChaosError as e:
                # Still judge the files: a stuck quorum may be hiding lost records.
                result["stalled"] = str(e)
                say(f"STALLED: {e}")
            await chaos.stop_load()
            await chaos.settle()
            result["codes"] = chaos.terminate()
            nursery.cancel_scope.cancel()
        result.update(run_figures(chaos))
        result.update(await trio.to_thread.run_sync(_verdict, chaos))
        result["load_average_after"] = os.getloadavg()[0]
        chaos.history.add("verdict", ok=chaos_ok(result), lost=result["lost"], acknowledged=result["acknowledged"])
        result["history"] = str(chaos.history.path)
        result["timeline"] = None
        # The picture is the one output that takes matplotlib: without it the run says so and goes on.
        missing = missing_line("chaos", ("matplotlib",), "only the picture needs it")
        if missing is not None:
            result["notes"].append(f"no timeline picture: {missing}")
        else:
            from kraft.tools.bench.chaos.timeline import draw_timeline

            result["timeline"] = draw_timeline(chaos.history.path, root / "timeline.svg", sorted(chaos.nodes))
    finally:
        chaos.cleanup()
    return result


class Interrupted(Exception):
    """SIGTERM or SIGHUP: the run stops and cleans up, as on Ctrl-C."""


async def _on_signals() -> None:
    import trio

    # Ctrl-C too: left to trio's KeyboardInterrupt, it is raised wherever
    # the main thread happens to be (or deferred while the main task waits
    # on a thread), and one run under load went on with its faults for
    # minutes after it. Received here, it stops the run like SIGTERM.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async for signum in signals:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise Interrupted(f"stopped by {signal.Signals(signum).name}")
