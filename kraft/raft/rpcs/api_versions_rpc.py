"""ApiVersions (api key 18) as the raft core uses it: the leader asks a
would-be voter which ``kraft.version`` range it supports before adding it
(Kafka's ``AddVoterHandler``). The core sends it and handles the answer;
the node, not the core, answers ApiVersions requests
(:func:`kraft.node.admin_apis.node_api_versions`).

The handler of the answer is :func:`handle_response` below.

An admin client sends the same request through :data:`RPC` (at most its
newest version, v4: the first that shows a feature whose minimum is 0, such
as ``kraft.version``) to describe the features (``kraft features
describe``, Kafka's ``Admin.describeFeatures``) and reads the answer into
the one model of them, :class:`FeatureMetadata` (:func:`feature_metadata`).
Adding a field to it touches this module and its test; ``kraft features
describe --json`` prints every field of the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import api_versions_request as wire_req, api_versions_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import RaftRequest, RaftResponse
from kraft.raft.families import membership
from kraft.raft.families.common import MembershipContext
from kraft.raft.rpcs.rpc_unit import RaftRpc, errors_of
from kraft.raft.voters import Endpoints
from kraft.wire.apis import ApiKey
from kraft.wire.client_software import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION

__all__ = ["RPC", "ApiVersionsRequest", "ApiVersionsResponse", "FeatureMetadata", "SupportedVersionRange",
           "feature_metadata"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequest(RaftRequest):
    """ApiVersions (api key 18), as the leader sends it to a would-be voter
    before adding it (Kafka's ``AddVoterHandler``): to learn the
    ``kraft.version`` range it supports. ``endpoints`` says where to reach it
    (it is not a voter yet, so the shell cannot look it up)."""

    endpoints: Endpoints


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsResponse(RaftResponse):
    error: Errors = Errors.NONE
    #: The ``kraft.version`` entry of SupportedFeatures; ``None`` if absent.
    supported_kraft_versions: tuple[int, int] | None = None



def request_from_wire(version: int, msg: wire_req.ApiVersionsRequest) -> ApiVersionsRequest:
    raise TypeError("ApiVersions requests are answered by the node, not the raft core")


def request_to_wire(req: ApiVersionsRequest, version: int, endpoints: Endpoints) -> wire_req.ApiVersionsRequest:
    return wire_req.ApiVersionsRequest(
        client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION
    )


def response_to_wire(resp: ApiVersionsResponse, version: int, listener: str) -> wire_resp.ApiVersionsResponse:
    raise TypeError("ApiVersions responses are written by the node, not the raft core")


def response_from_wire(version: int, msg: wire_resp.ApiVersionsResponse, listener: str) -> ApiVersionsResponse:
    kraft = next((f for f in msg.supported_features if f.name == "kraft.version"), None)
    return ApiVersionsResponse(
        error=errors_of(msg.error_code),
        supported_kraft_versions=None if kraft is None else (kraft.min_version, kraft.max_version),
    )


def error_response(error: Errors, partition_level: bool) -> ApiVersionsResponse:
    return ApiVersionsResponse(error=error)


# ----------------------------------------------------------------- the admin client's side


@dataclass(frozen=True, slots=True)
class SupportedVersionRange:
    """Kafka's ``SupportedVersionRange``: the levels a node supports."""

    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class FeatureMetadata:
    """Kafka's ``FeatureMetadata``: an ApiVersions answer's features.
    ``finalized`` holds each finalized feature's level (Kafka's
    ``FinalizedVersionRange.maxVersionLevel``); ``finalized_epoch`` is None
    when the node reported none (-1)."""

    finalized: dict[str, int]
    finalized_epoch: int | None
    supported: dict[str, SupportedVersionRange]


def feature_metadata(msg: wire_resp.ApiVersionsResponse) -> FeatureMetadata:
    """A successful ApiVersions answer's features (Kafka's
    ``KafkaAdminClient.describeFeatures``)."""
    return FeatureMetadata(
        finalized={f.name: f.max_version_level for f in msg.finalized_features},
        finalized_epoch=msg.finalized_features_epoch if msg.finalized_features_epoch >= 0 else None,
        supported={f.name: SupportedVersionRange(f.min_version, f.max_version) for f in msg.supported_features})


# ----------------------------------------------------------------- the core's side


def handle_response(ctx: MembershipContext, now_ms: int, correlation_id: int, msg: ApiVersionsResponse) -> bool:
    """The would-be voter answered the leader's ApiVersions (Kafka's
    ``AddVoterHandler.handleApiVersionsResponse``): the add in flight goes
    on (:func:`kraft.raft.families.membership.api_versions_answered`).
    Matched by correlation id, not by peer: the voter is not one yet."""
    return membership.api_versions_answered(ctx, now_ms, correlation_id, msg.error, msg.supported_kraft_versions)


RPC: RaftRpc[ApiVersionsRequest, ApiVersionsResponse, wire_req.ApiVersionsRequest, wire_resp.ApiVersionsResponse, MembershipContext] = RaftRpc(
    api_key=ApiKey.API_VERSIONS,
    versions=(0, 4),
    request_type=ApiVersionsRequest,
    response_type=ApiVersionsResponse,
    wire_request_type=wire_req.ApiVersionsRequest,
    wire_response_type=wire_resp.ApiVersionsResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    to_core=False,
)
