"""What one simulation run is: its knobs (:class:`SimulationConfig`), its
outcome (:class:`SimulationResult`) and how it fails (:class:`SimulationFailure`,
whose message ends with the command that replays the seed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kraft.raft.quorum_config import QuorumConfig

__all__ = [
    "ADMIN_ID", "CLOCKS", "CLUSTER_ID", "DEFAULT_CHAOS_MS", "DEFAULT_HEAL_MS", "STORAGES",
    "SimulationConfig", "SimulationFailure", "SimulationResult",
]

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
    #: Node ids that run as witnesses (kraft/raft/witness_policy.py): they vote and
    #: replicate but never campaign; a witness that leads fails the run.
    witnesses: tuple[int, ...] = ()
    #: How a witness knows it is one: ``forced`` (``kraft.witness=true``) or
    #: ``auto`` (``kraft.witness=auto``, having heard every other node's
    #: ApiVersions: the non-witnesses advertise Kafka controller APIs).
    witness_detection: str = "forced"
    #: ``behind-survivor``: instead of random faults, the schedule of a
    #: two-site deployment's worst case -- a voter that may lead is cut off
    #: while records commit, the leader dies for good, the voter comes back
    #: behind the witness (kraft/raft/handover.py). Needs a witness.
    scenario: str | None = None

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
        if self.witnesses:
            parts.append("--witnesses " + ",".join(str(i) for i in self.witnesses))
        if self.witness_detection != "forced":
            parts.append(f"--witness-detection {self.witness_detection}")
        if self.scenario is not None:
            parts.append(f"--scenario {self.scenario}")
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
