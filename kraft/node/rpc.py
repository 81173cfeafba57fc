"""Translation between Kafka's KRaft RPCs (the generated wire messages) and
the raft core's flat events (``kraft.raft.events``), through the registry
of :mod:`kraft.raft.rpcs`: each RPC's mapping, error answer and timeouts
live in its own module there (``kraft/raft/rpcs/vote_rpc.py`` and so on);
this module only looks the RPC up by api key or event type.

Requests for any other partition than ``__cluster_metadata``-0 never reach
the core: :func:`request_from_wire` returns the response to send instead,
as Kafka's ``KafkaRaftClient`` answers them.
"""

from __future__ import annotations

from typing import Any

from kraft.raft import events as ev
from kraft.raft.errors import Errors
from kraft.raft.rpcs import BY_API_KEY, BY_REQUEST, CORE_API_KEYS, RaftRpc
from kraft.raft.rpcs.spec import METADATA_TOPIC, METADATA_TOPIC_ID, Reject
from kraft.raft.voters import Endpoints
from kraft.wire.apis import ApiKey

__all__ = [
    "API_VERSIONS",
    "FETCH_SNAPSHOT",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "RAFT_API_KEYS",
    "rpc_of",
    "rpc_of_request",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "error_response",
]

FETCH_SNAPSHOT, API_VERSIONS = ApiKey.FETCH_SNAPSHOT, ApiKey.API_VERSIONS
#: The requests a controller listener passes to the raft core.
RAFT_API_KEYS = CORE_API_KEYS


def rpc_of(api_key: int) -> RaftRpc[Any, Any]:
    """The raft RPC of ``api_key`` (KeyError: not a raft RPC)."""
    return BY_API_KEY[api_key]


def rpc_of_request(request: ev.RaftRequest) -> RaftRpc[Any, Any]:
    """The raft RPC of one of the core's requests."""
    return BY_REQUEST[type(request)]


def request_from_wire(api_key: int, version: int, msg: Any) -> ev.RaftRequest | ev.RaftResponse:
    """The core's request for a decoded wire request, or (for a request the
    core must not see) the error response to send back."""
    rpc = BY_API_KEY[api_key]
    try:
        request: ev.RaftRequest = rpc.request_from_wire(version, msg)
    except Reject as r:
        return rpc.error_response(r.error, r.partition_level)
    return request


def request_to_wire(req: ev.RaftRequest, version: int, endpoints: Endpoints = ()) -> tuple[int, Any]:
    """(api key, wire message) for one of the core's requests."""
    rpc = BY_REQUEST[type(req)]
    return rpc.api_key, rpc.request_to_wire(req, version, endpoints)


def response_to_wire(api_key: int, resp: ev.RaftResponse, version: int, listener: str = "CONTROLLER") -> Any:
    """The wire response for one of the core's responses. ``listener`` is the
    listener the request arrived on: NodeEndpoints carry the leader's endpoint
    for that listener, as Kafka does."""
    return BY_API_KEY[api_key].response_to_wire(resp, version, listener)


def error_response(api_key: int, error: Errors, partition_level: bool = False) -> ev.RaftResponse:
    """A response carrying only an error (top-level, or for the partition)."""
    response: ev.RaftResponse = BY_API_KEY[api_key].error_response(error, partition_level)
    return response


def response_from_wire(api_key: int, version: int, msg: Any, listener: str = "CONTROLLER") -> ev.RaftResponse:
    """The core's response for a decoded wire response. A response whose
    shape is wrong (no partition) becomes a top-level error."""
    rpc = BY_API_KEY[api_key]
    try:
        response: ev.RaftResponse = rpc.response_from_wire(version, msg, listener)
    except Reject as r:
        return rpc.error_response(r.error, False)
    return response
