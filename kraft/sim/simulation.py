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

This module is the event loop; the replicas are in :mod:`kraft.sim.replica`,
the network in :mod:`kraft.sim.network`, the faults in :mod:`kraft.sim.faults`.

Each replica is a :class:`~kraft.sim.replica.SimNode`: a core, its :class:`~kraft.sim.memlog.MemLog`
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
last election state missing afterwards is an invariant violation. A disk may
also start failing every fsync (EIO): the replica must then fail-stop as
the node does (:mod:`kraft.node.fault`) -- crash at once, nothing of that
Ready sent -- and comes back on a healthy disk.

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
import random
import shutil
import tempfile
from collections import Counter, deque
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio.testing

from kraft.raft.core import RaftCore, Ready
from kraft.raft.errors import LocalRaftError
from kraft.raft.events import InboundRequest
from kraft.raft.logops import AppendAsLeader, InstallSnapshot, SnapshotChunk, TruncateTo
from kraft.raft.roles import Leader
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.records.errors import RecordsError
from kraft.records.view import OffsetAndEpoch
from kraft.sim import behind_survivor
from kraft.sim.sim_config import (
    ADMIN_ID,
    CLOCKS,
    CLUSTER_ID,
    DEFAULT_CHAOS_MS,
    DEFAULT_HEAL_MS,
    STORAGES,
    SimulationConfig,
    SimulationFailure,
    SimulationResult,
)
from kraft.sim.disk import DiskModel
from kraft.sim.disklog import DiskLog, DiskLogError
from kraft.sim.faults import FaultInjector
from kraft.sim.invariants import Invariants, InvariantViolation
from kraft.sim.memlog import MemLog, MemLogError
from kraft.sim.network import Network, describe
from kraft.sim.replica import DiskStorage, SimNode, directory_id, scratch_dir

