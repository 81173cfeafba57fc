"""ApiVersions (api key 18) as the raft core uses it: the leader asks a
would-be voter which ``kraft.version`` range it supports before adding it
(Kafka's ``AddVoterHandler``). The core sends it and handles the answer;
the node, not the core, answers ApiVersions requests
(:func:`kraft.node.admin_apis.node_api_versions`).

The handler of the answer is
:func:`kraft.raft.handlers.membership.handle_api_versions_response`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import api_versions_request as wire_req
from kraft.raft.errors import Errors
from kraft.raft.events import ApiVersionsRequest, ApiVersionsResponse
from kraft.raft.rpcs.spec import RaftRpc, errors_of
from kraft.raft.voters import Endpoints
from kraft.wire.apis import ApiKey
from kraft.wire.client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION

__all__ = ["RPC"]


def request_from_wire(version: int, msg: Any) -> ApiVersionsRequest:
    raise TypeError("ApiVersions requests are answered by the node, not the raft core")


def request_to_wire(req: ApiVersionsRequest, version: int, endpoints: Endpoints) -> Any:
    return wire_req.ApiVersionsRequest(
        client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION
    )


def response_to_wire(resp: ApiVersionsResponse, version: int, listener: str) -> Any:
    raise TypeError("ApiVersions responses are written by the node, not the raft core")


def response_from_wire(version: int, msg: Any, listener: str) -> ApiVersionsResponse:
    kraft = next((f for f in msg.supported_features if f.name == "kraft.version"), None)
    return ApiVersionsResponse(
        error=errors_of(msg.error_code),
        supported_kraft_versions=None if kraft is None else (kraft.min_version, kraft.max_version),
    )


def error_response(error: Errors, partition_level: bool) -> ApiVersionsResponse:
    return ApiVersionsResponse(error=error)


RPC: RaftRpc[ApiVersionsRequest, ApiVersionsResponse] = RaftRpc(
    api_key=ApiKey.API_VERSIONS,
    versions=(0, 4),
    request_type=ApiVersionsRequest,
    response_type=ApiVersionsResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    to_core=False,
)
