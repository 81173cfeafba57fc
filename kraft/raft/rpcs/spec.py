"""What one raft RPC module declares (:class:`RaftRpc`), and the wire
helpers the modules share.

Each RPC of the quorum (``kraft/raft/rpcs/<name>_rpc.py``) defines its
request and response classes (the core's flat events) and is one
:class:`RaftRpc`: its api key and event types, its wire mapping both ways
(decoded generated message <-> the core's flat event), its error answers,
how long the inbound side waits for the core's answer and the outbound side
for the peer's, which node a request comes from, and its handlers, written
in the same module on the steps its family shares
(:mod:`kraft.raft.handlers`). Kafka spreads the same knowledge over
``RaftUtil`` (requests and error answers) and ``KafkaRaftClient``
(``handleXxxRequest``/``handleXxxResponse``); here it is one file per RPC,
so that adding a field or a version touches that file (and its test) only.

Kafka's raft RPCs carry one topic with one partition (``__cluster_metadata``,
partition 0; Fetch addresses it by topic id since v13). A request for any
other partition never reaches the core: the module raises :class:`Reject`
and the registry answers with the RPC's error response, as Kafka's
``KafkaRaftClient`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kraft.raft.errors import Errors
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = [
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "ZERO",
    "RaftRpc",
    "Reject",
    "directory",
    "error_answer",
    "errors_of",
    "leader_endpoint_list",
    "leader_endpoints",
    "listeners",
    "node_endpoint_list",
    "node_endpoints",
    "one_partition",
    "one_response_partition",
    "quorum_response_fields",
    "quorum_response_to_wire",
    "replica_key",
    "voter_change_wait_ms",
    "wire_directory",
]

METADATA_TOPIC = "__cluster_metadata"
#: Kafka's fixed topic id of ``__cluster_metadata`` (``Uuid.METADATA_TOPIC_ID``),
#: "AAAAAAAAAAAAAAAAAAAAAQ" in Kafka's base64 form.
METADATA_TOPIC_ID = uuid.UUID(int=1)
ZERO = uuid.UUID(int=0)

Req = TypeVar("Req")
Resp = TypeVar("Resp")


class Reject(Exception):
    """A request (or response) whose shape the core must not see: answer it
    with the RPC's error response instead."""

    def __init__(self, error: Errors, partition_level: bool = False) -> None:
        self.error = error
        self.partition_level = partition_level


def _no_source(request: Any) -> int:
    return -1


def _request_timeout(request: Any, request_timeout_ms: int) -> int:
    return request_timeout_ms


def voter_change_wait_ms(request: Any, request_timeout_ms: int) -> int:
    """The core answers a voter change within ``request.timeout.ms`` of
    admitting it (Kafka's handler timer); allow for the admission."""
    return 2 * request_timeout_ms + 1000


@dataclass(frozen=True, slots=True)
class RaftRpc(Generic[Req, Resp]):
    """One raft RPC, everything about it but the generated codec."""

    api_key: ApiKey
    #: The versions a kraft controller speaks (advertised in ApiVersions, the
    #: highest one used when sending).
    versions: tuple[int, int]
    request_type: type[Req]
    response_type: type[Resp]
    #: Decoded wire request -> the core's request (``Reject``: not for the core).
    request_from_wire: Callable[[int, Any], Req]
    #: The core's request -> the wire message of ``version``; ``endpoints``
    #: are this node's, for the RPCs that announce the leader's.
    request_to_wire: Callable[[Req, int, Endpoints], Any]
    #: The core's response -> the wire message; ``listener`` is the one the
    #: request arrived on (NodeEndpoints carry the leader's endpoint there).
    response_to_wire: Callable[[Resp, int, str], Any]
    #: Decoded wire response -> the core's response (``Reject``: a top-level error).
    response_from_wire: Callable[[int, Any, str], Resp]
    #: A response carrying only ``error``, top-level or for the partition.
    error_response: Callable[[Errors, bool], Resp]
    #: The RPC's own builder of the epoch gate's refusal, ``(handler context,
    #: error)``; None: :meth:`refusal`'s common answer.
    leader_error: Callable[[Any, Errors], Resp] | None = None
    #: The node a request comes from, for the core (-1: not a replica).
    source: Callable[[Req], int] = _no_source
    #: How long the inbound side waits for the core's answer, given
    #: ``controller.quorum.request.timeout.ms``.
    answer_wait_ms: Callable[[Req, int], int] = _request_timeout
    #: How long the outbound side waits for the peer's answer.
    send_timeout_ms: Callable[[Req, int], int] = _request_timeout
    #: Answered by the core (False: ApiVersions, which the node answers).
    to_core: bool = True
    #: The core's handler of a request, ``(handler context, now_ms, inbound
    #: request)``: the answer, or None when it answers later (a parked
    #: Fetch, a voter change). It runs after the core's epoch gate.
    handle_request: Callable[[Any, int, Any], Any] | None = None
    #: The core's handler of an answer that passed the epoch gate,
    #: ``(handler context, now_ms, source, response)``: whether it was
    #: handled (False: back off from that peer). None: the core handles it
    #: itself (the voter changes' answers skip the common gate).
    handle_response: Callable[[Any, int, int, Any], bool] | None = None
    #: The ``request`` tag of Kafka's RequestMetrics: ``BEGIN_QUORUM_EPOCH``
    #: -> ``BeginQuorumEpoch``.
    metrics_name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics_name", "".join(p.capitalize() for p in self.api_key.name.split("_")))

    def refusal(self, ctx: Any, error: Errors) -> Resp:
        """The epoch gate's refusal of a request: the partition's ``error``
        with the epoch and leader ``ctx`` knows (``leader_error`` if set)."""
        if self.leader_error is not None:
            return self.leader_error(ctx, error)
        response: Resp = self.response_type(partition_error=error, **ctx.quorum.leader_fields)  # type: ignore[call-arg]
        return response

    def error_tag(self, response: Resp) -> str:
        """The ``error`` tag of a response of this RPC in the raft metrics: its
        top-level error or, if that is NONE, its partition's."""
        error: Errors = getattr(response, "error", Errors.NONE)
        if error is Errors.NONE:
            error = getattr(response, "partition_error", Errors.NONE)
        return error.name


