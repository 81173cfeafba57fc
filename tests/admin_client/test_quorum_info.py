"""One DescribeQuorum model (issue 13): what the raft core's leader
describes (``RaftCore.describe_quorum``, Kafka's ``LeaderState.describeQuorum``)
is, after the node's encoding (:func:`kraft.raft.rpcs.describe_quorum_rpc.response_to_wire`)
and the admin client's decoding (:func:`kraft.raft.rpcs.describe_quorum_rpc.quorum_info`,
Kafka's ``KafkaAdminClient.createQuorumResult``) of the real bytes, the same
:class:`~kraft.raft.rpcs.describe_quorum_rpc.QuorumInfo` -- no field lost or changed on
the way, in a static and in a dynamic (KIP-853) quorum."""

from __future__ import annotations

import dataclasses

import pytest

from kraft.admin_client import admin as client_admin
from kraft.admin_client.admin import quorum_info
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.raft.rpcs.describe_quorum_rpc import ZERO_UUID, QuorumInfo, ReplicaInfo, response_to_wire
from kraft.raft.roles import LeaderAndEpoch
from kraft.wire.apis import ApiKey
from kraft.wire.codec import decode_response, encode_response
from kraft.wire.framing import unframe
from tests.harness.raft_context import RaftTestContext

OBSERVER = 9


def _request() -> dq_req.DescribeQuorumRequest:
    return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name="__cluster_metadata", partitions=[dq_req.PartitionData(partition_index=0)])])


def _leader(dynamic: bool) -> RaftTestContext:
    """Replica 1 leads voters 1-3: voter 2 and an observer fetched, voter 3
    never did (its offset and times unknown)."""
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3], dynamic=dynamic).start()
    ctx.elect_local()
    ctx.advance(7)
    ctx.catch_up(2)
    ctx.append(b"a", b"b")
    ctx.advance(11)
    ctx.catch_up(OBSERVER)
    ctx.advance(5)
    return ctx


def _through_the_wire(ctx: RaftTestContext, described: QuorumInfo, version: int) -> QuorumInfo:
    body = response_to_wire(version, _request(), described,
                                    LeaderAndEpoch(ctx.local_id, ctx.epoch), ctx.raft.voters)
    raw = b"".join(encode_response(body, version, 17))
    decoded = decode_response(unframe(raw), ApiKey.DESCRIBE_QUORUM, version)
    return quorum_info(decoded.body)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_leaders_description_survives_the_wire_as_the_same_model(dynamic: bool) -> None:
    ctx = _leader(dynamic)
    described = ctx.raft.describe_quorum(ctx.now_ms)
    assert described is not None
    # The scenario covers every kind of value the model holds.
    assert [v.replica_id for v in described.voters] == [1, 2, 3]
    assert [o.replica_id for o in described.observers] == [OBSERVER]
    never = described.voter(3)
    assert never is not None and (never.log_end_offset, never.last_fetch_ms, never.last_caught_up_ms) == (
        -1, None, None)
    assert described.high_watermark > 0 and described.now_ms == ctx.now_ms
    if dynamic:
        assert all(r.directory_id == ctx.directory_id(r.replica_id) for r in described.voters + described.observers)
        assert described.nodes == {i: (("CONTROLLER", f"node-{i}", 9093),) for i in (1, 2, 3)}
    else:
        assert all(r.directory_id == ZERO_UUID for r in described.voters + described.observers)

    decoded = _through_the_wire(ctx, described, 2)
    # The wire carries no "now": a client stamps its own receive time.
    assert decoded.now_ms == 0
    assert dataclasses.replace(decoded, now_ms=described.now_ms) == described


def test_v1_loses_only_the_directory_ids_and_the_listeners_and_v0_the_times_too() -> None:
    """DescribeQuorum v1 has no directory id and no nodes (v2 fields): the
    client reads the zero uuid and no listeners; v0 has no timestamps either
    (v1 fields): the client reads -1, None in the model. The rest as described."""
    ctx = _leader(dynamic=True)
    described = ctx.raft.describe_quorum(ctx.now_ms)
    assert described is not None

    def as_v1(r: ReplicaInfo) -> ReplicaInfo:
        return dataclasses.replace(r, directory_id=ZERO_UUID)

    def as_v0(r: ReplicaInfo) -> ReplicaInfo:
        return dataclasses.replace(r, directory_id=ZERO_UUID, last_fetch_ms=None, last_caught_up_ms=None)

    for version, lose in ((1, as_v1), (0, as_v0)):
        expected = dataclasses.replace(described, voters=tuple(map(lose, described.voters)),
                                       observers=tuple(map(lose, described.observers)), nodes={}, now_ms=0)
        assert _through_the_wire(ctx, described, version) == expected, f"v{version}"


def test_the_client_models_are_the_raft_layers() -> None:
    """One model, two import paths: the admin client re-exports it."""
    assert client_admin.QuorumInfo is QuorumInfo and client_admin.ReplicaInfo is ReplicaInfo
