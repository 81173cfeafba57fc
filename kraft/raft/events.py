"""The raft core's inputs and outputs: KRaft RPC messages and their envelopes.

The message classes mirror the fields of Kafka's JSON specs that the core
needs (``VoteRequest.json``, ``FetchResponse.json``, ...), flattened to the
single ``__cluster_metadata-0`` partition KRaft replicates: the wire layer maps
the one-topic/one-partition arrays to and from these. Field semantics are
Kafka's, including ``-1`` for "no leader" / "unknown"; optional structs that
Kafka encodes as ``(-1, -1)`` (diverging epoch, snapshot id) are ``None`` here.

Envelopes tie a message to a peer:

* inbound: :class:`InboundRequest` (answer it by echoing its
  ``correlation_id`` in an :class:`OutboundResponse`), :class:`InboundResponse`
  (matched by the core to a request it sent), and :class:`RequestFailed` (the
  shell could not deliver a request or the connection broke);
* outbound: :class:`OutboundRequest` (the core picks the ``correlation_id``;
  the shell resolves ``destination`` to an address through the voter set) and
  :class:`OutboundResponse`.

KIP-853's voter changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter)
are requests like the others: an admin client's arrive with a source id the
core does not use (answers go back by correlation id), and the leader's
ApiVersions to a would-be voter names the endpoints to dial.

Records travel as opaque bytes (``FetchResponse.records``,
``FetchSnapshotResponse.unaligned_records``): the core never parses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypedDict

from kraft.raft.errors import Errors
from kraft.records.view import OffsetAndEpoch
from kraft.raft.voters import Endpoints, ReplicaKey


class TopicPartition(NamedTuple):
    topic: str
    partition: int


#: The one partition KRaft replicates.
METADATA_PARTITION = TopicPartition("__cluster_metadata", 0)

#: Kafka's sentinel for "no leader" / "unknown" in int fields.
NO_LEADER = -1


class LeaderFields(TypedDict):
    """The current-leader fields every KRaft response carries
    (``QuorumState.leader_fields``)."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


# --- Vote (api key 52) -----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteRequest:
    """Sent by a Prospective (``pre_vote=True``, KIP-996) or a Candidate."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    #: The receiving voter's key (KIP-853, v1+); ``None`` when not sent.
    voter_key: ReplicaKey | None = None
    #: The nominee's epoch: bumped for a real vote, the current one for a pre-vote.
    candidate_epoch: int
    candidate_key: ReplicaKey
    #: Epoch and end offset of the nominee's log (the "last fetched epoch" and LEO).
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class VoteResponse:
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    vote_granted: bool = False
    leader_endpoints: Endpoints = ()


# --- BeginQuorumEpoch (53) ------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochRequest:
    """A new leader announcing itself to a voter."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    voter_key: ReplicaKey | None = None
    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BeginQuorumEpochResponse:
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


