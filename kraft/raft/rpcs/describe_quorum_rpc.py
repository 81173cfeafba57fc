"""DescribeQuorum (api key 55, v0-v2): the leader's view of the quorum, as
``kafka-metadata-quorum.sh describe`` reads it -- the whole RPC in one
module: its versions, the one model of its answer (:class:`QuorumInfo`,
:class:`ReplicaInfo`), the leader's filling of it (:func:`describe`), the
node's encoding (:func:`response_to_wire`) and the client's side (the
request, :func:`request`, and the decoding back into the model,
:func:`quorum_info` / :func:`quorum_answer`). Adding a field to the answer
touches this module and its test only: the model's field, its filling, its
two wire directions; ``kraft quorum describe --json`` prints every field of
the model. The node answers it from the core's
:meth:`~kraft.raft.core.RaftCore.describe_quorum` (no request reaches the
core's handlers).

Kafka: ``KafkaRaftClient.handleDescribeQuorumRequest``,
``LeaderState.describeQuorum``, ``RaftUtil.singletonDescribeQuorumResponse``,
``DescribeQuorumRequest.getPartitionLevelErrorResponse`` (the server side);
``KafkaAdminClient.describeMetadataQuorum`` / ``createQuorumResult`` and
``org.apache.kafka.clients.admin.QuorumInfo`` (the admin side: kraft has
one model for both). v1 adds the replicas' last fetch and caught-up
timestamps, v2 (KIP-853) their directory ids and the voters' listeners
(``nodes``). A kraft witness notes why it never leads in its
NOT_LEADER_OR_FOLLOWER message, and a hand-over leader what it waits for
(:data:`WITNESS_NOTE`).

Values of the model are as the admin side sees them: a timestamp of -1 on
the wire (never fetched, never caught up) is None; the directory id is as on
the wire, ``Uuid.ZERO_UUID`` for none (a static quorum, or a replica that
sent none).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kraft.messages.generated import describe_quorum_request as dq_req, describe_quorum_response as dq_resp
from kraft.raft.events import METADATA_PARTITION, TopicPartition
from kraft.raft.leader_progress import OBSERVER_SESSION_TIMEOUT_MS, LeaderProgress, ReplicaProgress
from kraft.raft.roles import LeaderAndEpoch
from kraft.raft.voters import VoterSet
from kraft.wire.errors import ErrorCode

__all__ = [
    "DUPLICATE_NOTE",
    "Listener",
    "MAX_VERSION",
    "QuorumAnswer",
    "QuorumInfo",
    "ReplicaInfo",
    "VERSIONS",
    "WITNESS_NOTE",
    "ZERO_UUID",
    "describe",
    "note_handover",
    "note_leader",
    "note_witness",
    "quorum_answer",
    "quorum_info",
    "request",
    "response_to_wire",
]

#: The versions a kraft node answers; a kraft client asks for the newest (v2: every voter's listeners).
VERSIONS = (0, 2)
MAX_VERSION = VERSIONS[1]

#: Kafka's ``Uuid.ZERO_UUID``: "no directory id" on the wire.
ZERO_UUID = uuid.UUID(int=0)

#: One listener of a voter as DescribeQuorum v2 lists it: (name, host, port).
Listener = tuple[str, str, int]


# ----------------------------------------------------------------- the one model of the answer


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """Kafka's admin ``QuorumInfo.ReplicaState`` (the server side's
    ``DescribeQuorumResponseData.ReplicaState``): one replica as the leader
    sees it. ``log_end_offset`` is -1 while unknown; a timestamp of -1 on the
    wire is None."""

    replica_id: int
    #: As on the wire: ``Uuid.ZERO_UUID`` when the replica has none (a static quorum).
    directory_id: uuid.UUID
    log_end_offset: int
    last_fetch_ms: int | None
    last_caught_up_ms: int | None

    @property
    def node_id(self) -> int:
        return self.replica_id

    @property
    def directory(self) -> uuid.UUID | None:
        """The directory id, None for none (the zero uuid)."""
        return self.directory_id if self.directory_id.int else None

    @property
    def key(self) -> tuple[int, uuid.UUID | None]:
        """Kafka's ``ReplicaKey``: the id and the directory id (or None)."""
        return (self.replica_id, self.directory)


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """Kafka's admin ``QuorumInfo`` (what the server side's
    ``LeaderState.describeQuorum`` answers): the leader, its epoch, the high
    watermark (-1 until the new leader has committed a record of its epoch),
    every voter and the observers the leader still tracks."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaInfo, ...]
    observers: tuple[ReplicaInfo, ...]
    #: node id -> its listeners; the voters', DescribeQuorum v2 only
    #: (Kafka learns no observer endpoints).
    nodes: dict[int, tuple[Listener, ...]] = field(default_factory=dict)
    #: The wall-clock ms the fetch timestamps are compared with: when the
    #: leader described the quorum, or when a client received the answer
    #: (0: unknown). Not on the wire, so not in ``--json`` either (``repr=False``).
    now_ms: int = field(default=0, repr=False)

    def voter(self, node_id: int) -> ReplicaInfo | None:
        return next((v for v in self.voters if v.replica_id == node_id), None)


# ----------------------------------------------------------------- the leader's side


def _optional_ms(value: int) -> int | None:
    """-1 (never) is None in the model, as the admin client reads it."""
    return None if value == -1 else value


def describe(progress: LeaderProgress, now_ms: int, leader_epoch: int, voter_set: VoterSet) -> QuorumInfo:
    """What DescribeQuorum reports (Kafka's ``LeaderState.describeQuorum``),
    read-only, from the leader's replica progress: every voter (sorted by id)
    with its listeners in ``nodes``, and the observers that fetched within
    :data:`~kraft.raft.leader_progress.OBSERVER_SESSION_TIMEOUT_MS` (Kafka
    drops the others from its map here; we only skip them). The leader
    reports itself as fetching and caught up at ``now_ms``."""
    local = progress.local_key

    def describe_one(p: ReplicaProgress) -> ReplicaInfo:
        end = -1 if p.end_offset is None else p.end_offset
        directory_id = ZERO_UUID if p.key.directory_id is None else p.key.directory_id
        if p.key.matches(local):
            return ReplicaInfo(p.key.id, directory_id, end, now_ms, now_ms)
        return ReplicaInfo(p.key.id, directory_id, end, _optional_ms(p.last_fetch_ms),
                           _optional_ms(p.last_caught_up_ms))

    voter_ids = sorted(progress.voters)
    voters = tuple(describe_one(progress.voters[i]) for i in voter_ids)
    observers = tuple(
        describe_one(p)
        for p in sorted(progress.observers.values(), key=lambda p: (p.key.id, str(p.key.directory_id)))
        if p.key.matches(local) or now_ms - p.last_fetch_ms < OBSERVER_SESSION_TIMEOUT_MS
    )
    # Every voter, listeners or none: RaftUtil.singletonDescribeQuorumResponse
    # lists the voters' nodes only (Kafka learns no observer endpoints).
    nodes = {i: tuple((e.listener, e.host, e.port) for e in voter_set.endpoints(i)) for i in voter_ids}
    hwm = -1 if progress.high_watermark is None else progress.high_watermark
    return QuorumInfo(local.id, leader_epoch, hwm, voters, observers, nodes, now_ms)

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


# ----------------------------------------------------------------- the client's side


def request(version: int) -> dq_req.DescribeQuorumRequest:
    """DescribeQuorum for ``__cluster_metadata-0`` (the same at every version)."""
    return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name=METADATA_PARTITION.topic, partitions=[dq_req.PartitionData(
            partition_index=METADATA_PARTITION.partition)])])


def _replica_info(state: dq_resp.ReplicaState) -> ReplicaInfo:
    return ReplicaInfo(state.replica_id, state.replica_directory_id, state.log_end_offset,
                       _optional_ms(state.last_fetch_timestamp), _optional_ms(state.last_caught_up_timestamp))


def quorum_info(body: dq_resp.DescribeQuorumResponse) -> QuorumInfo:
    """The partition of a successful DescribeQuorum answer (Kafka's
    ``KafkaAdminClient.createQuorumResult``): the inverse of
    :func:`response_to_wire`."""
    partition = body.topics[0].partitions[0]
    return QuorumInfo(
        leader_id=partition.leader_id,
        leader_epoch=partition.leader_epoch,
        high_watermark=partition.high_watermark,
        voters=tuple(_replica_info(v) for v in partition.current_voters),
        observers=tuple(_replica_info(o) for o in partition.observers),
        nodes={n.node_id: tuple((l.name, l.host, l.port) for l in n.listeners) for n in body.nodes},
    )


@dataclass(frozen=True, slots=True)
class QuorumAnswer:
    """One node's DescribeQuorum answer read once: the answer's own error,
    the one partition's error (a non-leader answers NOT_LEADER_OR_FOLLOWER
    there, with its epoch and, for a kraft witness, a note in the message)
    and, when both are NONE, the quorum as the leader sees it."""

    error_code: int
    error_message: str | None
    #: None when the answer does not describe exactly one partition.
    partition_error_code: int | None
    partition_error_message: str | None
    #: The partition's leader epoch (-1 without a partition).
    leader_epoch: int
    #: The leader's view; None unless both error codes are NONE.
    info: QuorumInfo | None


def quorum_answer(body: dq_resp.DescribeQuorumResponse) -> QuorumAnswer:
    """Read a DescribeQuorum response body (any version)."""
    partitions = body.topics[0].partitions if len(body.topics) == 1 else []
    if len(partitions) != 1:
        return QuorumAnswer(body.error_code, body.error_message, None, None, -1, None)
    partition = partitions[0]
    ok = body.error_code == ErrorCode.NONE and partition.error_code == ErrorCode.NONE
    return QuorumAnswer(body.error_code, body.error_message, partition.error_code, partition.error_message,
                        partition.leader_epoch, quorum_info(body) if ok else None)
