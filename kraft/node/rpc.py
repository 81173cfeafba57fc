"""Translation between Kafka's KRaft RPCs (the generated wire messages) and
the raft core's flat events (``kraft.raft.events``).

Kafka's raft RPCs carry one topic with one partition (``__cluster_metadata``,
partition 0; Fetch addresses it by topic id since v13). Requests for any
other partition never reach the core: :func:`request_from_wire` returns the
response to send instead, as Kafka's ``KafkaRaftClient`` answers them: a
top-level INVALID_REQUEST for Vote, BeginQuorumEpoch, EndQuorumEpoch and
Fetch ("until we support multi-raft, we treat topic partition mismatches as
invalid requests"), and UNKNOWN_TOPIC_OR_PARTITION for the partition of a
FetchSnapshot; INVALID_REQUEST for a malformed shape.
"""

from __future__ import annotations

import uuid
from typing import Any

from kraft.raft import events as ev
from kraft.raft.errors import Errors
from kraft.messages.generated import (
    add_raft_voter_request as add_req,
    add_raft_voter_response as add_resp,
    api_versions_request as av_req,
    begin_quorum_epoch_request as bqe_req,
    begin_quorum_epoch_response as bqe_resp,
    end_quorum_epoch_request as eqe_req,
    end_quorum_epoch_response as eqe_resp,
    fetch_request as fetch_req,
    fetch_response as fetch_resp,
    fetch_snapshot_request as fs_req,
    fetch_snapshot_response as fs_resp,
    remove_raft_voter_request as remove_req,
    remove_raft_voter_response as remove_resp,
    update_raft_voter_request as update_req,
    update_raft_voter_response as update_resp,
    vote_request as vote_req,
    vote_response as vote_resp,
)
from kraft.records.view import OffsetAndEpoch
from kraft.wire.client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION
from kraft.raft.voters import Endpoint, Endpoints, ReplicaKey

__all__ = [
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "RAFT_API_KEYS",
    "VOTER_CHANGE_API_KEYS",
    "request_from_wire",
    "request_to_wire",
    "response_from_wire",
    "response_to_wire",
    "error_response",
]

METADATA_TOPIC = "__cluster_metadata"
#: Kafka's fixed topic id of ``__cluster_metadata`` (``Uuid.METADATA_TOPIC_ID``),
#: "AAAAAAAAAAAAAAAAAAAAAQ" in Kafka's base64 form.
METADATA_TOPIC_ID = uuid.UUID(int=1)
ZERO = uuid.UUID(int=0)

VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, FETCH, FETCH_SNAPSHOT = 52, 53, 54, 1, 59
RAFT_API_KEYS = frozenset({VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, FETCH, FETCH_SNAPSHOT})
API_VERSIONS, ADD_RAFT_VOTER, REMOVE_RAFT_VOTER, UPDATE_RAFT_VOTER = 18, 80, 81, 82
#: KIP-853's voter changes, answered by the raft core's leader.
VOTER_CHANGE_API_KEYS = frozenset({ADD_RAFT_VOTER, REMOVE_RAFT_VOTER, UPDATE_RAFT_VOTER})
#: The wire api key of each request the core sends.
REQUEST_API_KEYS: dict[type, int] = {
    ev.VoteRequest: VOTE,
    ev.BeginQuorumEpochRequest: BEGIN_QUORUM_EPOCH,
    ev.EndQuorumEpochRequest: END_QUORUM_EPOCH,
    ev.FetchRequest: FETCH,
    ev.FetchSnapshotRequest: FETCH_SNAPSHOT,
    ev.ApiVersionsRequest: API_VERSIONS,
    ev.AddRaftVoterRequest: ADD_RAFT_VOTER,
    ev.RemoveRaftVoterRequest: REMOVE_RAFT_VOTER,
    ev.UpdateRaftVoterRequest: UPDATE_RAFT_VOTER,
}


def _dir(u: uuid.UUID) -> uuid.UUID | None:
    return None if u == ZERO else u


def _wire_dir(u: uuid.UUID | None) -> uuid.UUID:
    return ZERO if u is None else u


def _key(node_id: int, directory_id: uuid.UUID) -> ReplicaKey:
    return ReplicaKey(node_id, _dir(directory_id))


def _leader_endpoints(items: list[Any]) -> Endpoints:
    return tuple(Endpoint(e.name, e.host, e.port) for e in items)


