"""One simulated replica (:class:`SimNode`): a ``RaftCore``, its log (in
memory, or the node's ``MetadataLog`` on real files through
:class:`DiskStorage`) and its durable ``quorum-state``; what a crash or a
replaced disk leaves of it."""

from __future__ import annotations

import os
import random
import uuid
from pathlib import Path
from typing import Any

from kraft.raft.core import RaftCore
from kraft.raft.roles import ElectionState, Role
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey, VoterSet
from kraft.raft.witness_policy import KAFKA_CONTROLLER_APIS, WitnessMode, WitnessPolicy
from kraft.sim.sim_config import CLUSTER_ID, SimulationConfig
from kraft.sim.disk import DiskModel
from kraft.sim.disklog import DiskLog
from kraft.sim.memlog import MemLog
from kraft.sim.simlog import SimLog

__all__ = ["DiskStorage", "SimNode", "directory_id", "scratch_dir"]

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


#: What a kraft node and a Kafka controller advertise on the controller
#: listener, for auto-detected witnesses (a few of kraft's APIs; Kafka's add
#: its controller APIs).
_KRAFT_APIS = (1, 17, 18, 52, 53, 54, 55, 59, 60)
_KAFKA_APIS = _KRAFT_APIS + tuple(KAFKA_CONTROLLER_APIS)


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
                campaign_policy=self._campaign_policy(),
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
            campaign_policy=self._campaign_policy(),
        )

    def _campaign_policy(self) -> WitnessPolicy | None:
        config = self._config
        if self.node_id not in config.witnesses:
            return None
        if config.witness_detection != "auto":
            return WitnessPolicy.forced()
        # kraft.witness=auto, every other node's ApiVersions heard: the
        # others witnesses answer as kraft nodes, the rest as Kafka controllers.
        policy = WitnessPolicy(WitnessMode.AUTO)
        for other in range(1, config.voters + config.observers + 1):
            if other != self.node_id:
                policy.heard(other, _KRAFT_APIS if other in config.witnesses else _KAFKA_APIS)
        return policy

    def crash(self, rng: random.Random | None) -> tuple[str, ...]:
        """Lose everything not durable: memory, unflushed log data. Returns
        what the crash changed in the files (disk storage)."""
        self.core = None
        if isinstance(self.log, DiskLog):
            # It comes back on a healthy disk (the operator's fix; recovery fsyncs).
            self.log.heal_fsync()
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


def scratch_dir() -> str | None:
    """Where the replicas' files go: a memory filesystem when there is one.
    Durability is the disk model's business, not the device's, and a real
    disk makes rename-over and truncate wait for writeback (ext4's
    ``auto_da_alloc``), which triples a sweep's wall time."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def directory_id(node_id: int, disk: int) -> uuid.UUID:
    """A deterministic directory id per (node, disk) (``meta.properties``)."""
    return uuid.UUID(int=(disk << 32) + node_id + 1)