# --- EndQuorumEpoch (54) --------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochRequest:
    """A resigning leader asking the voters to elect a successor, the most
    caught-up first (``PreferredCandidates``, v1; ``PreferredSuccessors`` in v0)."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    leader_id: int
    leader_epoch: int
    preferred_candidates: tuple[ReplicaKey, ...] = ()
    leader_endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EndQuorumEpochResponse:
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


# --- Fetch (1) -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequest:
    """A follower's or observer's pull: its log end offset (``fetch_offset``)
    and the epoch of its last record (``last_fetched_epoch``), which the leader
    checks against its leader-epoch cache (KIP-595 log reconciliation)."""

    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    #: ``ReplicaState.ReplicaId`` plus ``ReplicaDirectoryId``; id -1 for a
    #: replica without an id (never counted by the leader).
    replica_key: ReplicaKey
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int
    #: The fetcher's high watermark (-1 unknown): the leader answers a parked
    #: fetch early once its own high watermark is larger.
    high_watermark: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponse:
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    #: Set when the fetch offset/epoch diverged from the leader's log: the
    #: fetcher truncates to this (``DivergingEpoch``).
    diverging_epoch: OffsetAndEpoch | None = None
    #: Set when the fetcher must download this snapshot first (``SnapshotId``).
    snapshot_id: OffsetAndEpoch | None = None
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


# --- FetchSnapshot (59) ----------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotRequest:
    cluster_id: str | None
    topic_partition: TopicPartition = METADATA_PARTITION
    replica_key: ReplicaKey
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    #: Byte position in the snapshot to read from.
    position: int
    max_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchSnapshotResponse:
    error: Errors = Errors.NONE
    partition_error: Errors = Errors.NONE
    snapshot_id: OffsetAndEpoch = OffsetAndEpoch(-1, -1)
    #: Total snapshot size in bytes.
    size: int = -1
    position: int = -1
    #: A slice of the snapshot file; not aligned on record batches.
    unaligned_records: bytes = b""
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


# --- KIP-853 voter changes --------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AddRaftVoterRequest:
    """AddRaftVoter (api key 80): add ``voter_key`` (which must carry a
    directory id) reachable on ``listeners``. Sent by an admin client, or by
    an observer that joins by itself (``controller.quorum.auto.join.enable``)."""

    cluster_id: str | None
    timeout_ms: int = 30_000
    voter_key: ReplicaKey
    listeners: Endpoints
    #: v1 (Kafka 4.2): False answers once the leader has appended the new voter
    #: set, without waiting for it to commit (what auto-join sends).
    ack_when_committed: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class AddRaftVoterResponse:
    error: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveRaftVoterRequest:
    """RemoveRaftVoter (api key 81): remove the voter ``voter_key`` (id and
    directory id)."""

    cluster_id: str | None
    voter_key: ReplicaKey


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveRaftVoterResponse:
    error: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterRequest:
    """UpdateRaftVoter (api key 82): a voter telling the leader its current
    listeners and supported ``kraft.version`` range."""

    cluster_id: str | None
    current_leader_epoch: int
    voter_key: ReplicaKey
    listeners: Endpoints
    supported_kraft_versions: tuple[int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterResponse:
    error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest:
    """ApiVersions (api key 18), as the leader sends it to a would-be voter
    before adding it (Kafka's ``AddVoterHandler``): to learn the
    ``kraft.version`` range it supports. ``endpoints`` says where to reach it
    (it is not a voter yet, so the shell cannot look it up)."""

    endpoints: Endpoints


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse:
    error: Errors = Errors.NONE
    #: The ``kraft.version`` entry of SupportedFeatures; ``None`` if absent.
    supported_kraft_versions: tuple[int, int] | None = None


VoterChangeRequest = AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest
VoterChangeResponse = AddRaftVoterResponse | RemoveRaftVoterResponse | UpdateRaftVoterResponse

RaftRequest = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
    | AddRaftVoterRequest
    | RemoveRaftVoterRequest
    | UpdateRaftVoterRequest
    | ApiVersionsRequest
)
RaftResponse = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
    | AddRaftVoterResponse
    | RemoveRaftVoterResponse
    | UpdateRaftVoterResponse
    | ApiVersionsResponse
)


# --- Envelopes ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InboundRequest:
    """A request from ``source``; answer with an :class:`OutboundResponse`
    carrying the same ``correlation_id``."""

    source: int
    correlation_id: int
    message: RaftRequest


@dataclass(frozen=True, slots=True)
class InboundResponse:
    """The answer to the core's request ``correlation_id`` to ``source``."""

    source: int
    correlation_id: int
    message: RaftResponse


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """The shell could not deliver request ``correlation_id`` to
    ``destination`` or the connection broke before the answer arrived (Kafka's
    network channel completes such requests with an error). The core backs off
    from that peer for ``retry.backoff.ms``."""

    destination: int
    correlation_id: int
    reason: str = ""


Inbound = InboundRequest | InboundResponse | RequestFailed


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    destination: int
    correlation_id: int
    message: RaftRequest


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    destination: int
    correlation_id: int
    message: RaftResponse


Outbound = OutboundRequest | OutboundResponse