def _node_endpoints(items: list[Any], leader_id: int, listener: str) -> Endpoints:
    # Responses carry NodeEndpoints for the listener the request arrived on.
    return tuple(Endpoint(listener, e.host, e.port) for e in items if e.node_id == leader_id)


class _Reject(Exception):
    def __init__(self, error: Errors, partition_level: bool = False) -> None:
        self.error = error
        self.partition_level = partition_level


def _one_partition(topics: list[Any], name_attr: str = "topic_name", index_attr: str = "partition_index") -> Any:
    if len(topics) != 1 or len(topics[0].partitions) != 1:
        raise _Reject(Errors.INVALID_REQUEST)
    topic = topics[0]
    part = topic.partitions[0]
    if getattr(topic, name_attr) != METADATA_TOPIC or getattr(part, index_attr) != 0:
        raise _Reject(Errors.INVALID_REQUEST)
    return part


# ----------------------------------------------------------------- requests


def request_from_wire(api_key: int, version: int, msg: Any) -> ev.RaftRequest | ev.RaftResponse:
    """The core's request for a decoded wire request, or (for a request the
    core must not see) the error response to send back."""
    try:
        return _request_from_wire(api_key, version, msg)
    except _Reject as r:
        return error_response(api_key, r.error, partition_level=r.partition_level)


def _listeners(items: list[Any]) -> Endpoints:
    return tuple(Endpoint(e.name, e.host, e.port) for e in items)


def _request_from_wire(api_key: int, version: int, msg: Any) -> ev.RaftRequest:
    if api_key == ADD_RAFT_VOTER:
        return ev.AddRaftVoterRequest(
            cluster_id=msg.cluster_id,
            timeout_ms=msg.timeout_ms,
            voter_key=_key(msg.voter_id, msg.voter_directory_id),
            listeners=_listeners(msg.listeners),
            ack_when_committed=msg.ack_when_committed if version >= 1 else True,
        )
    if api_key == REMOVE_RAFT_VOTER:
        return ev.RemoveRaftVoterRequest(
            cluster_id=msg.cluster_id, voter_key=_key(msg.voter_id, msg.voter_directory_id)
        )
    if api_key == UPDATE_RAFT_VOTER:
        feature = msg.k_raft_version_feature
        return ev.UpdateRaftVoterRequest(
            cluster_id=msg.cluster_id,
            current_leader_epoch=msg.current_leader_epoch,
            voter_key=_key(msg.voter_id, msg.voter_directory_id),
            listeners=_listeners(msg.listeners),
            supported_kraft_versions=(feature.min_supported_version, feature.max_supported_version),
        )
    if api_key == VOTE:
        p = _one_partition(msg.topics)
        return ev.VoteRequest(
            cluster_id=msg.cluster_id,
            voter_key=ReplicaKey(msg.voter_id, _dir(p.voter_directory_id)) if version >= 1 and msg.voter_id >= 0 else None,
            candidate_epoch=p.replica_epoch,
            candidate_key=_key(p.replica_id, p.replica_directory_id),
            last_offset_epoch=p.last_offset_epoch,
            last_offset=p.last_offset,
            pre_vote=p.pre_vote,
        )
    if api_key == BEGIN_QUORUM_EPOCH:
        p = _one_partition(msg.topics)
        return ev.BeginQuorumEpochRequest(
            cluster_id=msg.cluster_id,
            voter_key=ReplicaKey(msg.voter_id, _dir(p.voter_directory_id)) if version >= 1 and msg.voter_id >= 0 else None,
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            leader_endpoints=_leader_endpoints(msg.leader_endpoints),
        )
    if api_key == END_QUORUM_EPOCH:
        p = _one_partition(msg.topics)
        if version >= 1:
            preferred = tuple(_key(c.candidate_id, c.candidate_directory_id) for c in p.preferred_candidates)
        else:
            preferred = tuple(ReplicaKey(i) for i in p.preferred_successors)
        return ev.EndQuorumEpochRequest(
            cluster_id=msg.cluster_id,
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            preferred_candidates=preferred,
            leader_endpoints=_leader_endpoints(msg.leader_endpoints),
        )
    if api_key == FETCH:
        if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
            raise _Reject(Errors.INVALID_REQUEST)
        topic = msg.topics[0]
        p = topic.partitions[0]
        known = topic.topic_id == METADATA_TOPIC_ID if version >= 13 else topic.topic == METADATA_TOPIC
        if not known or p.partition != 0:
            raise _Reject(Errors.INVALID_REQUEST)
        replica_id = msg.replica_state.replica_id if version >= 15 else msg.replica_id
        hwm = p.high_watermark if version >= 18 and p.high_watermark != (1 << 63) - 1 else -1
        return ev.FetchRequest(
            cluster_id=msg.cluster_id,
            replica_key=_key(replica_id, p.replica_directory_id),
            current_leader_epoch=p.current_leader_epoch,
            fetch_offset=p.fetch_offset,
            last_fetched_epoch=p.last_fetched_epoch,
            max_wait_ms=msg.max_wait_ms,
            max_bytes=msg.max_bytes,
            high_watermark=hwm,
        )
    if api_key == FETCH_SNAPSHOT:
        if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
            raise _Reject(Errors.INVALID_REQUEST)
        topic = msg.topics[0]
        p = topic.partitions[0]
        if topic.name != METADATA_TOPIC or p.partition != 0:
            raise _Reject(Errors.UNKNOWN_TOPIC_OR_PARTITION, partition_level=True)
        return ev.FetchSnapshotRequest(
            cluster_id=msg.cluster_id,
            replica_key=_key(msg.replica_id, p.replica_directory_id),
            current_leader_epoch=p.current_leader_epoch,
            snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            position=p.position,
            max_bytes=msg.max_bytes,
        )
    raise ValueError(f"api key {api_key} is not a raft RPC")


