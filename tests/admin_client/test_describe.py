"""DescribeQuorum and DescribeCluster read once (DescribeQuorum's unit,
:mod:`kraft.raft.rpcs.describe_quorum_rpc`, and :mod:`kraft.controller.describe_cluster_rpc`):
each kind of answer a node gives, after a round trip through the wire codec,
as the admin session, the observer, ``kraft doctor`` and the witness probe
see it. Kafka's ``KafkaAdminClient.createQuorumResult`` reads the same
fields (the leader's view only when both error codes are NONE)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraft.controller.describe_cluster_rpc import (
    ENDPOINT_TYPE_BROKER,
    ENDPOINT_TYPE_CONTROLLER,
    VersionTooOld,
    cluster_view,
    describe_cluster_request,
)
from kraft.raft.rpcs.describe_quorum_rpc import quorum_answer
from kraft.raft.rpcs.describe_quorum_rpc import request as describe_quorum_request
from kraft.messages.generated import describe_cluster_response as dc
from kraft.messages.generated import describe_quorum_response as dq
from kraft.wire.errors import ErrorCode

NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


def _round_trip(body: Any, version: int = 2) -> Any:
    return type(body).decode(body.encode(version), version=version)


def _quorum(error_code: int = 0, partition_error: int = 0, message: str | None = None,
            partitions: int = 1) -> Any:
    voter = dq.ReplicaState(replica_id=1, replica_directory_id=uuid.UUID(int=7), log_end_offset=10,
                            last_fetch_timestamp=5, last_caught_up_timestamp=-1)
    partition = dq.PartitionData(error_code=partition_error, error_message=message, leader_id=1, leader_epoch=4,
                                 high_watermark=9, current_voters=[voter], observers=[])
    return _round_trip(dq.DescribeQuorumResponse(
        error_code=error_code, error_message=None,
        topics=[dq.TopicData(topic_name="__cluster_metadata", partitions=[partition] * partitions)],
        nodes=[dq.Node(node_id=1, listeners=[dq.Listener(name="CONTROLLER", host="h", port=9093)])]))


def test_the_leaders_answer_is_the_quorum() -> None:
    answer = quorum_answer(_quorum())
    assert (answer.error_code, answer.partition_error_code, answer.leader_epoch) == (0, 0, 4)
    assert answer.info is not None
    assert (answer.info.leader_id, answer.info.high_watermark) == (1, 9)
    assert answer.info.voters[0].last_fetch_ms == 5 and answer.info.voters[0].last_caught_up_ms is None
    assert answer.info.nodes == {1: (("CONTROLLER", "h", 9093),)}


def test_a_non_leader_answers_its_epoch_and_note() -> None:
    answer = quorum_answer(_quorum(partition_error=NOT_LEADER, message="... (kraft witness: why)"))
    assert answer.info is None
    assert (answer.partition_error_code, answer.leader_epoch) == (NOT_LEADER, 4)
    assert answer.partition_error_message == "... (kraft witness: why)"


@pytest.mark.parametrize("error_code,partitions,expected_partition_error", [
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 1, 0),  # the answer's own error: no view, the partition still read
    (0, 0, None),  # no partition described
    (0, 2, None),  # more than one
])
def test_no_view_without_exactly_one_good_partition(error_code: int, partitions: int,
                                                   expected_partition_error: int | None) -> None:
    answer = quorum_answer(_quorum(error_code=error_code, partitions=partitions))
    assert answer.info is None
    assert answer.error_code == error_code
    assert answer.partition_error_code == expected_partition_error


def test_requests() -> None:
    request = describe_quorum_request(0)
    assert [(t.topic_name, [p.partition_index for p in t.partitions]) for t in request.topics] == [
        ("__cluster_metadata", [0])]
    assert describe_cluster_request(ENDPOINT_TYPE_CONTROLLER)(1).endpoint_type == ENDPOINT_TYPE_CONTROLLER
    assert describe_cluster_request(ENDPOINT_TYPE_BROKER)(0).endpoint_type == ENDPOINT_TYPE_BROKER
    with pytest.raises(VersionTooOld):
        describe_cluster_request(ENDPOINT_TYPE_CONTROLLER)(0)  # v0 cannot ask for controllers


def test_cluster_view() -> None:
    body = _round_trip(dc.DescribeClusterResponse(
        cluster_id="c", controller_id=2, endpoint_type=ENDPOINT_TYPE_CONTROLLER,
        brokers=[dc.DescribeClusterBroker(broker_id=2, host="h", port=1)]), version=1)
    view = cluster_view(body)
    assert (view.cluster_id, view.controller_id, view.leader_address) == ("c", 2, ("h", 1))
    assert cluster_view(_round_trip(dc.DescribeClusterResponse(cluster_id="c", controller_id=-1),
                                    version=1)).leader_address is None
