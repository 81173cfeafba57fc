"""AddRaftVoter (api key 80, v0-v1, KIP-853): add a voter, sent by an admin
client or by an observer that joins by itself. v1 adds
``AckWhenCommitted``; v0 always waits for the commit.

Kafka: ``RaftUtil.addVoterRequest``/``addVoterResponse``,
``KafkaRaftClient.handleAddVoterRequest`` (``AddVoterHandler``). The
handler family is :mod:`kraft.raft.handlers.membership`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import add_raft_voter_request as wire_req, add_raft_voter_response as wire_resp
from kraft.raft.errors import Errors
from kraft.raft.events import AddRaftVoterRequest, AddRaftVoterResponse
from kraft.raft.handlers import membership
from kraft.raft.rpcs.spec import RaftRpc, errors_of, listeners, replica_key, voter_change_wait_ms, wire_directory
from kraft.raft.voters import Endpoints
from kraft.wire.apis import ApiKey

__all__ = ["RPC"]


def request_from_wire(version: int, msg: Any) -> AddRaftVoterRequest:
    return AddRaftVoterRequest(
        cluster_id=msg.cluster_id,
        timeout_ms=msg.timeout_ms,
        voter_key=replica_key(msg.voter_id, msg.voter_directory_id),
        listeners=listeners(msg.listeners),
        ack_when_committed=msg.ack_when_committed if version >= 1 else True,
    )


def request_to_wire(req: AddRaftVoterRequest, version: int, endpoints: Endpoints) -> Any:
    return wire_req.AddRaftVoterRequest(
        cluster_id=req.cluster_id,
        timeout_ms=req.timeout_ms,
        voter_id=req.voter_key.id,
        voter_directory_id=wire_directory(req.voter_key.directory_id),
        listeners=[wire_req.Listener(name=e.listener, host=e.host, port=e.port) for e in req.listeners],
        ack_when_committed=req.ack_when_committed,
    )


def response_to_wire(resp: AddRaftVoterResponse, version: int, listener: str) -> Any:
    return wire_resp.AddRaftVoterResponse(error_code=int(resp.error), error_message=resp.error_message)


def response_from_wire(version: int, msg: Any, listener: str) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error=errors_of(msg.error_code), error_message=msg.error_message)


def error_response(error: Errors, partition_level: bool) -> AddRaftVoterResponse:
    return AddRaftVoterResponse(error=error)


RPC: RaftRpc[AddRaftVoterRequest, AddRaftVoterResponse] = RaftRpc(
    api_key=ApiKey.ADD_RAFT_VOTER,
    versions=(0, 1),
    request_type=AddRaftVoterRequest,
    response_type=AddRaftVoterResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    answer_wait_ms=voter_change_wait_ms,
    handle_request=membership.handle_voter_change_request,
)