def request_to_wire(req: ev.RaftRequest, version: int, endpoints: Endpoints = ()) -> tuple[int, Any]:
    """(api key, wire message) for one of the core's requests."""
    match req:
        case ev.VoteRequest():
            voter = req.voter_key
            return VOTE, vote_req.VoteRequest(
                cluster_id=req.cluster_id,
                voter_id=voter.id if voter is not None and version >= 1 else -1,
                topics=[vote_req.TopicData(topic_name=METADATA_TOPIC, partitions=[vote_req.PartitionData(
                    partition_index=0,
                    replica_epoch=req.candidate_epoch,
                    replica_id=req.candidate_key.id,
                    replica_directory_id=_wire_dir(req.candidate_key.directory_id) if version >= 1 else ZERO,
                    voter_directory_id=_wire_dir(voter.directory_id if voter else None) if version >= 1 else ZERO,
                    last_offset_epoch=req.last_offset_epoch,
                    last_offset=req.last_offset,
                    pre_vote=req.pre_vote,
                )])],
            )
        case ev.BeginQuorumEpochRequest():
            voter = req.voter_key
            return BEGIN_QUORUM_EPOCH, bqe_req.BeginQuorumEpochRequest(
                cluster_id=req.cluster_id,
                voter_id=voter.id if voter is not None and version >= 1 else -1,
                topics=[bqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=[bqe_req.PartitionData(
                    partition_index=0,
                    voter_directory_id=_wire_dir(voter.directory_id if voter else None) if version >= 1 else ZERO,
                    leader_id=req.leader_id,
                    leader_epoch=req.leader_epoch,
                )])],
                leader_endpoints=[bqe_req.LeaderEndpoint(name=e.listener, host=e.host, port=e.port)
                                  for e in (req.leader_endpoints or endpoints)] if version >= 1 else [],
            )
        case ev.EndQuorumEpochRequest():
            part = eqe_req.PartitionData(partition_index=0, leader_id=req.leader_id, leader_epoch=req.leader_epoch)
            if version >= 1:
                part.preferred_candidates = [
                    eqe_req.ReplicaInfo(candidate_id=k.id, candidate_directory_id=_wire_dir(k.directory_id))
                    for k in req.preferred_candidates]
            else:
                part.preferred_successors = [k.id for k in req.preferred_candidates]
            return END_QUORUM_EPOCH, eqe_req.EndQuorumEpochRequest(
                cluster_id=req.cluster_id,
                topics=[eqe_req.TopicData(topic_name=METADATA_TOPIC, partitions=[part])],
                leader_endpoints=[eqe_req.LeaderEndpoint(name=e.listener, host=e.host, port=e.port)
                                  for e in (req.leader_endpoints or endpoints)] if version >= 1 else [],
            )
        case ev.FetchRequest():
            fetch_part = fetch_req.FetchPartition(
                partition=0,
                current_leader_epoch=req.current_leader_epoch,
                fetch_offset=req.fetch_offset,
                last_fetched_epoch=req.last_fetched_epoch,
                log_start_offset=-1,
                partition_max_bytes=0,
            )
            if version >= 17:
                fetch_part.replica_directory_id = _wire_dir(req.replica_key.directory_id)
            if version >= 18 and req.high_watermark >= 0:
                fetch_part.high_watermark = req.high_watermark
            topic = fetch_req.FetchTopic(partitions=[fetch_part])
            if version >= 13:
                topic.topic_id = METADATA_TOPIC_ID
            else:
                topic.topic = METADATA_TOPIC
            msg = fetch_req.FetchRequest(
                cluster_id=req.cluster_id if version >= 12 else None,
                max_wait_ms=req.max_wait_ms,
                min_bytes=0,
                max_bytes=req.max_bytes,
                topics=[topic],
            )
            if version >= 15:
                msg.replica_state = fetch_req.ReplicaState(replica_id=req.replica_key.id, replica_epoch=-1)
            else:
                msg.replica_id = req.replica_key.id
            return FETCH, msg
        case ev.AddRaftVoterRequest():
            return ADD_RAFT_VOTER, add_req.AddRaftVoterRequest(
                cluster_id=req.cluster_id,
                timeout_ms=req.timeout_ms,
                voter_id=req.voter_key.id,
                voter_directory_id=_wire_dir(req.voter_key.directory_id),
                listeners=[add_req.Listener(name=e.listener, host=e.host, port=e.port) for e in req.listeners],
                ack_when_committed=req.ack_when_committed,
            )
        case ev.RemoveRaftVoterRequest():
            return REMOVE_RAFT_VOTER, remove_req.RemoveRaftVoterRequest(
                cluster_id=req.cluster_id,
                voter_id=req.voter_key.id,
                voter_directory_id=_wire_dir(req.voter_key.directory_id),
            )
        case ev.UpdateRaftVoterRequest():
            low, high = req.supported_kraft_versions
            return UPDATE_RAFT_VOTER, update_req.UpdateRaftVoterRequest(
                cluster_id=req.cluster_id,
                current_leader_epoch=req.current_leader_epoch,
                voter_id=req.voter_key.id,
                voter_directory_id=_wire_dir(req.voter_key.directory_id),
                listeners=[update_req.Listener(name=e.listener, host=e.host, port=e.port) for e in req.listeners],
                k_raft_version_feature=update_req.KRaftVersionFeature(
                    min_supported_version=low, max_supported_version=high
                ),
            )
        case ev.ApiVersionsRequest():
            return API_VERSIONS, av_req.ApiVersionsRequest(
                client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION
            )
        case ev.FetchSnapshotRequest():
            snapshot_part = fs_req.PartitionSnapshot(
                partition=0,
                current_leader_epoch=req.current_leader_epoch,
                snapshot_id=fs_req.SnapshotId(end_offset=req.snapshot_id.offset, epoch=req.snapshot_id.epoch),
                position=req.position,
            )
            if version >= 1:
                snapshot_part.replica_directory_id = _wire_dir(req.replica_key.directory_id)
            return FETCH_SNAPSHOT, fs_req.FetchSnapshotRequest(
                cluster_id=req.cluster_id,
                replica_id=req.replica_key.id,
                max_bytes=req.max_bytes,
                topics=[fs_req.TopicSnapshot(name=METADATA_TOPIC, partitions=[snapshot_part])],
            )
    raise TypeError(f"not a raft request: {req!r}")


