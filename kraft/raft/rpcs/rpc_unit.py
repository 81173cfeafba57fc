"""What one raft RPC module declares (:class:`RaftRpc`), and the wire
helpers the modules share.

Each ``<name>_rpc.py`` is one unit per RPC, and this is the shape of a
unit: neither ``messages/specs/`` (the JSON message definitions) nor
``messages/codegen/message_spec.py`` (the generator's model of them).
It was ``spec.py`` until issue 45.

Each RPC of the quorum (``kraft/raft/rpcs/<name>_rpc.py``) defines its
request and response classes (the core's flat events) and is one
:class:`RaftRpc`, typed with its requests and responses (the core's and the
generated wire classes) and its handler family's context, so that the type
checker holds every handler and mapping to them: its api key and event types, its wire mapping both ways
(decoded generated message <-> the core's flat event), its error answers,
how long the inbound side waits for the core's answer and the outbound side
for the peer's, which node a request comes from, and its handlers, written
in the same module on the steps its family shares
(:mod:`kraft.raft.families`). Kafka spreads the same knowledge over
``RaftUtil`` (requests and error answers) and ``KafkaRaftClient``
(``handleXxxRequest``/``handleXxxResponse``); here it is one file per RPC,
so that adding a field or a version touches that file (and its test) only.
The registry (:mod:`kraft.raft.rpcs`) holds them as :class:`RegisteredRpc`:
the same RPC on the base event types, each call checked at run time against
the RPC's own types, for the node and the core, which look an RPC up by api
key or event type.

Kafka's raft RPCs carry one topic with one partition (``__cluster_metadata``,
partition 0; Fetch addresses it by topic id since v13). A request for any
other partition never reaches the core: the module raises :class:`Reject`
and the registry answers with the RPC's error response, as Kafka's
``KafkaRaftClient`` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypedDict, TypeVar

from kraft.raft.errors import Errors
from kraft.raft.events import InboundRequest, RaftRequest, RaftResponse
from kraft.raft.families.common import HandlerContext, QuorumReader
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = [
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "ZERO",
    "FamilyView",
    "QuorumFields",
    "RaftRpc",
    "RegisteredRpc",
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
    "replica_key",
    "voter_change_wait_ms",
    "wire_directory",
]

METADATA_TOPIC = "__cluster_metadata"
#: Kafka's fixed topic id of ``__cluster_metadata`` (``Uuid.METADATA_TOPIC_ID``),
#: "AAAAAAAAAAAAAAAAAAAAAQ" in Kafka's base64 form.
METADATA_TOPIC_ID = uuid.UUID(int=1)
ZERO = uuid.UUID(int=0)


class FamilyView(Protocol):
    """What every handler family's context has (:mod:`kraft.raft.families.common`):
    its view of the quorum, which the epoch gate's refusal reads."""

    @property
    def quorum(self) -> QuorumReader: ...


Req = TypeVar("Req", bound=RaftRequest)
Resp = TypeVar("Resp", bound=RaftResponse)
#: The generated wire classes (:mod:`kraft.messages.generated`) of the request and the response.
WireReq = TypeVar("WireReq")
WireResp = TypeVar("WireResp")
#: The handler family's context (``ElectionContext``, ``ReplicationContext``, ``MembershipContext``).
Ctx = TypeVar("Ctx", bound=FamilyView)


class Reject(Exception):
    """A request (or response) whose shape the core must not see: answer it
    with the RPC's error response instead."""

    def __init__(self, error: Errors, partition_level: bool = False) -> None:
        self.error = error
        self.partition_level = partition_level


def _no_source(request: RaftRequest) -> int:
    return -1


def _request_timeout(request: RaftRequest, request_timeout_ms: int) -> int:
    return request_timeout_ms


def voter_change_wait_ms(request: RaftRequest, request_timeout_ms: int) -> int:
    """The core answers a voter change within ``request.timeout.ms`` of
    admitting it (Kafka's handler timer); allow for the admission."""
    return 2 * request_timeout_ms + 1000


@dataclass(frozen=True, slots=True)
class RaftRpc(Generic[Req, Resp, WireReq, WireResp, Ctx]):
    """One raft RPC, everything about it but the generated codec: the core's
    request and response (``Req``, ``Resp``), the generated wire classes
    (``WireReq``, ``WireResp``) and the context its handlers get (``Ctx``)."""

    api_key: ApiKey
    #: The versions a kraft controller speaks (advertised in ApiVersions, the
    #: highest one used when sending).
    versions: tuple[int, int]
    request_type: type[Req]
    response_type: type[Resp]
    wire_request_type: type[WireReq]
    wire_response_type: type[WireResp]
    #: Decoded wire request -> the core's request (``Reject``: not for the core).
    request_from_wire: Callable[[int, WireReq], Req]
    #: The core's request -> the wire message of ``version``; ``endpoints``
    #: are this node's, for the RPCs that announce the leader's.
    request_to_wire: Callable[[Req, int, Endpoints], WireReq]
    #: The core's response -> the wire message; ``listener`` is the one the
    #: request arrived on (NodeEndpoints carry the leader's endpoint there).
    response_to_wire: Callable[[Resp, int, str], WireResp]
    #: Decoded wire response -> the core's response (``Reject``: a top-level error).
    response_from_wire: Callable[[int, WireResp, str], Resp]
    #: A response carrying only ``error``, top-level or for the partition.
    error_response: Callable[[Errors, bool], Resp]
    #: The RPC's own builder of the epoch gate's refusal, ``(handler context,
    #: error)``; None: :meth:`refusal`'s common answer.
    leader_error: Callable[[Ctx, Errors], Resp] | None = None
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
    handle_request: Callable[[Ctx, int, InboundRequest], Resp | None] | None = None
    #: The core's handler of an answer that passed the epoch gate,
    #: ``(handler context, now_ms, source, response)``: whether it was
    #: handled (False: back off from that peer). None: the core handles it
    #: itself (the voter changes' answers skip the common gate).
    handle_response: Callable[[Ctx, int, int, Resp], bool] | None = None
    #: The ``request`` tag of Kafka's RequestMetrics: ``BEGIN_QUORUM_EPOCH``
    #: -> ``BeginQuorumEpoch``.
    metrics_name: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics_name", "".join(p.capitalize() for p in self.api_key.name.split("_")))

    def refusal(self, ctx: Ctx, error: Errors) -> Resp:
        """The epoch gate's refusal of a request: the partition's ``error``
        with the epoch and leader ``ctx`` knows (``leader_error`` if set)."""
        if self.leader_error is not None:
            return self.leader_error(ctx, error)
        response: Resp = self.response_type(partition_error=error, **ctx.quorum.leader_fields)  # type: ignore[call-arg, misc]
        return response

    def error_tag(self, response: RaftResponse) -> str:
        """The ``error`` tag of a response of this RPC in the raft metrics: its
        top-level error or, if that is NONE, its partition's."""
        error: Errors = getattr(response, "error", Errors.NONE)
        if error is Errors.NONE:
            error = getattr(response, "partition_error", Errors.NONE)
        return error.name

    # --- the registry's side: the base types in, each checked against this RPC's

    def _request(self, request: RaftRequest) -> Req:
        if not isinstance(request, self.request_type):
            raise TypeError(f"not a {self.request_type.__name__}: {request!r}")
        return request

    def _response(self, response: RaftResponse) -> Resp:
        if not isinstance(response, self.response_type):
            raise TypeError(f"not a {self.response_type.__name__}: {response!r}")
        return response

    def read_request(self, version: int, msg: object) -> Req:
        """:attr:`request_from_wire` of a decoded wire request (``Reject``: not for the core)."""
        if not isinstance(msg, self.wire_request_type):
            raise TypeError(f"not a {self.wire_request_type.__name__}: {msg!r}")
        return self.request_from_wire(version, msg)

    def write_request(self, request: RaftRequest, version: int, endpoints: Endpoints = ()) -> WireReq:
        """:attr:`request_to_wire` of one of the core's requests."""
        return self.request_to_wire(self._request(request), version, endpoints)

    def write_response(self, response: RaftResponse, version: int, listener: str) -> WireResp:
        """:attr:`response_to_wire` of one of the core's responses."""
        return self.response_to_wire(self._response(response), version, listener)

    def read_response(self, version: int, msg: object, listener: str = "CONTROLLER") -> Resp:
        """:attr:`response_from_wire` of a decoded wire response; a response
        whose shape is wrong (no partition) becomes a top-level error."""
        if not isinstance(msg, self.wire_response_type):
            raise TypeError(f"not a {self.wire_response_type.__name__}: {msg!r}")
        try:
            return self.response_from_wire(version, msg, listener)
        except Reject as r:
            return self.error_response(r.error, False)

    def request_source(self, request: RaftRequest) -> int:
        """:attr:`source` of one of the core's requests."""
        return self.source(self._request(request))

    def answer_wait(self, request: RaftRequest, request_timeout_ms: int) -> int:
        """:attr:`answer_wait_ms` of one of the core's requests."""
        return self.answer_wait_ms(self._request(request), request_timeout_ms)

    def send_timeout(self, request: RaftRequest, request_timeout_ms: int) -> int:
        """:attr:`send_timeout_ms` of one of the core's requests."""
        return self.send_timeout_ms(self._request(request), request_timeout_ms)

    def handle_answer(self, ctx: Ctx, now_ms: int, source: int, response: RaftResponse) -> bool:
        """:attr:`handle_response` of an answer that passed the epoch gate."""
        if self.handle_response is None:
            raise TypeError(f"not a response of the quorum RPCs: {response!r}")
        return self.handle_response(ctx, now_ms, source, self._response(response))


class RegisteredRpc(Protocol):
    """A :class:`RaftRpc` as the registry holds it, whatever its types: what
    the node and the core call on an RPC they looked up by api key or event
    type. Each call is checked at run time against the RPC's own types."""

    @property
    def api_key(self) -> ApiKey: ...
    @property
    def versions(self) -> tuple[int, int]: ...
    @property
    def request_type(self) -> type[RaftRequest]: ...
    @property
    def response_type(self) -> type[RaftResponse]: ...
    @property
    def to_core(self) -> bool: ...
    @property
    def metrics_name(self) -> str: ...
    @property
    def error_response(self) -> Callable[[Errors, bool], RaftResponse]: ...
    @property
    def handle_request(self) -> Callable[[HandlerContext, int, InboundRequest], RaftResponse | None] | None: ...
    def refusal(self, ctx: HandlerContext, error: Errors) -> RaftResponse: ...
    def error_tag(self, response: RaftResponse) -> str: ...
    def read_request(self, version: int, msg: object) -> RaftRequest: ...
    def write_request(self, request: RaftRequest, version: int, endpoints: Endpoints = ()) -> object: ...
    def write_response(self, response: RaftResponse, version: int, listener: str) -> object: ...
    def read_response(self, version: int, msg: object, listener: str = "CONTROLLER") -> RaftResponse: ...
    def request_source(self, request: RaftRequest) -> int: ...
    def answer_wait(self, request: RaftRequest, request_timeout_ms: int) -> int: ...
    def send_timeout(self, request: RaftRequest, request_timeout_ms: int) -> int: ...
    def handle_answer(self, ctx: HandlerContext, now_ms: int, source: int, response: RaftResponse) -> bool: ...


# ----------------------------------------------------------------- wire helpers

# The shapes the helpers read of the generated classes (each RPC's own).
P_co = TypeVar("P_co", covariant=True)
E_co = TypeVar("E_co", covariant=True)
P = TypeVar("P")
QP = TypeVar("QP", bound="QuorumPartition")


class WireEndpoint(Protocol):
    """A LeaderEndpoint or Listener of a request."""

    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class WireNodeEndpoint(Protocol):
    """A NodeEndpoint of a response."""

    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


class EndpointClass(Protocol[E_co]):
    """A generated LeaderEndpoint class."""

    def __call__(self, *, name: str, host: str, port: int) -> E_co: ...


