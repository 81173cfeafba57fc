"""AddRaftVoter (api key 80, v0-v1, KIP-853): add a voter, sent by an admin
client or by an observer that joins by itself. v1 adds
``AckWhenCommitted``; v0 always waits for the commit.

Kafka: ``RaftUtil.addVoterRequest``/``addVoterResponse``,
``KafkaRaftClient.handleAddVoterRequest`` (``AddVoterHandler``). The
handler is :func:`handle_request` below, on the checks of
:mod:`kraft.raft.families.membership`. An admin client (``kraft quorum
add-controller``, ``reassign``) sends :func:`admin_request` through
:data:`RPC` too (Kafka's ``KafkaAdminClient.addRaftVoter``), at most
:data:`RPC`'s newest version.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kraft.messages.generated import add_raft_voter_request as wire_req, add_raft_voter_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import RaftRequest, RaftResponse
from kraft.raft.events import InboundRequest
from kraft.raft.families import membership
from kraft.raft.families.common import MembershipContext
from kraft.raft.rpcs.api_versions_rpc import ApiVersionsRequest
from kraft.raft.voter_changes import PendingVoterChange, Refusal
from kraft.raft.rpcs.rpc_unit import RaftRpc, errors_of, listeners, replica_key, voter_change_wait_ms, wire_directory
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey, VoterNode
from kraft.wire.apis import ApiKey

__all__ = ["RPC", "AddRaftVoterRequest", "AddRaftVoterResponse", "admin_request"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AddRaftVoterRequest(RaftRequest):
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
class AddRaftVoterResponse(RaftResponse):
    error: Errors = Errors.NONE
    error_message: str | None = None



def request_from_wire(version: int, msg: wire_req.AddRaftVoterRequest) -> AddRaftVoterRequest:
    return AddRaftVoterRequest(
        cluster_id=msg.cluster_id,
        timeout_ms=msg.timeout_ms,
        voter_key=replica_key(msg.voter_id, msg.voter_directory_id),
        listeners=listeners(msg.listeners),
        ack_when_committed=msg.ack_when_committed if version >= 1 else True,
    )


def request_to_wire(req: AddRaftVoterRequest, version: int, endpoints: Endpoints) -> wire_req.AddRaftVoterRequest:
    return wire_req.AddRaftVoterRequest(
        cluster_id=req.cluster_id,
        timeout_ms=req.timeout_ms,
        voter_id=req.voter_key.id,
        voter_directory_id=wire_directory(req.voter_key.directory_id),
        listeners=[wire_req.Listener(name=e.listener, host=e.host, port=e.port) for e in req.listeners],
        ack_when_committed=req.ack_when_committed,
    )


def response_to_wire(resp: AddRaftVoterResponse, version: int, listener: str) -> wire_resp.AddRaftVoterResponse:
    return wire_resp.AddRaftVoterResponse(error_code=int(resp.error), error_message=resp.error_message)


def response_from_wire(version: int, msg: wire_resp.AddRaftVoterResponse, listener: str) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error=errors_of(msg.error_code), error_message=msg.error_message)


def error_response(error: Errors, partition_level: bool) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error=error)


def admin_request(cluster_id: str, voter_id: int, directory_id: uuid.UUID,
                  endpoints: Sequence[tuple[str, str, int]], timeout_ms: int) -> AddRaftVoterRequest:
    """What an admin client asks (Kafka's ``KafkaAdminClient.addRaftVoter``):
    add ``voter_id`` with its directory id, reachable on ``endpoints``
    (listener, host, port), and answer once the change is committed."""
    return AddRaftVoterRequest(cluster_id=cluster_id, timeout_ms=timeout_ms, voter_key=ReplicaKey(voter_id, directory_id),
                               listeners=tuple(Endpoint(name, host, port) for name, host, port in endpoints))


# ----------------------------------------------------------------- the core's side


def answer(error: Errors, message: str | None) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error=error, error_message=message)


def handle_request(ctx: MembershipContext, now_ms: int, env: InboundRequest) -> AddRaftVoterResponse | None:
    """Kafka's ``AddVoterHandler.handleAddVoterRequest``: the common checks,
    admission, then ApiVersions to the new voter; the rest happens when it
    answers (:func:`kraft.raft.rpcs.api_versions_rpc.handle_response`)."""
    msg = env.message
    assert isinstance(msg, AddRaftVoterRequest)
    state = membership.admit(ctx, msg.cluster_id, ctx.quorum.epoch, msg.voter_key, msg.listeners)
    if isinstance(state, Refusal):
        return answer(state.error, state.message)
    key = msg.voter_key
    refusal = membership.add_voter_refusal(ctx, state, key)
    if refusal is None:
        correlation = ctx.send_request_now(now_ms, key.id, ApiVersionsRequest(endpoints=msg.listeners))
        if correlation is None:
            refusal = Refusal(Errors.REQUEST_TIMED_OUT, f"New voter {key} is not ready to receive requests")
        else:
            state.voter_change = PendingVoterChange(
                "add",
                env,
                answer,
                VoterNode(key, msg.listeners),
                now_ms + ctx.config.request_timeout_ms,
                ack_when_committed=msg.ack_when_committed,
                api_versions_correlation=correlation,
            )
            return None
    return answer(refusal.error, refusal.message)


RPC: RaftRpc[AddRaftVoterRequest, AddRaftVoterResponse, wire_req.AddRaftVoterRequest, wire_resp.AddRaftVoterResponse, MembershipContext] = RaftRpc(
    api_key=ApiKey.ADD_RAFT_VOTER,
    versions=(0, 1),
    request_type=AddRaftVoterRequest,
    response_type=AddRaftVoterResponse,
    wire_request_type=wire_req.AddRaftVoterRequest,
    wire_response_type=wire_resp.AddRaftVoterResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    answer_wait_ms=voter_change_wait_ms,
    handle_request=handle_request,
)