# ----------------------------------------------------------------- responses


def _node_endpoint_list(module: Any, leader_id: int, endpoints: Endpoints, listener: str) -> list[Any]:
    return [module.NodeEndpoint(node_id=leader_id, host=e.host, port=e.port)
            for e in endpoints if e.listener == listener][:1] if leader_id >= 0 else []


def response_to_wire(api_key: int, resp: ev.RaftResponse, version: int, listener: str = "CONTROLLER") -> Any:
    """The wire response for one of the core's responses. ``listener`` is the
    listener the request arrived on: NodeEndpoints carry the leader's endpoint
    for that listener, as Kafka does."""
    match resp:
        case ev.AddRaftVoterResponse():
            return add_resp.AddRaftVoterResponse(error_code=int(resp.error), error_message=resp.error_message)
        case ev.RemoveRaftVoterResponse():
            return remove_resp.RemoveRaftVoterResponse(error_code=int(resp.error), error_message=resp.error_message)
        case ev.UpdateRaftVoterResponse():
            # Kafka's RaftUtil.updateVoterResponse: the leader's endpoint on
            # the listener the request came in on.
            endpoint = next((e for e in resp.leader_endpoints if e.listener == listener), None)
            return update_resp.UpdateRaftVoterResponse(
                error_code=int(resp.error),
                current_leader=update_resp.CurrentLeader(
                    leader_id=resp.leader_id,
                    leader_epoch=resp.leader_epoch,
                    host="" if endpoint is None else endpoint.host,
                    port=-1 if endpoint is None else endpoint.port,
                ),
            )
        case ev.VoteResponse():
            return vote_resp.VoteResponse(
                error_code=int(resp.error),
                topics=[vote_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[vote_resp.PartitionData(
                    partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
                    leader_epoch=resp.leader_epoch, vote_granted=resp.vote_granted)])],
                node_endpoints=_node_endpoint_list(vote_resp, resp.leader_id, resp.leader_endpoints, listener)
                if version >= 1 else [],
            )
        case ev.BeginQuorumEpochResponse():
            return bqe_resp.BeginQuorumEpochResponse(
                error_code=int(resp.error),
                topics=[bqe_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[bqe_resp.PartitionData(
                    partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
                    leader_epoch=resp.leader_epoch)])],
                node_endpoints=_node_endpoint_list(bqe_resp, resp.leader_id, resp.leader_endpoints, listener)
                if version >= 1 else [],
            )
        case ev.EndQuorumEpochResponse():
            return eqe_resp.EndQuorumEpochResponse(
                error_code=int(resp.error),
                topics=[eqe_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[eqe_resp.PartitionData(
                    partition_index=0, error_code=int(resp.partition_error), leader_id=resp.leader_id,
                    leader_epoch=resp.leader_epoch)])],
                node_endpoints=_node_endpoint_list(eqe_resp, resp.leader_id, resp.leader_endpoints, listener)
                if version >= 1 else [],
            )
        case ev.FetchResponse():
            part = fetch_resp.PartitionData(
                partition_index=0,
                error_code=int(resp.partition_error),
                high_watermark=resp.high_watermark,
                last_stable_offset=resp.high_watermark,
                log_start_offset=resp.log_start_offset,
                records=resp.records,
                current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=resp.leader_id, leader_epoch=resp.leader_epoch),
            )
            if resp.diverging_epoch is not None:
                part.diverging_epoch = fetch_resp.EpochEndOffset(
                    epoch=resp.diverging_epoch.epoch, end_offset=resp.diverging_epoch.offset)
            if resp.snapshot_id is not None:
                part.snapshot_id = fetch_resp.SnapshotId(
                    end_offset=resp.snapshot_id.offset, epoch=resp.snapshot_id.epoch)
            topic = fetch_resp.FetchableTopicResponse(partitions=[part])
            if version >= 13:
                topic.topic_id = METADATA_TOPIC_ID
            else:
                topic.topic = METADATA_TOPIC
            msg = fetch_resp.FetchResponse(error_code=int(resp.error), responses=[topic])
            if version >= 16 and resp.leader_id >= 0:
                msg.node_endpoints = [fetch_resp.NodeEndpoint(node_id=resp.leader_id, host=e.host, port=e.port)
                                      for e in resp.leader_endpoints if e.listener == listener][:1]
            return msg
        case ev.FetchSnapshotResponse():
            snapshot_part = fs_resp.PartitionSnapshot(
                index=0,
                error_code=int(resp.partition_error),
                snapshot_id=fs_resp.SnapshotId(end_offset=resp.snapshot_id.offset, epoch=resp.snapshot_id.epoch),
                current_leader=fs_resp.LeaderIdAndEpoch(leader_id=resp.leader_id, leader_epoch=resp.leader_epoch),
                size=resp.size,
                position=resp.position,
                unaligned_records=resp.unaligned_records,
            )
            return fs_resp.FetchSnapshotResponse(
                error_code=int(resp.error),
                topics=[fs_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=[snapshot_part])],
                node_endpoints=_node_endpoint_list(fs_resp, resp.leader_id, resp.leader_endpoints, listener)
                if version >= 1 else [],
            )
    raise TypeError(f"not a raft response: {resp!r}")


def error_response(api_key: int, error: Errors, partition_level: bool = False) -> ev.RaftResponse:
    """A response carrying only an error (top-level, or for the partition)."""
    if api_key == ADD_RAFT_VOTER:
        return ev.AddRaftVoterResponse(error=error)
    if api_key == REMOVE_RAFT_VOTER:
        return ev.RemoveRaftVoterResponse(error=error)
    if api_key == UPDATE_RAFT_VOTER:
        return ev.UpdateRaftVoterResponse(error=error)
    top, part = (Errors.NONE, error) if partition_level else (error, Errors.NONE)
    cls = {
        VOTE: ev.VoteResponse,
        BEGIN_QUORUM_EPOCH: ev.BeginQuorumEpochResponse,
        END_QUORUM_EPOCH: ev.EndQuorumEpochResponse,
        FETCH: ev.FetchResponse,
        FETCH_SNAPSHOT: ev.FetchSnapshotResponse,
    }[api_key]
    return cls(error=top, partition_error=part)


def _errors(code: int) -> Errors:
    try:
        return Errors(code)
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR


def response_from_wire(api_key: int, version: int, msg: Any, listener: str = "CONTROLLER") -> ev.RaftResponse:
    """The core's response for a decoded wire response. A response whose
    shape is wrong (no partition) becomes a top-level error."""
    top = _errors(msg.error_code)
    if api_key == API_VERSIONS:
        kraft = next((f for f in msg.supported_features if f.name == "kraft.version"), None)
        return ev.ApiVersionsResponse(
            error=top, supported_kraft_versions=None if kraft is None else (kraft.min_version, kraft.max_version)
        )
    if api_key == ADD_RAFT_VOTER:
        return ev.AddRaftVoterResponse(error=top, error_message=msg.error_message)
    if api_key == REMOVE_RAFT_VOTER:
        return ev.RemoveRaftVoterResponse(error=top, error_message=msg.error_message)
    if api_key == UPDATE_RAFT_VOTER:
        leader = msg.current_leader
        endpoints = (Endpoint(listener, leader.host, leader.port),) if leader.host and leader.port > 0 else ()
        return ev.UpdateRaftVoterResponse(
            error=top, leader_id=leader.leader_id, leader_epoch=leader.leader_epoch, leader_endpoints=endpoints
        )
    try:
        if api_key == FETCH:
            if len(msg.responses) != 1 or len(msg.responses[0].partitions) != 1:
                raise _Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
            p = msg.responses[0].partitions[0]
            leader_id, leader_epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
            div = p.diverging_epoch
            snap = p.snapshot_id
            return ev.FetchResponse(
                error=top,
                partition_error=_errors(p.error_code),
                high_watermark=p.high_watermark,
                log_start_offset=p.log_start_offset,
                records=b"" if p.records is None else p.records,
                diverging_epoch=OffsetAndEpoch(div.end_offset, div.epoch) if div.epoch >= 0 and div.end_offset >= 0 else None,
                snapshot_id=OffsetAndEpoch(snap.end_offset, snap.epoch) if snap.end_offset >= 0 and snap.epoch >= 0 else None,
                leader_id=leader_id,
                leader_epoch=leader_epoch,
                leader_endpoints=_node_endpoints(msg.node_endpoints, leader_id, listener) if version >= 16 else (),
            )
        if api_key == FETCH_SNAPSHOT:
            if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
                raise _Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
            p = msg.topics[0].partitions[0]
            leader_id, leader_epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
            return ev.FetchSnapshotResponse(
                error=top,
                partition_error=_errors(p.error_code),
                snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
                size=p.size,
                position=p.position,
                unaligned_records=b"" if p.unaligned_records is None else p.unaligned_records,
                leader_id=leader_id,
                leader_epoch=leader_epoch,
                leader_endpoints=_node_endpoints(msg.node_endpoints, leader_id, listener) if version >= 1 else (),
            )
        if len(msg.topics) != 1 or len(msg.topics[0].partitions) != 1:
            raise _Reject(Errors.INVALID_REQUEST if top == Errors.NONE else top)
        p = msg.topics[0].partitions[0]
        common = dict(
            error=top,
            partition_error=_errors(p.error_code),
            leader_id=p.leader_id,
            leader_epoch=p.leader_epoch,
            leader_endpoints=_node_endpoints(msg.node_endpoints, p.leader_id, listener) if version >= 1 else (),
        )
        if api_key == VOTE:
            return ev.VoteResponse(vote_granted=p.vote_granted, **common)
        if api_key == BEGIN_QUORUM_EPOCH:
            return ev.BeginQuorumEpochResponse(**common)
        if api_key == END_QUORUM_EPOCH:
            return ev.EndQuorumEpochResponse(**common)
    except _Reject as r:
        return error_response(api_key, r.error)
    raise ValueError(f"api key {api_key} is not a raft RPC")
