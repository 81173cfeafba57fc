"""Deterministic simulation of a KRaft cluster built from ``RaftCore`` replicas.

Everything runs on a virtual clock from one seed: the network (delay, loss,
reordering, partitions), crashes and restarts, the client workload, snapshot
creation and the replicas' own randomness. The same seed replays the same
run, event for event, so a failure reproduces from its seed alone; the
failure message prints the command that replays it::

    python -m kraft.sim --seed 1234 --voters 3 --observers 1

A run has two phases. During *chaos* faults are injected at random; then
everything *heals* (partitions removed, crashed replicas restarted, no loss)
and the run must converge: a leader is elected and a new record is
committed on every replica. The safety invariants
(:mod:`kraft.sim.invariants`) are checked after every single event.

Each replica is a :class:`SimNode`: a core, its :class:`~kraft.sim.memlog.MemLog`
and its durable ``quorum-state``. It executes each ``Ready`` exactly as the
real shell must (persist, log operations, sends) — and a crash may strike in
the middle of that sequence, losing unflushed log data and any unsent
message. A restarted replica is rebuilt from its durable election state and
what its log held at the last fsync.

With ``storage="disk"`` (``--storage disk``) each replica keeps its log
on real files instead: the node's ``MetadataLog`` and ``quorum-state`` in a
directory of its own, written through the node's own code
(:mod:`kraft.sim.disklog`). A crash then keeps only what was fsynced -- the
:class:`~kraft.sim.disk.DiskModel` tears unflushed tails (mid-batch too),
drops creations and undoes removals no directory fsync covered -- and the
replica restarts through the log's real recovery; a flushed record or the
last election state missing afterwards is an invariant violation.

Time is virtual either way. ``clock="trio"`` (``--clock trio``) runs the
same loop in one trio task that sleeps until each event on
``trio.testing.MockClock(autojump_threshold=0)``; with one task there is
nothing to interleave, so a seed gives the same run, event for event, on
both clocks (the run's digest is the same).

With ``dynamic=True`` the cluster is a KIP-853 quorum: the ``voters``
initial controllers are formatted with their voter set (``--initial-controllers``),
the observers without (they learn it from the log), every replica has a
directory id and listeners. ``reconfig=True`` adds membership changes to
the faults: an admin client sends AddRaftVoter / RemoveRaftVoter (mostly to
the leader, sometimes to another node), a replica's disk is wiped and it
comes back with a new directory id (the KIP-853 disk-failure case), a
replica moves to another port (UpdateRaftVoter), and observers may join by
themselves (``controller.quorum.auto.join.enable``). Faults that would make
the quorum lose a committed record or its availability for good -- wiping
the disks of a majority, removing live voters until the stale ones are a
majority -- are not injected: no protocol survives those.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import random
import shutil
import tempfile
import uuid
from collections import Counter, deque
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import trio
import trio.testing

from kraft.raft.core import RaftCore, Ready
from kraft.raft.errors import Errors, LocalRaftError
from kraft.raft.events import (
    AddRaftVoterRequest,
    ApiVersionsRequest,
    ApiVersionsResponse,
    EndQuorumEpochRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InboundRequest,
    InboundResponse,
    Outbound,
    OutboundRequest,
    OutboundResponse,
    RemoveRaftVoterRequest,
    RequestFailed,
    UpdateRaftVoterRequest,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.logops import InstallSnapshot, SnapshotChunk, TruncateTo
from kraft.raft.quorum_config import QuorumConfig
from kraft.records.errors import RecordsError
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import ElectionState, Leader, Role
from kraft.sim.disk import DiskModel
from kraft.sim.disklog import DiskLog, DiskLogError
from kraft.sim.invariants import Invariants, InvariantViolation
from kraft.sim.memlog import MemLog, MemLogError
from kraft.sim.simlog import SimLog
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet

CLUSTER_ID = "sim-cluster-AAAAAAAAAA"
#: The source id of admin requests (AddRaftVoter, RemoveRaftVoter); node ids
#: start at 1.
ADMIN_ID = 0
DEFAULT_CHAOS_MS = 12_000
DEFAULT_HEAL_MS = 40_000
#: Where replicas keep their log: ``memory`` (:class:`MemLog`) or ``disk``
#: (:class:`~kraft.sim.disklog.DiskLog`: the node's MetadataLog on real files).
STORAGES = ("memory", "disk")
#: What drives time: ``virtual`` (the event queue's own clock) or ``trio``
#: (the same loop awaiting ``trio.sleep_until`` under
#: ``trio.testing.MockClock(autojump_threshold=0)``). One task runs the whole
#: simulation either way, so both give the same run event for event.
CLOCKS = ("virtual", "trio")


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Knobs of one run; all but ``seed`` have defaults that CI uses."""

    seed: int
    voters: int = 3
    observers: int = 1
    #: Virtual time with faults, then time allowed to converge after healing.
    chaos_ms: int = DEFAULT_CHAOS_MS
    heal_ms: int = DEFAULT_HEAL_MS
    #: Per-message delivery delay bounds (uniform; overlapping delays reorder).
    min_delay_ms: int = 1
    max_delay_ms: int = 30
    #: Quorum settings: Kafka's defaults, except tiny fetch sizes so catch-up
    #: takes several rounds and snapshots are downloaded in many slices.
    quorum: QuorumConfig = field(
        default_factory=lambda: QuorumConfig(fetch_max_bytes=400, fetch_snapshot_max_bytes=96)
    )
    #: Voters that answer pre-votes with UNSUPPORTED_VERSION (Vote v0/v1
    #: peers); ``None``: the seed decides (about one run in four has one).
    legacy_voters: int | None = None
    #: Record every event in the trace kept for failure reports.
    trace_limit: int = 60
    #: A KIP-853 dynamic quorum (kraft.version 1), ``voters`` initial controllers.
    dynamic: bool = False
    #: Inject membership changes (implies ``dynamic``).
    reconfig: bool = False
    #: Observers add themselves as voters; ``None``: the seed decides (reconfig runs).
    auto_join: bool | None = None
    #: ``memory`` or ``disk`` (see :data:`STORAGES`).
    storage: str = "memory"
    #: ``virtual`` or ``trio`` (see :data:`CLOCKS`).
    clock: str = "virtual"

    @property
    def is_dynamic(self) -> bool:
        return self.dynamic or self.reconfig

    def replay_command(self) -> str:
        parts = [
            f"python -m kraft.sim --seed {self.seed} --voters {self.voters} --observers {self.observers}"
        ]
        if self.chaos_ms != DEFAULT_CHAOS_MS:
            parts.append(f"--chaos-ms {self.chaos_ms}")
        if self.legacy_voters is not None:
            parts.append(f"--legacy-voters {self.legacy_voters}")
        if self.reconfig:
            parts.append("--reconfig")
        elif self.dynamic:
            parts.append("--dynamic")
        if self.auto_join is not None:
            parts.append("--auto-join" if self.auto_join else "--no-auto-join")
        if self.storage != "memory":
            parts.append(f"--storage {self.storage}")
        if self.clock != "virtual":
            parts.append(f"--clock {self.clock}")
        return " ".join(parts)