__all__ = [
    "ADMIN_ID", "CLOCKS", "CLUSTER_ID", "DEFAULT_CHAOS_MS", "DEFAULT_HEAL_MS", "STORAGES",
    "Simulation", "SimulationConfig", "SimulationFailure", "SimulationResult", "simulate",
]

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
        self.network = Network(self, self.rng.choice([0.0, 0.01, 0.05, 0.1]),
                               admin_answer=lambda node, message: self.faults.admin_answer(node, message))
        self.faults = FaultInjector(self, self.network)
        self._faults = True
        self._payloads = 0
        #: Hand-over epochs not yet followed by a non-witness leader.
        self._handovers_open: set[int] = set()
        #: behind-survivor: nodes that never restart, and when the survivor
        #: came back (the liveness bound counts from there).
        self.dead_forever: set[int] = set()
        self.survivor_back_ms: int | None = None
        self.first_leader_after_back_ms: int | None = None

    # --- CheckedCluster ----------------------------------------------------------

    @property
    def nodes(self) -> Iterator[SimNode]:
        return iter(self._nodes.values())

    @property
    def voter_count(self) -> int:
        return len(self.voter_set)

    def next_payload_id(self) -> int:
        self._payloads += 1
        return self._payloads

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

    def schedule(self, at_ms: int, kind: str, *data: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Event(max(at_ms, self.now_ms), self._seq, kind, data))

    def note(self, text: str) -> None:
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
        root = Path(tempfile.mkdtemp(prefix=f"kraft-sim-{self.config.seed}-", dir=scratch_dir()))
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
                self.network.deliver(*event.data)
            case "poll":
                node_id, token = event.data
                node = self._nodes[node_id]
                if node.core is not None and token == node.timer_token:
                    self.execute(node, node.core.poll(self.now_ms))
            case "fault":
                if self._faults:
                    self.faults.inject_fault()
                    self.schedule(self.now_ms + self.rng.randint(200, 1500), "fault")
            case "fault-restore-drop":
                if self._faults:
                    (self.network.drop_rate,) = event.data
            case "heal-link":
                self.network.blocked.discard(event.data)
            case "scenario":
                behind_survivor.step(self, *event.data)
            case "restart":
                (node_id,) = event.data
                node = self._nodes[node_id]
                if node.core is None and node_id not in self.dead_forever:
                    self._start_node(node)
            case "append":
                self._client_append()
                if self._faults:
                    self.schedule(self.now_ms + self.rng.randint(20, 250), "append")
            case "snapshot":
                self._maybe_snapshot()
                if self._faults:
                    self.schedule(self.now_ms + self.rng.randint(500, 2500), "snapshot")
            case "admin":
                target_id, incarnation, correlation_id, request = event.data
                target = self._nodes[target_id]
                if target.core is None or target.incarnation != incarnation:
                    self.stats["admin-requests-lost"] += 1
                    return
                self.note(f"admin->{target_id} #{correlation_id} {describe(request)}")
                target.core.step(self.now_ms, InboundRequest(ADMIN_ID, correlation_id, request))
                self.execute(target, target.core.poll(self.now_ms))
            case _:
                raise AssertionError(f"unknown event {event.kind}")

    # --- nodes ------------------------------------------------------------------------

    def _start_node(self, node: SimNode) -> None:
        node.start(self.rng.getrandbits(64))
        self.note(f"start node {node.node_id} (incarnation {node.incarnation}) from {node.durable_election}")
        self.stats["starts"] += 1
        assert node.core is not None
        self.execute(node, node.core.initialize(self.now_ms))

    def crash(self, node: SimNode, why: str) -> None:
        if node.core is None:
            return
        self.note(f"crash node {node.node_id} ({why})")
        changes = node.crash(self.rng)
        if changes:
            self.stats["torn-files"] += sum(1 for c in changes if not c.startswith("recovery:"))
            self.stats["recovery-repairs"] += sum(1 for c in changes if c.startswith("recovery:"))
            shown = "; ".join(changes[:6]) + ("; ..." if len(changes) > 6 else "")
            self.note(f"node {node.node_id}'s disk after the crash: {shown}")
        self.stats["crashes"] += 1
        if self._faults:
            self.schedule(self.now_ms + self.rng.randint(200, 4000), "restart", node.node_id)

    def execute(self, node: SimNode, ready: Ready) -> None:
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
                return self.crash(node, "before persisting the election state")
            try:
                node.persist_election(ready.persist)
            except OSError as e:
                if self._on_disk_error(node, "persisting the election state", e):
                    return None
                raise
            done += 1
        for op in ready.log:
            if type(op) is AppendAsLeader and op.batch.records and core.handover_leadership is not None:
                raise self._fail(f"witness {node.node_id} appended records in its hand-over epoch {core.epoch}")
            if crash_at == done:
                return self.crash(node, f"before {type(op).__name__}")
            try:
                node.log.apply(op)
            except OSError as e:
                if self._on_disk_error(node, type(op).__name__, e):
                    return None
                break  # (a shell that survives it: the rest of the log ops are skipped)
            self._count_log_op(op)
            done += 1
        for message in ready.send:
            if crash_at == done:
                return self.crash(node, "while sending")
            self.network.send(node, message)
            done += 1
        if crash_at is not None:
            return self.crash(node, "after executing a Ready")
        role_after = self._role_name(node)
        if role_after != node.last_role or core.epoch != node.last_epoch:
            if role_after != node.last_role:
                self.stats[f"became-{role_after}"] += 1
                if role_after == "Leader" and node.node_id in self.config.witnesses:
                    self._witness_leads(node, core)
                elif role_after == "Leader" and node.node_id not in self.config.witnesses:
                    # A non-witness leads: every hand-over epoch before it ended well.
                    self._handovers_open.clear()
                    if self.survivor_back_ms is not None and self.first_leader_after_back_ms is None:
                        self.first_leader_after_back_ms = self.now_ms
            self.note(f"node {node.node_id}: {node.last_role} -> {role_after} epoch {core.epoch}")
            node.last_role, node.last_epoch = role_after, core.epoch
        if ready.shutdown is not None:
            self.note(f"node {node.node_id} finished shutting down ({ready.shutdown})")
            self.stats["graceful-shutdowns"] += 1
            node.core = None
            node.timer_token += 1
            self.schedule(self.now_ms + self.rng.randint(300, 3000), "restart", node.node_id)
            return
        if ready.next_deadline_ms is not None:
            node.timer_token += 1
            self.schedule(ready.next_deadline_ms, "poll", node.node_id, node.timer_token)

    def _witness_leads(self, node: SimNode, core: RaftCore) -> None:
        """A witness may lead only a hand-over epoch (kraft/raft/handover.py);
        it stays open until a non-witness leads a later epoch."""
        if core.handover_leadership is None:
            raise self._fail(f"witness {node.node_id} became leader in epoch {core.epoch}")
        self.stats["handover-epochs"] += 1
        self._handovers_open.add(core.epoch)

    def _on_disk_error(self, node: SimNode, during: str, error: OSError) -> bool:
        """The node's shell on a disk error of unknown outcome: fail-stop
        (:mod:`kraft.node.fault`). The process dies at once -- nothing of the
        Ready is sent, nothing unflushed is kept beyond what a crash keeps --
        and an operator restarts it on a healthy disk. True: the node
        stopped."""
        self.stats["fail-stops"] += 1
        self.crash(node, f"fail-stop on a disk error during {during}: {error.strerror}")
        return True

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

    # --- faults and workload ------------------------------------------------------------------

    def _schedule_chaos(self) -> None:
        if self.config.scenario == "behind-survivor":
            behind_survivor.schedule(self)
            self.schedule(self.rng.randint(100, 500), "append")
            return
        self.schedule(self.rng.randint(500, 2000), "fault")
        self.schedule(self.rng.randint(100, 500), "append")
        self.schedule(self.rng.randint(1000, 3000), "snapshot")

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
                self.execute(node, core.poll(self.now_ms))

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
            try:
                if not node.log.create_snapshot(sid):
                    return
            except OSError as e:
                if self._on_disk_error(node, "snapshot creation", e):
                    return
                raise
        else:
            assert isinstance(node.log, MemLog)
            node.log.create_snapshot(sid)
            node.log.delete_before_snapshot(sid)
        self.stats["snapshots-created"] += 1
        self.note(f"node {node.node_id} snapshots {sid}, log start moves")

    # --- healing and convergence ------------------------------------------------------------

    def _heal(self) -> None:
        self._faults = False
        self.note("heal: no more faults, partitions removed, crashed nodes restart")
        self.network.blocked.clear()
        self.network.drop_rate = 0.0
        for node in self._nodes.values():
            node.crash_armed = False
            if isinstance(node.log, DiskLog):
                node.log.heal_fsync()
            if node.core is None and node.node_id not in self.dead_forever:
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
                    self.note(f"marker appended at offset {offset} epoch {core.epoch}")
                    self.execute(leader, core.poll(self.now_ms))
                target = marker[1] + 1
                if all(
                    n.core is not None and (n.committed_offset or 0) >= target for n in self._nodes.values()
                    if n.node_id not in self.dead_forever
                ):
                    if self._handovers_open:
                        raise self._fail(f"hand-over epochs {sorted(self._handovers_open)} never ended with a "
                                         f"non-witness leader")
                    problem = behind_survivor.problem_at_convergence(self, leader)
                    if problem is not None:
                        raise self._fail(problem)
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
        if leader.core is not None and leader.core.handover_leadership is not None:
            return None  # a witness handing the log over appends no marker
        return leader if leader.high_watermark is not None else None


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
