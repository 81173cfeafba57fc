"""RemoveRaftVoter (api key 81, v0, KIP-853): remove a voter (id and
directory id), sent by an admin client.

Kafka: ``RaftUtil.removeVoterRequest``/``removeVoterResponse``,
``KafkaRaftClient.handleRemoveVoterRequest`` (``RemoveVoterHandler``). The
handler family is :mod:`kraft.raft.families.membership`. An admin client
(``kraft quorum remove-controller``, ``reassign``) sends
:func:`admin_request` through :data:`RPC` too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kraft.messages.generated import remove_raft_voter_request as wire_req, remove_raft_voter_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import RaftRequest, RaftResponse
from kraft.raft.events import InboundRequest
from kraft.raft.families import membership
from kraft.raft.families.common import MembershipContext
from kraft.raft.voter_changes import Refusal
from kraft.raft.rpcs.rpc_unit import RaftRpc, errors_of, replica_key, voter_change_wait_ms, wire_directory
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "RemoveRaftVoterRequest", "RemoveRaftVoterResponse", "admin_request"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveRaftVoterRequest(RaftRequest):
    """RemoveRaftVoter (api key 81): remove the voter ``voter_key`` (id and
    directory id)."""

    cluster_id: str | None
    voter_key: ReplicaKey


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveRaftVoterResponse(RaftResponse):
    error: Errors = Errors.NONE
    error_message: str | None = None



def request_from_wire(version: int, msg: wire_req.RemoveRaftVoterRequest) -> RemoveRaftVoterRequest:
    return RemoveRaftVoterRequest(cluster_id=msg.cluster_id, voter_key=replica_key(msg.voter_id, msg.voter_directory_id))


def request_to_wire(req: RemoveRaftVoterRequest, version: int, endpoints: Endpoints) -> wire_req.RemoveRaftVoterRequest:
    return wire_req.RemoveRaftVoterRequest(
        cluster_id=req.cluster_id,
        voter_id=req.voter_key.id,
        voter_directory_id=wire_directory(req.voter_key.directory_id),
    )


def response_to_wire(resp: RemoveRaftVoterResponse, version: int, listener: str) -> wire_resp.RemoveRaftVoterResponse:
    return wire_resp.RemoveRaftVoterResponse(error_code=int(resp.error), error_message=resp.error_message)


def response_from_wire(version: int, msg: wire_resp.RemoveRaftVoterResponse, listener: str) -> RemoveRaftVoterResponse:
    return RemoveRaftVoterResponse(error=errors_of(msg.error_code), error_message=msg.error_message)


def error_response(error: Errors, partition_level: bool) -> RemoveRaftVoterResponse:
    return RemoveRaftVoterResponse(error=error)


def admin_request(cluster_id: str, voter_id: int, directory_id: uuid.UUID) -> RemoveRaftVoterRequest:
    """What an admin client asks (Kafka's ``KafkaAdminClient.removeRaftVoter``,
    sent through :data:`RPC`): remove the voter ``voter_id`` with that directory id."""
    return RemoveRaftVoterRequest(cluster_id=cluster_id, voter_key=ReplicaKey(voter_id, directory_id))


# ----------------------------------------------------------------- the core's side


def answer(error: Errors, message: str | None) -> RemoveRaftVoterResponse:
    return RemoveRaftVoterResponse(error=error, error_message=message)


def handle_request(ctx: MembershipContext, now_ms: int, env: InboundRequest) -> RemoveRaftVoterResponse | None:
    """Kafka's ``RemoveVoterHandler``: the common checks, then the smaller
    voter set is appended; the answer waits for its commit."""
    msg = env.message
    assert isinstance(msg, RemoveRaftVoterRequest)
    state = membership.admit(ctx, msg.cluster_id, ctx.quorum.epoch, msg.voter_key, None)
    refusal = state if isinstance(state, Refusal) else membership.remove_voter(
        ctx, now_ms, env, answer, msg.voter_key, state)
    return None if refusal is None else answer(refusal.error, refusal.message)


RPC: RaftRpc[RemoveRaftVoterRequest, RemoveRaftVoterResponse, wire_req.RemoveRaftVoterRequest, wire_resp.RemoveRaftVoterResponse, MembershipContext] = RaftRpc(
    api_key=ApiKey.REMOVE_RAFT_VOTER,
    versions=(0, 0),
    request_type=RemoveRaftVoterRequest,
    response_type=RemoveRaftVoterResponse,
    wire_request_type=wire_req.RemoveRaftVoterRequest,
    wire_response_type=wire_resp.RemoveRaftVoterResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    answer_wait_ms=voter_change_wait_ms,
    handle_request=handle_request,
)