class SimulationFailure(AssertionError):
    """A safety invariant broke, a replica misbehaved, or the cluster did not
    converge after healing. The message ends with the replay command."""

    def __init__(self, message: str, config: SimulationConfig, reason: str) -> None:
        super().__init__(message)
        self.config = config
        self.reason = reason

    @classmethod
    def at(
        cls, config: SimulationConfig, reason: str, now_ms: int, events: int, trace: list[str]
    ) -> SimulationFailure:
        lines = [
            reason,
            f"  seed {config.seed}, {config.voters} voters, {config.observers} observers: "
            f"failed at t={now_ms}ms after {events} events",
            "  last events:",
            *(f"    {t}" for t in trace),
            f"  replay: {config.replay_command()}",
        ]
        return cls("\n".join(lines), config, reason)

    def __reduce__(self) -> tuple[object, ...]:
        # Crosses process boundaries intact (the sweep runs seeds in a pool).
        return (SimulationFailure, (str(self), self.config, self.reason))


@dataclass(slots=True)
class SimulationResult:
    config: SimulationConfig
    events: int
    end_ms: int
    committed_end: int
    stats: Counter[str]
    #: Hash of the whole event sequence: equal seeds give equal digests.
    digest: str


class DiskStorage:
    """The real files of every replica (``storage="disk"``): one metadata log
    directory per replica and disk under a temporary root, and the
    :class:`DiskModel` that decides what a crash leaves of them."""

    def __init__(self, root: Path, model: DiskModel, clock_ms: Any) -> None:
        self.root = root
        self.model = model
        self.clock_ms = clock_ms

    def format(self, node: SimNode, bootstrap: tuple[Any, ...] | None) -> DiskLog:
        static_voters = None if node.dynamic else tuple(node.static_voter_ids)
        return DiskLog.format(
            self.root / f"node-{node.node_id}-disk-{node.disk}",
            self.model,
            self.clock_ms,
            static_voters=static_voters,
            cluster_id=CLUSTER_ID,
            bootstrap=bootstrap,
        )