class NodeEndpointClass(Protocol[E_co]):
    """A generated NodeEndpoint class."""

    def __call__(self, *, node_id: int, host: str, port: int) -> E_co: ...


class WireTopic(Protocol[P_co]):
    """A request's or response's topic: its partitions."""

    @property
    def partitions(self) -> Sequence[P_co]: ...


class QuorumPartition(Protocol):
    """The partition of a Vote, BeginQuorumEpoch or EndQuorumEpoch answer."""

    @property
    def error_code(self) -> int: ...
    @property
    def leader_id(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...


class QuorumAnswer(Protocol[P_co]):
    """A Vote, BeginQuorumEpoch or EndQuorumEpoch answer (one shape)."""

    @property
    def error_code(self) -> int: ...
    @property
    def topics(self) -> Sequence[WireTopic[P_co]]: ...
    @property
    def node_endpoints(self) -> Sequence[WireNodeEndpoint]: ...


class QuorumFields(TypedDict):
    """The core's fields of a Vote, BeginQuorumEpoch or EndQuorumEpoch answer."""

    error: Errors
    partition_error: Errors
    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


def directory(u: uuid.UUID) -> uuid.UUID | None:
    """A wire directory id; the zero uuid means none."""
    return None if u == ZERO else u


def wire_directory(u: uuid.UUID | None) -> uuid.UUID:
    return ZERO if u is None else u


def replica_key(node_id: int, directory_id: uuid.UUID) -> ReplicaKey:
    return ReplicaKey(node_id, directory(directory_id))


def leader_endpoints(items: Iterable[WireEndpoint]) -> Endpoints:
    """A request's LeaderEndpoints (or a voter's Listeners)."""
    return tuple(Endpoint(e.name, e.host, e.port) for e in items)


listeners = leader_endpoints


def node_endpoints(items: Iterable[WireNodeEndpoint], leader_id: int, listener: str) -> Endpoints:
    """A response's NodeEndpoints: the leader's, for the listener the request
    went out on."""
    return tuple(Endpoint(listener, e.host, e.port) for e in items if e.node_id == leader_id)


def leader_endpoint_list(make: EndpointClass[E_co], leader_endpoints: Endpoints, endpoints: Endpoints,
                         version: int) -> list[E_co]:
    """A request's LeaderEndpoints (v1+, KIP-853): the leader's as the core
    named them, else this node's own (``endpoints``); none before v1."""
    if version < 1:
        return []
    return [make(name=e.listener, host=e.host, port=e.port) for e in (leader_endpoints or endpoints)]


def node_endpoint_list(make: NodeEndpointClass[E_co], leader_id: int, endpoints: Endpoints,
                       listener: str) -> list[E_co]:
    """NodeEndpoints of a response: the leader's endpoint on ``listener``."""
    return [make(node_id=leader_id, host=e.host, port=e.port)
            for e in endpoints if e.listener == listener][:1] if leader_id >= 0 else []


def one_partition(topics: Sequence[WireTopic[P]], name_attr: str = "topic_name",
                  index_attr: str = "partition_index") -> P:
    """The one partition of a quorum request; INVALID_REQUEST for any other shape."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST)
    topic = topics[0]
    part = topic.partitions[0]
    if getattr(topic, name_attr) != METADATA_TOPIC or getattr(part, index_attr) != 0:
        raise Reject(Errors.INVALID_REQUEST)
    return part


def one_response_partition(top: Errors, topics: Sequence[WireTopic[P]]) -> P:
    """The one partition of a response; a top-level error (INVALID_REQUEST
    if none was given) for any other shape."""
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
    return topics[0].partitions[0]


def quorum_response_fields(version: int, msg: QuorumAnswer[QP], listener: str) -> tuple[QuorumFields, QP]:
    """The core's fields of a Vote, BeginQuorumEpoch or EndQuorumEpoch answer,
    and its one partition (for the RPC-specific fields); ``Reject`` for
    another shape."""
    top = errors_of(msg.error_code)
    p = one_response_partition(top, msg.topics)
    return QuorumFields(
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
