"""What the raft core asks its shell to do: the ``Ready`` contract.

Each of ``initialize``/``step``/``poll``/``begin_shutdown`` returns a
:class:`Ready`, which the shell executes **completely and in this order**
before calling the core again:

1. ``persist`` — write the election state to ``quorum-state`` (fsync the
   temporary file, atomic rename) in the form of ``kraft_version``: data
   version 0 (with the static voter ids) under kraft.version 0, data version
   1 (with ``votedDirectoryId``) from kraft.version 1 on -- Kafka's
   ``FileQuorumStateStore`` writes ``kraftVersion.quorumStateVersion()`` of
   the latest kraft.version in the log, so the first write after an in-place
   upgrade is version 1. A vote or candidacy is durable before any message
   that depends on it leaves the node.
2. ``log`` — the log operations in list order (appends, truncation, snapshot
   download and install, ``Flush`` = fsync). The core reads the log only
   through :class:`~kraft.records.view.LogView`; it sees the effect of these
   operations on its next call, and counts the leader's own appended records
   towards the high watermark only after the ``Flush`` covering them has
   completed. A leader spreads a write over three Readys, as Kafka's
   ``flushLeaderLog`` moves the end offset before it flushes "so that parked
   fetches can return sooner": the batches (no fsync); the parked fetches
   answered with them; then the ``Flush``, while the followers write the
   same records -- the two fsyncs overlap instead of adding up.
3. ``send`` — the outbound requests and responses.
4. ``committed`` — if set, the new high watermark: records below it are
   committed; hand them to listeners (read them from the log).
5. ``leader_change`` — if set, tell listeners the new leader and epoch. As
   Kafka's ``KafkaRaftClient`` fires ``handleLeaderChange``, this replica
   learns of its own leadership only once the committed offsets handed to
   the listeners reached the epoch's start offset (the previous leaders'
   records are all replayed first); other leader changes come at once.
6. ``next_deadline_ms`` — call :meth:`~kraft.raft.core.RaftCore.poll` no later than this
   (``None``: only a message can make the core act). It may equal ``now_ms``:
   then poll right after executing this Ready (for example so a follower sends
   its next Fetch from the log end it just wrote).

``violations`` lists things a peer sent that a correct replica never sends;
the core refused them. ``shutdown`` reports the end of a graceful shutdown.
``role_changes`` lists the role transitions the call made, each with the
reason it happened (for the operator's log and the metrics; nothing to
execute). ``notices`` are lines for the operator's log (INFO), each said once
per change of what it reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraft.raft.errors import RemoteProtocolViolation
from kraft.raft.events import Outbound
from kraft.raft.logops import LogOp
from kraft.raft.roles import ElectionState, LeaderAndEpoch


@dataclass(frozen=True, slots=True)
class ShutdownOutcome:
    """How a graceful shutdown ended: ``completed`` (a leader was handed over,
    or none is needed) or timed out."""

    completed: bool


@dataclass(frozen=True, slots=True)
class RoleChange:
    """One role transition: the roles' names (``previous`` None at start-up),
    the epoch and leader after it, and why, as a short phrase for an operator
    ("fetch timeout after 2000 ms", "lost pre-vote: 1 of 3 votes")."""

    previous: str | None
    role: str
    epoch: int
    leader_id: int | None
    reason: str


@dataclass(slots=True)
class Ready:
    """What the shell must do, in field order (see the module docstring)."""

    persist: ElectionState | None = None
    log: list[LogOp] = field(default_factory=list)
    send: list[Outbound] = field(default_factory=list)
    committed: int | None = None
    leader_change: LeaderAndEpoch | None = None
    next_deadline_ms: int | None = None
    violations: list[RemoteProtocolViolation] = field(default_factory=list)
    shutdown: ShutdownOutcome | None = None
    role_changes: list[RoleChange] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    #: The latest kraft.version in the log: the form ``persist`` is written in.
    kraft_version: int = 0