class SimNode:
    """One replica: a core, its log and its durable quorum-state."""

    def __init__(
        self,
        node_id: int,
        voters: VoterSet,
        config: SimulationConfig,
        legacy: bool,
        *,
        peers: tuple[int, ...] = (),
        auto_join: bool = False,
    ) -> None:
        self.node_id = node_id
        self._static_voter = node_id in voters
        self.legacy = legacy
        self._voters = voters
        self._config = config
        self.dynamic = config.is_dynamic
        self.peers = peers
        self.auto_join = auto_join
        #: Bumped when the disk is wiped: a new directory id, a new replica.
        self.disk = 0
        self.port = 9093
        #: Set by :meth:`format` (``kafka-storage format``) when the run starts.
        self.log: SimLog = MemLog()
        self._disks: DiskStorage | None = None
        self.durable_election: ElectionState | None = None
        self.incarnation = 0
        self.core: RaftCore | None = None
        self.timer_token = 0
        self.crash_armed = False
        self.shutting_down = False
        self.last_role = "down"
        self.last_epoch = -1

    @property
    def static_voter_ids(self) -> tuple[int, ...]:
        return tuple(sorted(key.id for key in self._voters.voter_keys))

    def format(self, disks: DiskStorage | None) -> None:
        """``kafka-storage format`` this replica's (current) disk: with the
        initial voter set on a dynamic quorum's first voters
        (``--initial-controllers``), without it otherwise."""
        self._disks = disks
        bootstrap = None
        if self.dynamic and self.disk == 0 and self.node_id in self._voters:
            bootstrap = self._voters.to_entries()
        if disks is not None:
            self.log = disks.format(self, bootstrap)
            return
        log = MemLog()
        if bootstrap is not None:
            log.bootstrap(bootstrap)
        self.log = log

    def persist_election(self, state: ElectionState) -> None:
        """Write the election state durably (``quorum-state``)."""
        if isinstance(self.log, DiskLog):
            self.log.persist_election(state)
        self.durable_election = state

    # NodeView
    @property
    def is_up(self) -> bool:
        return self.core is not None

    @property
    def directory_id(self) -> uuid.UUID | None:
        return directory_id(self.node_id, self.disk) if self.dynamic else None

    @property
    def replica_key(self) -> ReplicaKey:
        return ReplicaKey(self.node_id, self.directory_id)

    @property
    def endpoints(self) -> Endpoints:
        return (Endpoint("CONTROLLER", f"node-{self.node_id}", self.port),)

    @property
    def voters(self) -> VoterSet:
        """The voter set this replica's log says (static: the configured one)."""
        if self.core is not None:
            return self.core.voters
        state = self.log.kraft_control_state()
        if state.voters is None:
            return self._voters if not self.dynamic else VoterSet.empty()
        return VoterSet.from_entries(state.voters.voters)

    @property
    def is_voter(self) -> bool:
        if not self.dynamic:
            return self._static_voter
        return self.voters.is_voter(self.replica_key)

    @property
    def role(self) -> Role | None:
        return None if self.core is None else self.core.role

    @property
    def committed_offset(self) -> int | None:
        return None if self.core is None else self.core.committed_offset

    @property
    def high_watermark(self) -> int | None:
        return None if self.core is None else self.core.high_watermark

    def start(self, seed: int) -> None:
        self.incarnation += 1
        self.shutting_down = False
        self.crash_armed = False
        if self.dynamic:
            self.core = RaftCore(
                node_id=self.node_id,
                voters=VoterSet.empty(),
                log=self.log,
                rng=random.Random(seed),
                config=self._config.quorum,
                cluster_id=CLUSTER_ID,
                election_state=self.durable_election,
                directory_id=self.directory_id,
                local_endpoints=self.endpoints,
                bootstrap_ids=self.peers,
                auto_join=self.auto_join,
                followers_always_flush=True,
            )
            return
        self.core = RaftCore(
            node_id=self.node_id,
            voters=self._voters,
            log=self.log,
            rng=random.Random(seed),
            config=self._config.quorum,
            cluster_id=CLUSTER_ID,
            election_state=self.durable_election,
        )

    def crash(self, rng: random.Random | None) -> tuple[str, ...]:
        """Lose everything not durable: memory, unflushed log data. Returns
        what the crash changed in the files (disk storage)."""
        self.core = None
        self.log = self.log.crash_copy(rng)
        self.timer_token += 1
        if isinstance(self.log, DiskLog):
            # What the node reads at start: the quorum-state file.
            self.durable_election = self.log.read_election()
            report = self.log.recovery_report
            # File names only: the trace feeds the run's digest.
            repairs = [f"recovery: {Path(r.path).name} {r.action} ({r.reason})" for r in report.repairs]
            return (*self.log.crash_changes, *repairs)
        return ()

    def wipe_disk(self) -> None:
        """The disk is replaced and formatted without initial controllers
        (``--no-initial-controllers``): an empty log, no quorum-state, a new
        directory id. The replica is down until restarted."""
        self.core = None
        self.timer_token += 1
        if isinstance(self.log, DiskLog):
            self.log.wipe()
        self.durable_election = None
        self.disk += 1
        self.format(self._disks)


