"""UpdateRaftVoter (api key 82, v0, KIP-853): a voter telling the leader its
current listeners and supported ``kraft.version`` range. The answer names
the leader and its endpoint on the listener the request came in on.

Kafka: ``RaftUtil.updateVoterRequest``/``updateVoterResponse``,
``KafkaRaftClient.handleUpdateVoterRequest`` (``UpdateVoterHandler``). The
handler family is :mod:`kraft.raft.families.membership`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kraft.messages.generated import update_raft_voter_request as wire_req, update_raft_voter_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import NO_LEADER, RaftRequest, RaftResponse
from kraft.raft.events import InboundRequest
from kraft.raft.families import membership
from kraft.raft.families.common import MembershipContext
from kraft.raft.voter_changes import Refusal
from kraft.raft.rpcs.rpc_unit import RaftRpc, errors_of, listeners, replica_key, voter_change_wait_ms, wire_directory
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey, VoterNode
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "UpdateRaftVoterRequest", "UpdateRaftVoterResponse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterRequest(RaftRequest):
    """UpdateRaftVoter (api key 82): a voter telling the leader its current
    listeners and supported ``kraft.version`` range."""

    cluster_id: str | None
    current_leader_epoch: int
    voter_key: ReplicaKey
    listeners: Endpoints
    supported_kraft_versions: tuple[int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateRaftVoterResponse(RaftResponse):
    error: Errors = Errors.NONE
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    leader_endpoints: Endpoints = ()



def request_from_wire(version: int, msg: wire_req.UpdateRaftVoterRequest) -> UpdateRaftVoterRequest:
    feature = msg.k_raft_version_feature
    return UpdateRaftVoterRequest(
        cluster_id=msg.cluster_id,
        current_leader_epoch=msg.current_leader_epoch,
        voter_key=replica_key(msg.voter_id, msg.voter_directory_id),
        listeners=listeners(msg.listeners),
        supported_kraft_versions=(feature.min_supported_version, feature.max_supported_version),
    )


def request_to_wire(req: UpdateRaftVoterRequest, version: int, endpoints: Endpoints) -> wire_req.UpdateRaftVoterRequest:
    low, high = req.supported_kraft_versions
    return wire_req.UpdateRaftVoterRequest(
        cluster_id=req.cluster_id,
        current_leader_epoch=req.current_leader_epoch,
        voter_id=req.voter_key.id,
        voter_directory_id=wire_directory(req.voter_key.directory_id),
        listeners=[wire_req.Listener(name=e.listener, host=e.host, port=e.port) for e in req.listeners],
        k_raft_version_feature=wire_req.KRaftVersionFeature(min_supported_version=low, max_supported_version=high),
    )


def response_to_wire(resp: UpdateRaftVoterResponse, version: int, listener: str) -> wire_resp.UpdateRaftVoterResponse:
    # Kafka's RaftUtil.updateVoterResponse: the leader's endpoint on the
    # listener the request came in on.
    endpoint = next((e for e in resp.leader_endpoints if e.listener == listener), None)
    return wire_resp.UpdateRaftVoterResponse(
        error_code=int(resp.error),
        current_leader=wire_resp.CurrentLeader(
            leader_id=resp.leader_id,
            leader_epoch=resp.leader_epoch,
            host="" if endpoint is None else endpoint.host,
            port=-1 if endpoint is None else endpoint.port,
        ),
    )


def response_from_wire(version: int, msg: wire_resp.UpdateRaftVoterResponse, listener: str) -> UpdateRaftVoterResponse:
    leader = msg.current_leader
    endpoints = (Endpoint(listener, leader.host, leader.port),) if leader.host and leader.port > 0 else ()
    return UpdateRaftVoterResponse(error=errors_of(msg.error_code), leader_id=leader.leader_id,
                                   leader_epoch=leader.leader_epoch, leader_endpoints=endpoints)


def error_response(error: Errors, partition_level: bool) -> UpdateRaftVoterResponse:
    return UpdateRaftVoterResponse(error=error)


def source(req: UpdateRaftVoterRequest) -> int:
    return req.voter_key.id


# ----------------------------------------------------------------- the core's side


def handle_request(ctx: MembershipContext, now_ms: int, env: InboundRequest) -> UpdateRaftVoterResponse:
    """Kafka's ``UpdateVoterHandler``: the common checks, then the voter's
    new listeners and supported versions; answered at once."""
    msg = env.message
    assert isinstance(msg, UpdateRaftVoterRequest)
    state = membership.admit(ctx, msg.cluster_id, msg.current_leader_epoch, msg.voter_key, msg.listeners)
    if isinstance(state, Refusal):
        error = state.error
    else:
        node = VoterNode(msg.voter_key, msg.listeners, msg.supported_kraft_versions)
        error = membership.update_voter(ctx, now_ms, node, state)
    return UpdateRaftVoterResponse(error=error, **ctx.quorum.leader_fields)


RPC: RaftRpc[UpdateRaftVoterRequest, UpdateRaftVoterResponse, wire_req.UpdateRaftVoterRequest, wire_resp.UpdateRaftVoterResponse, MembershipContext] = RaftRpc(
    api_key=ApiKey.UPDATE_RAFT_VOTER,
    versions=(0, 0),
    request_type=UpdateRaftVoterRequest,
    response_type=UpdateRaftVoterResponse,
    wire_request_type=wire_req.UpdateRaftVoterRequest,
    wire_response_type=wire_resp.UpdateRaftVoterResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    answer_wait_ms=voter_change_wait_ms,
    handle_request=handle_request,
)
