"""BeginQuorumEpoch (api key 53, v0-v1): a new leader announcing itself to
the voters. KIP-853 (v1) adds the voter's key, the leader's endpoints and
the answer's NodeEndpoints.

Kafka: ``RaftUtil.singletonBeginQuorumEpochRequest``/``Response``,
``KafkaRaftClient.handleBeginQuorumEpochRequest``/``Response``. The
handlers are :func:`kraft.raft.handlers.election.handle_begin_quorum_epoch_request`
and :func:`~kraft.raft.handlers.election.handle_begin_quorum_epoch_response`.
"""

from __future__ import annotations

from typing import Any

from kraft.messages.generated import begin_quorum_epoch_request as wire_req, begin_quorum_epoch_response as wire_resp
from kraft.raft.events import BeginQuorumEpochRequest, BeginQuorumEpochResponse
from kraft.raft.handlers import election
from kraft.raft.rpcs.spec import (
    METADATA_TOPIC,
    ZERO,
    RaftRpc,
    directory,
    error_answer,
    leader_endpoint_list,
    leader_endpoints,
    one_partition,
    quorum_response_fields,
    quorum_response_to_wire,
    wire_directory,
)
from kraft.raft.voters import Endpoints, ReplicaKey
from kraft.wire.apis import ApiKey

__all__ = ["RPC"]


def request_from_wire(version: int, msg: Any) -> BeginQuorumEpochRequest:
    p = one_partition(msg.topics)
    return BeginQuorumEpochRequest(
        cluster_id=msg.cluster_id,
        voter_key=ReplicaKey(msg.voter_id, directory(p.voter_directory_id)) if version >= 1 and msg.voter_id >= 0 else None,
        leader_id=p.leader_id,
        leader_epoch=p.leader_epoch,
        leader_endpoints=leader_endpoints(msg.leader_endpoints),
    )


def request_to_wire(req: BeginQuorumEpochRequest, version: int, endpoints: Endpoints) -> Any:
    voter = req.voter_key
    return wire_req.BeginQuorumEpochRequest(
        cluster_id=req.cluster_id,
        voter_id=voter.id if voter is not None and version >= 1 else -1,
        topics=[wire_req.TopicData(topic_name=METADATA_TOPIC, partitions=[wire_req.PartitionData(
            partition_index=0,
            voter_directory_id=wire_directory(voter.directory_id if voter else None) if version >= 1 else ZERO,
            leader_id=req.leader_id,
            leader_epoch=req.leader_epoch,
        )])],
        leader_endpoints=leader_endpoint_list(wire_req, req.leader_endpoints, endpoints, version),
    )


def response_to_wire(resp: BeginQuorumEpochResponse, version: int, listener: str) -> Any:
    return quorum_response_to_wire(wire_resp, wire_resp.BeginQuorumEpochResponse, resp, version, listener)


def response_from_wire(version: int, msg: Any, listener: str) -> BeginQuorumEpochResponse:
    fields, _ = quorum_response_fields(version, msg, listener)
    return BeginQuorumEpochResponse(**fields)


error_response = error_answer(BeginQuorumEpochResponse)


def source(req: BeginQuorumEpochRequest) -> int:
    return req.leader_id


RPC: RaftRpc[BeginQuorumEpochRequest, BeginQuorumEpochResponse] = RaftRpc(
    api_key=ApiKey.BEGIN_QUORUM_EPOCH,
    versions=(0, 1),
    request_type=BeginQuorumEpochRequest,
    response_type=BeginQuorumEpochResponse,
    request_from_wire=request_from_wire,
    request_to_wire=request_to_wire,
    response_to_wire=response_to_wire,
    response_from_wire=response_from_wire,
    error_response=error_response,
    source=source,
    handle_request=election.handle_begin_quorum_epoch_request,
    handle_response=election.handle_begin_quorum_epoch_response,
)
