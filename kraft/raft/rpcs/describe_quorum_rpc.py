"""DescribeQuorum (api key 55, v0-v2): the leader's view of the quorum, as
``kafka-metadata-quorum.sh describe`` reads it. The node answers it from the
core's :meth:`~kraft.raft.core.RaftCore.describe_quorum` (no request reaches
the core), so this module holds its versions and its wire mapping only.

Kafka: ``KafkaRaftClient.handleDescribeQuorumRequest``,
``RaftUtil.singletonDescribeQuorumResponse``,
``DescribeQuorumRequest.getPartitionLevelErrorResponse``. v1 adds the
replicas' last fetch and caught-up timestamps, v2 (KIP-853) their
directory ids and the voters' listeners (``nodes``). A kraft witness notes
why it never leads in its NOT_LEADER_OR_FOLLOWER message, and a hand-over
leader what it waits for (:data:`WITNESS_NOTE`).
"""

from __future__ import annotations

from kraft.messages.generated import describe_quorum_request as dq_req, describe_quorum_response as dq_resp
from kraft.raft.events import METADATA_PARTITION, TopicPartition
from kraft.raft.quorum_info import Listener, QuorumInfo, ReplicaInfo
from kraft.raft.roles import LeaderAndEpoch
from kraft.raft.voters import VoterSet
from kraft.wire.errors import ErrorCode

__all__ = ["DUPLICATE_NOTE", "VERSIONS", "WITNESS_NOTE", "note_handover", "note_leader", "note_witness", "response_to_wire"]

#: The versions a kraft node answers.
VERSIONS = (0, 2)

#: ``Errors.NOT_LEADER_OR_FOLLOWER.message()``, which Kafka (3.9+) puts in
#: DescribeQuorum's partition error message on a non-leader.
_NOT_LEADER_OR_FOLLOWER_MESSAGE = (
    "For requests intended only for the leader, this error indicates that the broker is not the current "
    "leader. For requests intended for any replica, this error indicates that the broker is not a replica "
    "of the topic partition.")


def _wire_ms(value: int | None) -> int:
    return -1 if value is None else value


def _replica_state(version: int, r: ReplicaInfo) -> dq_resp.ReplicaState:
    state = dq_resp.ReplicaState(replica_id=r.replica_id, log_end_offset=r.log_end_offset,
                                 last_fetch_timestamp=_wire_ms(r.last_fetch_ms),
                                 last_caught_up_timestamp=_wire_ms(r.last_caught_up_ms))
    if version >= 2:
        state.replica_directory_id = r.directory_id
    return state


def _quorum_node(node_id: int, listeners: tuple[Listener, ...]) -> dq_resp.Node:
    return dq_resp.Node(node_id=node_id, listeners=[
        dq_resp.Listener(name=name, host=host, port=port) for name, host, port in listeners])


def _is_single_partition(request: dq_req.DescribeQuorumRequest, tp: TopicPartition) -> bool:
    """Kafka's ``RaftUtil.hasValidTopicPartition`` for DescribeQuorum."""
    return (len(request.topics) == 1 and request.topics[0].topic_name == tp.topic
            and len(request.topics[0].partitions) == 1
            and request.topics[0].partitions[0].partition_index == tp.partition)


#: What a kraft witness adds to its NOT_LEADER_OR_FOLLOWER DescribeQuorum
#: message: why it never leads (``kraft quorum describe --status`` reads it).
WITNESS_NOTE = " (kraft witness: "
#: How a leader's message names node ids two processes fetch with
#: (kraft/node/duplicate_ids.py; ``kraft doctor`` reads it).
DUPLICATE_NOTE = " (kraft duplicate node id "


def note_witness(body: dq_resp.DescribeQuorumResponse, reason: str) -> None:
    """Append the witness reason to a non-leader's partition error message."""
    for topic in body.topics:
        for partition in topic.partitions:
            if partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                partition.error_message = (partition.error_message or "") + WITNESS_NOTE + reason + ")"


def note_handover(body: dq_resp.DescribeQuorumResponse, reason: str) -> None:
    """A hand-over leader's answer (error NONE) carries the note as its
    partition message; Kafka's tools read no message from a NONE answer."""
    for topic in body.topics:
        for partition in topic.partitions:
            partition.error_message = "Leader" + WITNESS_NOTE + reason + ")"


def note_leader(body: dq_resp.DescribeQuorumResponse, note: str) -> None:
    """Append ``note`` to a leader's partition message (``Leader`` when it
    had none): kraft's word to ``kraft doctor``; Kafka's tools read no
    message from a NONE answer."""
    for topic in body.topics:
        for partition in topic.partitions:
            partition.error_message = (partition.error_message or "Leader") + note


def response_to_wire(
    version: int,
    request: dq_req.DescribeQuorumRequest,
    description: QuorumInfo | None,
    leader: LeaderAndEpoch,
    voters: VoterSet,
    topic_partition: TopicPartition = METADATA_PARTITION,
) -> dq_resp.DescribeQuorumResponse:
    """DescribeQuorum's answer: ``description`` is the leader's view, None on
    a node that is not the leader."""
    if not _is_single_partition(request, topic_partition):
        # Kafka's DescribeQuorumRequest.getPartitionLevelErrorResponse:
        # every requested partition, each with the error.
        return dq_resp.DescribeQuorumResponse(topics=[
            dq_resp.TopicData(topic_name=t.topic_name, partitions=[
                dq_resp.PartitionData(partition_index=p.partition_index,
                                      error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                for p in t.partitions])
            for t in request.topics])
    if description is None:
        leader_id = -1 if leader.leader_id is None else leader.leader_id
        partition = dq_resp.PartitionData(partition_index=topic_partition.partition,
                                          error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                          error_message=_NOT_LEADER_OR_FOLLOWER_MESSAGE,
                                          leader_id=leader_id, leader_epoch=leader.epoch)
        response = dq_resp.DescribeQuorumResponse(topics=[
            dq_resp.TopicData(topic_name=topic_partition.topic, partitions=[partition])])
        if version >= 2 and leader.leader_id is not None and voters.endpoints(leader.leader_id):
            listeners = tuple((e.listener, e.host, e.port) for e in voters.endpoints(leader.leader_id))
            response.nodes = [_quorum_node(leader.leader_id, listeners)]
        return response
    partition = dq_resp.PartitionData(
        partition_index=topic_partition.partition,
        leader_id=description.leader_id,
        leader_epoch=description.leader_epoch,
        high_watermark=description.high_watermark,
        current_voters=[_replica_state(version, v) for v in description.voters],
        observers=[_replica_state(version, o) for o in description.observers],
    )
    response = dq_resp.DescribeQuorumResponse(topics=[
        dq_resp.TopicData(topic_name=topic_partition.topic, partitions=[partition])])
    if version >= 2:
        # Kafka lists the voters' listeners only (RaftUtil.singletonDescribeQuorumResponse).
        response.nodes = [_quorum_node(node_id, listeners) for node_id, listeners in description.nodes.items()]
    return response