# ----------------------------------------------------------------- wire helpers


def directory(u: uuid.UUID) -> uuid.UUID | None:
    """A wire directory id; the zero uuid means none."""
    return None if u == ZERO else u


def wire_directory(u: uuid.UUID | None) -> uuid.UUID:
    return ZERO if u is None else u


def replica_key(node_id: int, directory_id: uuid.UUID) -> ReplicaKey:
    return ReplicaKey(node_id, directory(directory_id))


def leader_endpoints(items: list[Any]) -> Endpoints:
    """A request's LeaderEndpoints (or a voter's Listeners)."""
    return tuple(Endpoint(e.name, e.host, e.port) for e in items)


listeners = leader_endpoints


def node_endpoints(items: list[Any], leader_id: int, listener: str) -> Endpoints:
    """A response's NodeEndpoints: the leader's, for the listener the request
    went out on."""
    return tuple(Endpoint(listener, e.host, e.port) for e in items if e.node_id == leader_id)


def leader_endpoint_list(module: Any, leader_endpoints: Endpoints, endpoints: Endpoints, version: int) -> list[Any]:
    """A request's LeaderEndpoints (v1+, KIP-853): the leader's as the core
    named them, else this node's own (``endpoints``); none before v1."""
    if version < 1:
        return []
    return [module.LeaderEndpoint(name=e.listener, host=e.host, port=e.port) for e in (leader_endpoints or endpoints)]


def node_endpoint_list(module: Any, leader_id: int, endpoints: Endpoints, listener: str) -> list[Any]:
    """NodeEndpoints of a response: the leader's endpoint on ``listener``."""
    return [module.NodeEndpoint(node_id=leader_id, host=e.host, port=e.port)
            for e in endpoints if e.listener == listener][:1] if leader_id >= 0 else []


def one_partition(topics: list[Any], name_attr: str = "topic_name", index_attr: str = "partition_index") -> Any:
    """The one partition of a quorum request; INVALID_REQUEST for any other shape."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST)
    topic = topics[0]
    part = topic.partitions[0]
    if getattr(topic, name_attr) != METADATA_TOPIC or getattr(part, index_attr) != 0:
        raise Reject(Errors.INVALID_REQUEST)
    return part


def one_response_partition(top: Errors, topics: list[Any]) -> Any:
    """The one partition of a response; a top-level error (INVALID_REQUEST
    if none was given) for any other shape."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
    return topics[0].partitions[0]


def quorum_response_to_wire(module: Any, response_class: Any, resp: Any, version: int, listener: str,
                            **partition: Any) -> Any:
    """The wire answer of Vote, BeginQuorumEpoch or EndQuorumEpoch (their
    responses share one shape): the partition's error and leader, plus
    ``partition``'s RPC-specific fields; NodeEndpoints since v1."""
    return response_class(
        error_code=int(resp.error),
        topics=[module.TopicData(topic_name=METADATA_TOPIC, partitions=[module.PartitionData(
            partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch, **partition)])],
        node_endpoints=node_endpoint_list(module, resp.leader_id, resp.leader_endpoints, listener)
        if version >= 1 else [],
    )


def quorum_response_fields(version: int, msg: Any, listener: str) -> tuple[dict[str, Any], Any]:
    """The core's fields of a Vote, BeginQuorumEpoch or EndQuorumEpoch answer,
    and its one partition (for the RPC-specific fields); ``Reject`` for
    another shape."""
    top = errors_of(msg.error_code)
    p = one_response_partition(top, msg.topics)
    return dict(
        error=top,
        partition_error=errors_of(p.error_code),
        leader_id=p.leader_id,
        leader_epoch=p.leader_epoch,
        leader_endpoints=node_endpoints(msg.node_endpoints, p.leader_id, listener) if version >= 1 else (),
    ), p


def error_answer(response_type: type[Resp]) -> Callable[[Errors, bool], Resp]:
    """An RPC's error answer: ``error`` on the partition or at the top."""
    def answer(error: Errors, partition_level: bool) -> Resp:
        return response_type(partition_error=error) if partition_level else response_type(error=error)  # type: ignore[call-arg]
    return answer


def errors_of(code: int) -> Errors:
    """An error code as the core's ``Errors``; unknown codes are UNKNOWN_SERVER_ERROR."""
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR
