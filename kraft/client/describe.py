"""DescribeCluster and DescribeQuorum, built and parsed in one place: the
requests every client of a quorum sends (the admin session, the observer's
discovery, ``kraft doctor``, the witness probe of ``kraft quorum describe``)
and the one model of each answer -- :class:`ClusterView` (Kafka's
``KafkaAdminClient.describeCluster`` result) and :class:`QuorumAnswer`
around the raft layer's :class:`~kraft.raft.quorum_info.QuorumInfo`
(Kafka's ``QuorumInfo``). Who sends them, how often and what an error
means is the caller's business; the bytes and their reading are here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kraft.messages.generated import describe_cluster_request as dc_req
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.raft.quorum_info import QuorumInfo, ReplicaInfo
from kraft.wire.errors import ErrorCode

__all__ = [
    "ENDPOINT_TYPE_BROKER",
    "ENDPOINT_TYPE_CONTROLLER",
    "ENDPOINT_TYPE_NAMES",
    "METADATA_TOPIC",
    "METADATA_PARTITION",
    "DESCRIBE_QUORUM_MAX_VERSION",
    "VersionTooOld",
    "describe_cluster_request",
    "describe_quorum_request",
    "ClusterView",
    "cluster_view",
    "QuorumAnswer",
    "quorum_answer",
    "quorum_info",
]

#: Kafka's ``EndpointType`` (KIP-919): which nodes DescribeCluster lists.
ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2
ENDPOINT_TYPE_NAMES = {ENDPOINT_TYPE_BROKER: "BROKER", ENDPOINT_TYPE_CONTROLLER: "CONTROLLER"}

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
#: The newest DescribeQuorum a client asks for (v2: every voter's listeners).
DESCRIBE_QUORUM_MAX_VERSION = 2


class VersionTooOld(Exception):
    """The peer's highest common version cannot express the request."""


def describe_cluster_request(endpoint_type: int) -> Callable[[int], dc_req.DescribeClusterRequest]:
    """The DescribeCluster request for the version the connection agreed on;
    v0 cannot ask for controllers (:class:`VersionTooOld`)."""

    def build(version: int) -> dc_req.DescribeClusterRequest:
        if version < 1 and endpoint_type != ENDPOINT_TYPE_BROKER:
            raise VersionTooOld("DescribeCluster v0 cannot ask for controllers")
        return dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=endpoint_type)

    return build


def describe_quorum_request(version: int) -> dq_req.DescribeQuorumRequest:
    """DescribeQuorum for ``__cluster_metadata-0`` (the same at every version)."""
    return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name=METADATA_TOPIC, partitions=[dq_req.PartitionData(partition_index=METADATA_PARTITION)])])


# ---------------------------------------------------------------- what the cluster said


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A DescribeCluster answer: the cluster id, the leader (``controllerId``,
    -1 if none) and where each listed node is."""

    cluster_id: str
    controller_id: int
    nodes: dict[int, tuple[str, int]]

    @property
    def leader_address(self) -> tuple[str, int] | None:
        return self.nodes.get(self.controller_id) if self.controller_id >= 0 else None


def cluster_view(body: Any) -> ClusterView:
    """A successful DescribeCluster answer as the one cluster view (Kafka's
    ``KafkaAdminClient.describeCluster`` result: cluster id, controller, nodes)."""
    return ClusterView(body.cluster_id, body.controller_id, {b.broker_id: (b.host, b.port) for b in body.brokers})


def _optional_ms(value: int) -> int | None:
    return None if value == -1 else value


def _replica_info(state: Any) -> ReplicaInfo:
    return ReplicaInfo(state.replica_id, state.replica_directory_id, state.log_end_offset,
                       _optional_ms(state.last_fetch_timestamp), _optional_ms(state.last_caught_up_timestamp))


def quorum_info(body: Any) -> QuorumInfo:
    """The partition of a successful DescribeQuorum answer (Kafka's
    ``KafkaAdminClient.createQuorumResult``): the inverse of the node's
    encoding (``response_to_wire`` in :mod:`kraft.raft.rpcs.describe_quorum_rpc`)."""
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


def quorum_answer(body: Any) -> QuorumAnswer:
    """Read a DescribeQuorum response body (any version)."""
    partitions = body.topics[0].partitions if len(body.topics) == 1 else []
    if len(partitions) != 1:
        return QuorumAnswer(body.error_code, body.error_message, None, None, -1, None)
    partition = partitions[0]
    ok = body.error_code == ErrorCode.NONE and partition.error_code == ErrorCode.NONE
    return QuorumAnswer(body.error_code, body.error_message, partition.error_code, partition.error_message,
                        partition.leader_epoch, quorum_info(body) if ok else None)
