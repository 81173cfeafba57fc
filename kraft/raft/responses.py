"""What the core does with an answer to one of its requests (Kafka's
``KafkaRaftClient.handleResponse`` and ``maybeHandleCommonResponse``).

An answer no longer expected (timed out, or sent before a role change) is
dropped; one that answers another RPC is a protocol violation. Otherwise
the epoch gate (:func:`kraft.raft.epoch_gate.check_response`, carried out by
the core) sees it first, then the RPC's handler from the registry
(``RaftRpc.handle_response``, through ``RaftRpc.handle_answer``); ApiVersions and the voter changes' answers go
to the membership client. The connection is then freed, or backed off when
the answer was not handled.
"""

from __future__ import annotations

from typing import Protocol

from kraft.raft.errors import Errors
from kraft.raft.events import InboundResponse, QuorumResponse, RaftResponse
from kraft.raft.rpcs import (
    AddRaftVoterResponse, ApiVersionsResponse, RemoveRaftVoterResponse, UpdateRaftVoterResponse, VoteResponse,
)
from kraft.raft.own_membership import OwnMembership
from kraft.raft.families.common import HandlerContext
from kraft.raft.request_manager import RequestManager
from kraft.raft.roles import Prospective
from kraft.raft.rpcs import BY_RESPONSE, api_versions_rpc
from kraft.raft.voters import Endpoints

__all__ = ["ResponseContext", "handle_response"]


class ResponseContext(HandlerContext, Protocol):
    """What answering needs of the core beyond a handler's view."""

    @property
    def requests(self) -> RequestManager: ...
    @property
    def own_membership(self) -> OwnMembership: ...
    def become_candidate(self, now_ms: int, reason: str) -> None: ...
    def gate_response(
        self, now_ms: int, source: int, error: Errors, leader_id: int | None, epoch: int, endpoints: Endpoints
    ) -> bool | None: ...


def handle_response(core: ResponseContext, now_ms: int, env: InboundResponse) -> None:
    """An answer to one of our requests: dropped if no longer expected, a
    protocol violation if it answers another RPC, else handled by its RPC
    (after the epoch gate) and its connection freed or backed off."""
    if not core.requests.is_response_expected(env.source, env.correlation_id):
        return  # timed out, or sent before a role change
    sent = core.requests.request_kind(env.source)
    answer = type(env.message).__name__
    if sent is not None and answer != sent.replace("Request", "Response"):
        core.violation(env.source, f"answered a {sent} with a {answer}")
        core.requests.on_response(env.source, env.correlation_id, False, now_ms)
        return
    message = env.message
    if isinstance(message, ApiVersionsResponse):
        handled = api_versions_rpc.handle_response(core, now_ms, env.correlation_id, message)
    else:
        handled = _handle_response_message(core, now_ms, env.source, message)
    core.requests.on_response(env.source, env.correlation_id, handled, now_ms)


def _handle_response_message(core: ResponseContext, now_ms: int, source: int, msg: RaftResponse) -> bool:
    """Returns whether the response was handled (False: back off from ``source``)."""
    match msg:
        case AddRaftVoterResponse() | RemoveRaftVoterResponse():
            return core.own_membership.handle_join_response(core, now_ms, msg)
        case UpdateRaftVoterResponse():
            return _handle_update_raft_voter_response(core, now_ms, source, msg)
        case ApiVersionsResponse():
            raise TypeError("ApiVersions responses go to the membership handler")
    if not isinstance(msg, QuorumResponse):
        raise TypeError(f"not a response of the quorum RPCs: {msg!r}")
    if msg.error is not Errors.NONE:
        if (
            msg.error is Errors.UNSUPPORTED_VERSION
            and isinstance(msg, VoteResponse)
            and isinstance(core.quorum.role, Prospective)
        ):
            # A voter that does not know PreVote (Vote v0/v1): skip the
            # pre-vote and run a real election (KIP-996 compatibility).
            core.become_candidate(now_ms, f"node {source} does not support pre-vote")
            return True
        return False
    leader_id = None if msg.leader_id < 0 else msg.leader_id
    gate = core.gate_response(
        now_ms, source, msg.partition_error, leader_id, msg.leader_epoch, msg.leader_endpoints
    )
    if gate is not None:
        return gate
    return BY_RESPONSE[type(msg)].handle_answer(core, now_ms, source, msg)


def _handle_update_raft_voter_response(
    core: ResponseContext, now_ms: int, source: int, msg: UpdateRaftVoterResponse
) -> bool:
    """UpdateRaftVoter answers skip the common error handling: only a fencing
    error or a newer epoch moves this replica (Kafka's ``handleUpdateVoterResponse``)."""
    core.own_membership.note_update_answered(core, msg)
    leader_id = None if msg.leader_id < 0 else msg.leader_id
    if msg.leader_epoch >= 0:
        error = msg.error if msg.error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER) else Errors.NONE
        gate = core.gate_response(now_ms, source, error, leader_id, msg.leader_epoch, msg.leader_endpoints)
        if gate is not None:
            return gate
    return True