def _scratch_dir() -> str | None:
    """Where the replicas' files go: a memory filesystem when there is one.
    Durability is the disk model's business, not the device's, and a real
    disk makes rename-over and truncate wait for writeback (ext4's
    ``auto_da_alloc``), which triples a sweep's wall time."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def directory_id(node_id: int, disk: int) -> uuid.UUID:
    """A deterministic directory id per (node, disk) (``meta.properties``)."""
    return uuid.UUID(int=(disk << 32) + node_id + 1)


@dataclass(order=True, slots=True)
class _Event:
    time_ms: int
    seq: int
    kind: str = field(compare=False)
    data: tuple[Any, ...] = field(compare=False, default=())


class Simulation:
    def __init__(self, config: SimulationConfig) -> None:
        if config.voters < 1 or config.observers < 0:
            raise ValueError("need at least one voter and no negative observer count")
        if config.storage not in STORAGES:
            raise ValueError(f"storage must be one of {STORAGES}, not {config.storage!r}")
        if config.clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, not {config.clock!r}")
        self.config = config
        self.rng = random.Random(config.seed)
        ids = range(1, config.voters + config.observers + 1)
        if config.is_dynamic:
            self.voter_set = VoterSet.of(
                VoterNode(
                    ReplicaKey(i, directory_id(i, 0)), (Endpoint("CONTROLLER", f"node-{i}", 9093),), (0, 1)
                )
                for i in range(1, config.voters + 1)
            )
            auto_join = config.auto_join
            if auto_join is None:
                auto_join = config.reconfig and self.rng.random() < 0.3
            self._nodes = {
                i: SimNode(
                    i, self.voter_set, config, False, peers=tuple(j for j in ids if j != i), auto_join=auto_join
                )
                for i in ids
            }
        else:
            self.voter_set = VoterSet.from_ids(range(1, config.voters + 1))
            legacy_count = config.legacy_voters
            if legacy_count is None:
                legacy_count = 1 if config.voters > 1 and self.rng.random() < 0.25 else 0
            legacy = set(self.rng.sample(range(1, config.voters + 1), min(legacy_count, config.voters)))
            self._nodes = {i: SimNode(i, self.voter_set, config, i in legacy) for i in ids}
        self.now_ms = 0
        self._queue: list[_Event] = []
        self._seq = 0
        self.events = 0
        self.stats: Counter[str] = Counter()
        self.trace: deque[str] = deque(maxlen=config.trace_limit)
        self._digest = hashlib.blake2b(digest_size=16)
        self.invariants = Invariants(dynamic=config.is_dynamic)
        self._blocked: set[tuple[int, int]] = set()
        self._drop_rate = self.rng.choice([0.0, 0.01, 0.05, 0.1])
        self._faults = True
        self._payloads = 0
        #: (responder, requester, correlation id) of pre-votes in flight.
        self._pre_vote_requests: set[tuple[int, int, int]] = set()

    # --- ClusterView -------------------------------------------------------------

    @property
    def nodes(self) -> Iterator[SimNode]:
        return iter(self._nodes.values())

    @property
    def voter_count(self) -> int:
        return len(self.voter_set)

    def node(self, node_id: int) -> SimNode:
        return self._nodes[node_id]

    def commit_voter_set(self) -> VoterSet | None:
        """The voter set of the leader that exposes the highest high
        watermark: what the last commit was counted against."""
        if not self.config.is_dynamic:
            return self.voter_set
        leaders = [
            n for n in self._nodes.values() if n.core is not None and isinstance(n.role, Leader)
            and n.high_watermark is not None
        ]
        if not leaders:
            return None
        return max(leaders, key=lambda n: n.high_watermark or 0).voters

    # --- scheduling ------------------------------------------------------------------

    def _schedule(self, at_ms: int, kind: str, *data: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Event(max(at_ms, self.now_ms), self._seq, kind, data))

    def _note(self, text: str) -> None:
        line = f"t={self.now_ms} {text}"
        self.trace.append(line)
        self._digest.update(line.encode())

    def _fail(self, reason: str) -> SimulationFailure:
        return SimulationFailure.at(self.config, reason, self.now_ms, self.events, list(self.trace))

    # --- running ---------------------------------------------------------------------

    def run(self) -> SimulationResult:
        if self.config.clock == "trio":
            return trio.run(self._run, clock=trio.testing.MockClock(autojump_threshold=0))
        return _run_to_completion(self._run())

    async def _advance(self, time_ms: int) -> None:
        """Move the clock to ``time_ms`` (never backwards). Under trio, sleep
        until then on the mock clock (it jumps: this is the only task)."""
        if self.config.clock == "trio":
            await trio.sleep_until(time_ms / 1000)
        self.now_ms = max(self.now_ms, time_ms)

    async def _run(self) -> SimulationResult:
        with self._storage() as disks:
            try:
                for node in self._nodes.values():
                    node.format(disks)
                for node in self._nodes.values():
                    self._start_node(node)
                self._schedule_chaos()
                await self._run_until(self.config.chaos_ms)
                self._heal()
                await self._converge()
                self.invariants.check(self)
            except InvariantViolation as e:
                raise self._fail(f"invariant violated: {e}") from None
            except (LocalRaftError, MemLogError, DiskLogError, RecordsError, OSError, AssertionError, ValueError,
                    TypeError) as e:
                if isinstance(e, SimulationFailure):
                    raise
                raise self._fail(f"replica error: {type(e).__name__}: {e}") from e
        return SimulationResult(
            self.config,
            self.events,
            self.now_ms,
            self.invariants.stable.committed_end,
            self.stats,
            self._digest.hexdigest(),
        )

    @contextmanager
    def _storage(self) -> Iterator[DiskStorage | None]:
        """The replicas' disks for the run: nothing for in-memory logs; for
        real files, a temporary root, removed afterwards, and the disk model
        watching fsync meanwhile."""
        if self.config.storage == "memory":
            yield None
            return
        root = Path(tempfile.mkdtemp(prefix=f"kraft-sim-{self.config.seed}-", dir=_scratch_dir()))
        model = DiskModel()
        try:
            with model.installed():
                disks = DiskStorage(root, model, lambda: self.now_ms)
                try:
                    yield disks
                finally:
                    for node in self._nodes.values():
                        if isinstance(node.log, DiskLog):
                            node.log.close()
        finally:
            shutil.rmtree(root, ignore_errors=True)

    async def _run_until(self, end_ms: int, until: object = None) -> bool:
        while self._queue and self._queue[0].time_ms <= end_ms:
            event = heapq.heappop(self._queue)
            await self._advance(event.time_ms)
            self.events += 1
            self._dispatch(event)
            self.invariants.check(self)
            if until is not None and until():  # type: ignore[operator]
                return True
        await self._advance(end_ms)
        return False

    def _dispatch(self, event: _Event) -> None:
        match event.kind:
            case "deliver":
                self._deliver(*event.data)
            case "poll":
                node_id, token = event.data
                node = self._nodes[node_id]
                if node.core is not None and token == node.timer_token:
                    self._execute(node, node.core.poll(self.now_ms))
            case "fault":
                if self._faults:
                    self._inject_fault()
                    self._schedule(self.now_ms + self.rng.randint(200, 1500), "fault")
            case "fault-restore-drop":
                if self._faults:
                    (self._drop_rate,) = event.data
            case "heal-link":
                self._blocked.discard(event.data)
            case "restart":
                (node_id,) = event.data
                node = self._nodes[node_id]
                if node.core is None:
                    self._start_node(node)
            case "append":
                self._client_append()
                if self._faults:
                    self._schedule(self.now_ms + self.rng.randint(20, 250), "append")
            case "snapshot":
                self._maybe_snapshot()
                if self._faults:
                    self._schedule(self.now_ms + self.rng.randint(500, 2500), "snapshot")
            case "admin":
                target_id, incarnation, correlation_id, request = event.data
                target = self._nodes[target_id]
                if target.core is None or target.incarnation != incarnation:
                    self.stats["admin-requests-lost"] += 1
                    return
                self._note(f"admin->{target_id} #{correlation_id} {_describe(request)}")
                self._execute(target, target.core.step(self.now_ms, InboundRequest(ADMIN_ID, correlation_id, request)))
            case _:
                raise AssertionError(f"unknown event {event.kind}")

    # --- nodes ------------------------------------------------------------------------

    def _start_node(self, node: SimNode) -> None:
        node.start(self.rng.getrandbits(64))
        self._note(f"start node {node.node_id} (incarnation {node.incarnation}) from {node.durable_election}")
        self.stats["starts"] += 1
        assert node.core is not None
        self._execute(node, node.core.initialize(self.now_ms))

    def _crash(self, node: SimNode, why: str) -> None:
        if node.core is None:
            return
        self._note(f"crash node {node.node_id} ({why})")
        changes = node.crash(self.rng)
        if changes:
            self.stats["torn-files"] += sum(1 for c in changes if not c.startswith("recovery:"))
            self.stats["recovery-repairs"] += sum(1 for c in changes if c.startswith("recovery:"))
            shown = "; ".join(changes[:6]) + ("; ..." if len(changes) > 6 else "")
            self._note(f"node {node.node_id}'s disk after the crash: {shown}")
        self.stats["crashes"] += 1
        if self._faults:
            self._schedule(self.now_ms + self.rng.randint(200, 4000), "restart", node.node_id)

    def _execute(self, node: SimNode, ready: Ready) -> None:
        """Do what the Ready says, in order; a pending crash strikes midway."""
        core = node.core
        assert core is not None
        for v in ready.violations:
            raise self._fail(
                f"node {node.node_id} refused a protocol violation from {v.source}: {v.description}"
            )
        steps = (1 if ready.persist is not None else 0) + len(ready.log) + len(ready.send)
        crash_at = self.rng.randrange(steps + 1) if node.crash_armed and steps else None
        done = 0
        if ready.persist is not None:
            if crash_at == done:
                return self._crash(node, "before persisting the election state")
            node.persist_election(ready.persist)
            done += 1
        for op in ready.log:
            if crash_at == done:
                return self._crash(node, f"before {type(op).__name__}")
            node.log.apply(op)
            self._count_log_op(op)
            done += 1
        for message in ready.send:
            if crash_at == done:
                return self._crash(node, "while sending")
            self._send(node, message)
            done += 1
        if crash_at is not None:
            return self._crash(node, "after executing a Ready")
        role_after = self._role_name(node)
        if role_after != node.last_role or core.epoch != node.last_epoch:
            if role_after != node.last_role:
                self.stats[f"became-{role_after}"] += 1
            self._note(f"node {node.node_id}: {node.last_role} -> {role_after} epoch {core.epoch}")
            node.last_role, node.last_epoch = role_after, core.epoch
        if ready.shutdown is not None:
            self._note(f"node {node.node_id} finished shutting down ({ready.shutdown})")
            self.stats["graceful-shutdowns"] += 1
            node.core = None
            node.timer_token += 1
            self._schedule(self.now_ms + self.rng.randint(300, 3000), "restart", node.node_id)
            return
        if ready.next_deadline_ms is not None:
            node.timer_token += 1
            self._schedule(ready.next_deadline_ms, "poll", node.node_id, node.timer_token)

    @staticmethod
    def _role_name(node: SimNode) -> str:
        role = node.role
        return "down" if role is None else role.name

    def _count_log_op(self, op: object) -> None:
        match op:
            case TruncateTo():
                self.stats["truncations"] += 1
            case InstallSnapshot():
                self.stats["snapshot-installs"] += 1
            case SnapshotChunk():
                self.stats["snapshot-chunks"] += 1

    # --- network ------------------------------------------------------------------------

    def _send(self, node: SimNode, message: Outbound) -> None:
        payload = message.message
        if isinstance(message, OutboundResponse) and isinstance(payload, VoteResponse):
            if payload.vote_granted and payload.leader_epoch >= 0:
                self._check_vote_durable(node, message, payload)
        self._count_message(payload)
        if message.destination == ADMIN_ID and isinstance(message, OutboundResponse):
            self._admin_answer(node, message)
            return
        dst = self._nodes[message.destination]
        lost = (
            (node.node_id, dst.node_id) in self._blocked
            or dst.core is None
            or (self._drop_rate and self.rng.random() < self._drop_rate)
        )
        if lost:
            self.stats["messages-lost"] += 1
            if isinstance(message, OutboundRequest) and dst.core is None and self.rng.random() < 0.5:
                # Connection refused: the shell reports it quickly.
                self._schedule(
                    self.now_ms + self.rng.randint(1, 5),
                    "deliver",
                    node.node_id,
                    node.incarnation,
                    None,
                    None,
                    RequestFailed(message.destination, message.correlation_id, "connection refused"),
                )
            return
        delay = self.rng.randint(self.config.min_delay_ms, self.config.max_delay_ms)
        self._schedule(
            self.now_ms + delay,
            "deliver",
            node.node_id,
            node.incarnation,
            dst.node_id,
            dst.incarnation,
            message,
        )

    def _check_vote_durable(self, node: SimNode, message: OutboundResponse, vote: VoteResponse) -> None:
        # Only real votes bind; a pre-vote grant is not recorded anywhere. The
        # response does not say which it answers, so the simulation remembers.
        key = (node.node_id, message.destination, message.correlation_id)
        if key in self._pre_vote_requests:
            self._pre_vote_requests.discard(key)
            return
        self.invariants.one_vote.check_vote_sent(node, vote.leader_epoch, message.destination)

    def _count_message(self, payload: object) -> None:
        match payload:
            case VoteRequest(pre_vote=True):
                self.stats["pre-vote-requests"] += 1
            case VoteRequest():
                self.stats["vote-requests"] += 1
            case EndQuorumEpochRequest():
                self.stats["end-quorum-epoch-requests"] += 1
            case FetchSnapshotRequest():
                self.stats["fetch-snapshot-requests"] += 1
            case UpdateRaftVoterRequest():
                self.stats["update-voter-requests"] += 1
            case AddRaftVoterRequest() | RemoveRaftVoterRequest():
                self.stats[f"auto-join-{type(payload).__name__}"] += 1
            case FetchResponse(diverging_epoch=d) if d is not None:
                self.stats["diverging-epoch-responses"] += 1
            case FetchResponse(snapshot_id=s) if s is not None:
                self.stats["snapshot-id-responses"] += 1
            case FetchSnapshotResponse(partition_error=Errors.SNAPSHOT_NOT_FOUND):
                self.stats["snapshot-not-found-responses"] += 1

    def _deliver(
        self,
        src_id: int,
        src_incarnation: int,
        dst_id: int | None,
        dst_incarnation: int | None,
        message: Outbound | RequestFailed,
    ) -> None:
        src = self._nodes[src_id]
        if isinstance(message, RequestFailed):
            # A local notification back to the sender.
            if src.core is not None and src.incarnation == src_incarnation:
                self._note(f"node {src_id}: request {message.correlation_id} to {message.destination} failed")
                self._execute(src, src.core.step(self.now_ms, message))
            return
        assert dst_id is not None
        dst = self._nodes[dst_id]
        if (
            dst.core is None
            or dst.incarnation != dst_incarnation
            or src.incarnation != src_incarnation
            or (src_id, dst_id) in self._blocked
        ):
            # A crash broke the connection, or a partition cut it in flight.
            self.stats["messages-lost"] += 1
            return
        if isinstance(message, OutboundRequest):
            request = message.message
            if isinstance(request, ApiVersionsRequest):
                # Answered by the node's listener, not its raft core.
                self.stats["api-versions-requests"] += 1
                self._send(dst, OutboundResponse(src_id, message.correlation_id,
                                                 ApiVersionsResponse(supported_kraft_versions=(0, 1))))
                return
            if isinstance(request, VoteRequest) and request.pre_vote:
                if dst.legacy:
                    # A Vote v0/v1 peer cannot parse PreVote.
                    self.stats["unsupported-version-answers"] += 1
                    self._note(f"legacy node {dst_id} rejects pre-vote from {src_id}")
                    answer = VoteResponse(error=Errors.UNSUPPORTED_VERSION)
                    self._send(dst, OutboundResponse(src_id, message.correlation_id, answer))
                    return
                self._pre_vote_requests.add((dst_id, src_id, message.correlation_id))
            self._note(f"{src_id}->{dst_id} #{message.correlation_id} {_describe(request)}")
            inbound: InboundRequest | InboundResponse = InboundRequest(
                src_id, message.correlation_id, request
            )
        else:
            self._note(f"{src_id}->{dst_id} #{message.correlation_id} {_describe(message.message)}")
            inbound = InboundResponse(src_id, message.correlation_id, message.message)
        self._execute(dst, dst.core.step(self.now_ms, inbound))

    # --- faults and workload ------------------------------------------------------------------

    def _schedule_chaos(self) -> None:
        self._schedule(self.rng.randint(500, 2000), "fault")
        self._schedule(self.rng.randint(100, 500), "append")
        self._schedule(self.rng.randint(1000, 3000), "snapshot")

    def _inject_fault(self) -> None:
        kinds = [
            "partition",
            "isolate",
            "crash",
            "crash-mid-ready",
            "shutdown-leader",
            "resign",
            "drop-burst",
            "nothing",
        ]
        weights = [3, 3, 3, 3, 1, 1, 1, 2]
        if self.config.reconfig:
            kinds += ["add-voter", "remove-voter", "replace-disk", "move-endpoint"]
            weights += [5, 4, 2, 1]
        kind = self.rng.choices(kinds, weights=weights)[0]
        if kind in ("add-voter", "remove-voter", "replace-disk", "move-endpoint"):
            self._inject_membership_fault(kind)
            return
        up = [n for n in self._nodes.values() if n.core is not None]
        all_ids = list(self._nodes)
        match kind:
            case "partition" if len(all_ids) > 1:
                side = set(self.rng.sample(all_ids, self.rng.randint(1, len(all_ids) - 1)))
                duration = self.rng.randint(500, 6000)
                self._note(f"partition {sorted(side)} | {sorted(set(all_ids) - side)} for {duration}ms")
                self.stats["partitions"] += 1
                for a in side:
                    for b in set(all_ids) - side:
                        for link in ((a, b), (b, a)):
                            if link not in self._blocked:
                                self._blocked.add(link)
                                self._schedule(self.now_ms + duration, "heal-link", *link)
            case "isolate" if up:
                victim = self._pick_leader_or_any(up)
                duration = self.rng.randint(1000, 6000)
                one_way = self.rng.random() < 0.3
                self._note(
                    f"isolate node {victim.node_id} for {duration}ms{' (inbound only)' if one_way else ''}"
                )
                self.stats["isolations"] += 1
                for other in all_ids:
                    if other == victim.node_id:
                        continue
                    links = (
                        [(other, victim.node_id)]
                        if one_way
                        else [(other, victim.node_id), (victim.node_id, other)]
                    )
                    for link in links:
                        if link not in self._blocked:
                            self._blocked.add(link)
                            self._schedule(self.now_ms + duration, "heal-link", *link)
            case "crash" if up:
                self._crash(self._pick_leader_or_any(up), "fault")
            case "crash-mid-ready" if up:
                victim = self._pick_leader_or_any(up)
                victim.crash_armed = True
                self._note(f"node {victim.node_id} will crash while executing its next Ready")
            case "shutdown-leader":
                leaders = [n for n in up if isinstance(n.role, Leader) and not n.shutting_down]
                if leaders:
                    node = leaders[0]
                    node.shutting_down = True
                    assert node.core is not None
                    self._note(f"graceful shutdown of leader {node.node_id}")
                    self._execute(node, node.core.begin_shutdown(self.now_ms, 5000))
            case "resign":
                for node in up:
                    if isinstance(node.role, Leader) and node.core is not None:
                        self._note(f"leader {node.node_id} asked to resign")
                        self.stats["resign-requests"] += 1
                        node.core.resign(node.core.epoch)
                        self._execute(node, node.core.poll(self.now_ms))
                        break
            case "drop-burst":
                old = self._drop_rate
                self._drop_rate = 0.3
                self._note("30% message loss for a while")
                self._schedule(self.now_ms + self.rng.randint(200, 2000), "fault-restore-drop", old)
            case _:
                pass

    # --- membership changes (reconfig runs) ---------------------------------------------------

    def _leader(self) -> SimNode | None:
        leaders = [n for n in self._nodes.values() if n.core is not None and isinstance(n.role, Leader)]
        return max(leaders, key=lambda n: n.core.epoch if n.core else -1) if leaders else None

    def _live(self, voters: VoterSet) -> int:
        """Voters whose replica still exists (its disk was not wiped since)."""
        return sum(1 for key in voters.voter_keys if self._nodes[key.id].replica_key == key)

    def _voter_sets_in_play(self) -> list[VoterSet]:
        """Every voter set some replica's log holds now (they differ while a
        change is uncommitted)."""
        sets: list[VoterSet] = []
        for node in self._nodes.values():
            voters = node.voters
            if len(voters) and voters not in sets:
                sets.append(voters)
        return sets

    def _inject_membership_fault(self, kind: str) -> None:
        up = [n for n in self._nodes.values() if n.core is not None]
        leader = self._leader()
        match kind:
            case "add-voter" if leader is not None:
                voters = leader.voters
                candidates = [n for n in up if not voters.is_voter(n.replica_key) and n.replica_key.id not in voters]
                if not candidates:
                    return
                new = self.rng.choice(candidates)
                request: AddRaftVoterRequest | RemoveRaftVoterRequest = AddRaftVoterRequest(
                    cluster_id=CLUSTER_ID, voter_key=new.replica_key, listeners=new.endpoints
                )
                self._admin_send(leader if self.rng.random() < 0.85 else self.rng.choice(up), request)
            case "remove-voter" if leader is not None:
                voters = leader.voters
                if len(voters) < 2:
                    return
                # Stale keys (wiped disks) first; never leave the live voters a minority.
                stale = [k for k in voters.voter_keys if self._nodes[k.id].replica_key != k]
                keys = stale if stale and self.rng.random() < 0.7 else list(voters.voter_keys)
                key = self.rng.choice(keys)
                remaining = voters.remove_voter(key)
                if remaining is None or self._live(remaining) < remaining.majority_size:
                    return
                request = RemoveRaftVoterRequest(cluster_id=CLUSTER_ID, voter_key=key)
                self._admin_send(leader if self.rng.random() < 0.85 else self.rng.choice(up), request)
            case "replace-disk":
                # A leader still counts what the lost disk fetched; only a disk
                # holding nothing uncommitted can go without a later commit
                # being counted on a copy that no longer exists (the disk-loss
                # hazard KIP-853 cannot remove: it is beyond the crash model).
                committed_end = self.invariants.stable.committed_end
                spare = [n for n in self._nodes.values() if n.log.end_offset <= committed_end]
                if not spare:
                    return
                victim = self.rng.choice(spare)
                key = victim.replica_key
                for voters in self._voter_sets_in_play():
                    if voters.is_voter(key) and self._live(voters) - 1 < voters.majority_size:
                        return  # it would leave a voter set without a live majority
                commit_voters = self.invariants.commit_voters
                if commit_voters is not None and commit_voters.is_voter(key):
                    holders = self.invariants.durable.holders(self, self.invariants.stable.committed, commit_voters)
                    if len([h for h in holders if h != victim.node_id]) < commit_voters.majority_size:
                        return  # it would lose a committed record
                self._note(f"disk of node {victim.node_id} replaced (directory {key.directory_id} is gone)")
                self.stats["disks-replaced"] += 1
                victim.wipe_disk()
                self._schedule(self.now_ms + self.rng.randint(200, 3000), "restart", victim.node_id)
            case "move-endpoint" if up:
                victim = self.rng.choice(up)
                self._crash(victim, "moving to another port")
                victim.port += 1
                self.stats["endpoint-moves"] += 1
            case _:
                pass

    def _admin_send(self, target: SimNode, request: object) -> None:
        self._payloads += 1
        correlation_id = 10_000_000 + self._payloads
        self.stats[f"admin-{type(request).__name__}"] += 1
        delay = self.rng.randint(self.config.min_delay_ms, self.config.max_delay_ms)
        self._schedule(self.now_ms + delay, "admin", target.node_id, target.incarnation, correlation_id, request)

    def _admin_answer(self, node: SimNode, message: OutboundResponse) -> None:
        answer = message.message
        error = getattr(answer, "error", Errors.NONE)
        self.stats[f"admin-{type(answer).__name__}-{error.name}"] += 1
        detail = getattr(answer, "error_message", None)
        self._note(f"node {node.node_id}->admin #{message.correlation_id} {type(answer).__name__} {error.name} {detail or ''}")

    def _pick_leader_or_any(self, up: list[SimNode]) -> SimNode:
        leaders = [n for n in up if isinstance(n.role, Leader)]
        if leaders and self.rng.random() < 0.5:
            return leaders[0]
        return self.rng.choice(up)

    def _client_append(self) -> None:
        for node in self._nodes.values():
            core = node.core
            if core is not None and core.is_leader and not node.shutting_down:
                count = self.rng.randint(1, 3)
                records = []
                for _ in range(count):
                    self._payloads += 1
                    records.append(f"s{self.config.seed}-r{self._payloads}".encode())
                try:
                    core.append(self.now_ms, records)
                except LocalRaftError:
                    continue
                self.stats["records-appended"] += count
                self._execute(node, core.poll(self.now_ms))

    def _maybe_snapshot(self) -> None:
        candidates = [n for n in self._nodes.values() if n.core is not None and n.committed_offset]
        if not candidates:
            return
        node = self.rng.choice(candidates)
        core = node.core
        assert core is not None
        offset = core.committed_offset
        if offset is None or offset <= node.log.start_offset or offset > node.log.end_offset:
            return
        entry = node.log.entry_at(offset - 1)
        if entry is None:
            return
        sid = OffsetAndEpoch(offset, entry[0])
        try:
            core.validate_snapshot_id(sid)
        except LocalRaftError as e:
            raise self._fail(
                f"node {node.node_id} refused snapshot {sid} at its own high watermark: {e}"
            ) from e
        if isinstance(node.log, DiskLog):
            # As the node does: write the snapshot, then retention moves the log start.
            if not node.log.create_snapshot(sid):
                return
        else:
            assert isinstance(node.log, MemLog)
            node.log.create_snapshot(sid)
            node.log.delete_before_snapshot(sid)
        self.stats["snapshots-created"] += 1
        self._note(f"node {node.node_id} snapshots {sid}, log start moves")

    # --- healing and convergence ------------------------------------------------------------

    def _heal(self) -> None:
        self._faults = False
        self._note("heal: no more faults, partitions removed, crashed nodes restart")
        self._blocked.clear()
        self._drop_rate = 0.0
        for node in self._nodes.values():
            node.crash_armed = False
            if node.core is None:
                self._start_node(node)

    async def _converge(self) -> None:
        deadline = self.now_ms + self.config.heal_ms
        marker: tuple[int, int] | None = None  # (epoch, offset)
        while True:
            leader = self._stable_leader()
            if leader is not None and leader.core is not None:
                core = leader.core
                if marker is None or marker[0] != core.epoch:
                    self._payloads += 1
                    offset = core.append(
                        self.now_ms, [f"s{self.config.seed}-marker{self._payloads}".encode()]
                    )
                    marker = (core.epoch, offset)
                    self._note(f"marker appended at offset {offset} epoch {core.epoch}")
                    self._execute(leader, core.poll(self.now_ms))
                target = marker[1] + 1
                if all(
                    n.core is not None and (n.committed_offset or 0) >= target for n in self._nodes.values()
                ):
                    self.stats["converged"] += 1
                    return
            if not self._queue:
                raise self._fail("liveness: the healed cluster has nothing left to do")
            step_end = min(deadline, self.now_ms + 50)
            await self._run_until(step_end)
            if self.now_ms >= deadline:
                states = ", ".join(
                    f"{n.node_id}:{self._role_name(n)}@{n.core.epoch if n.core else '-'}"
                    f" hw={n.committed_offset} leo={n.log.end_offset}"
                    for n in self._nodes.values()
                )
                raise self._fail(
                    f"liveness: no leader committed a new record on every replica within "
                    f"{self.config.heal_ms}ms after healing ({states})"
                )

    def _stable_leader(self) -> SimNode | None:
        leaders = [n for n in self._nodes.values() if isinstance(n.role, Leader)]
        if len(leaders) != 1:
            return None
        leader = leaders[0]
        return leader if leader.high_watermark is not None else None


def _describe(payload: object) -> str:
    text = repr(payload)
    if isinstance(payload, FetchResponse) and payload.records:
        text = repr(replace(payload, records=f"<{len(payload.records)} bytes>".encode()))
    return text if len(text) < 300 else text[:297] + "..."


def _run_to_completion(coroutine: Coroutine[Any, Any, SimulationResult]) -> SimulationResult:
    """Run a coroutine that never suspends (the virtual clock's ``_advance``
    returns at once) to its result, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the simulation awaited something other than its own clock")


def simulate(
    seed: int,
    voters: int = 3,
    observers: int = 1,
    **options: object,
) -> SimulationResult:
    """Run one seeded simulation; raises :class:`SimulationFailure` (with the
    replay command) if any invariant breaks or the cluster does not converge."""
    config = SimulationConfig(seed=seed, voters=voters, observers=observers, **options)  # type: ignore[arg-type]
    return Simulation(config).run()
