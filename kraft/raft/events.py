"""The raft core's inputs and outputs: KRaft RPC messages and their envelopes.

The message classes live with their RPC (``kraft/raft/rpcs/<name>_rpc.py``,
all re-exported by :mod:`kraft.raft.rpcs`); here are their common base
classes. They mirror the fields of Kafka's JSON specs that the core needs
(``VoteRequest.json``, ``FetchResponse.json``, ...), flattened to the single
``__cluster_metadata-0`` partition KRaft replicates: each RPC module maps the
one-topic/one-partition arrays to and from these. Field semantics are
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
from kraft.raft.voters import Endpoints


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


# --- The messages' common types -----------------------------------------------


class RaftRequest:
    """A raft request as the core sees it. Each RPC's request and response
    classes live in that RPC's module (``kraft/raft/rpcs/<name>_rpc.py``,
    re-exported by :mod:`kraft.raft.rpcs`), beside their wire mapping and
    handlers: adding a field touches that module only."""

    __slots__ = ()


class RaftResponse:
    """A raft response as the core sees it (see :class:`RaftRequest`)."""

    __slots__ = ()


class QuorumResponse(RaftResponse):
    """The answer of a quorum RPC (Vote, BeginQuorumEpoch, EndQuorumEpoch,
    Fetch, FetchSnapshot): besides any top-level error, its partition's
    error and the leader the responder knows, which the epoch gate reads
    (Kafka's ``maybeHandleCommonResponse``). The fields are each subclass's."""

    __slots__ = ()
    error: Errors
    partition_error: Errors
    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


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
