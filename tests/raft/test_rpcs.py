"""One module per raft RPC (kraft/raft/rpcs/): each holds its versions, its
wire mapping both ways, its error answer, its timeouts and source rule, and
the registry is built from them alone.

Every event goes to the wire and back through the generated codec at every
version the module declares (Kafka's ``RaftUtil`` builds the same messages:
``singletonVoteRequest``, ``singletonFetchRequest``, ...), so a field added to
one RPC and forgotten in one direction fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest

from kraft.messages.generated import api_versions_response
from kraft.messages.registry import request_class, response_class
from kraft.node.controller_apis import SUPPORTED_APIS
from kraft.raft import events as ev
from kraft.raft import rpcs
from kraft.raft.errors import Errors
from kraft.raft.rpcs import BY_API_KEY, BY_REQUEST, BY_RESPONSE, CORE_API_KEYS, RPCS, RaftRpc, RegisteredRpc
from kraft.raft.rpcs.rpc_unit import Reject
from kraft.raft.voters import Endpoint, ReplicaKey
from kraft.records.view import OffsetAndEpoch
from kraft.wire.apis import ApiKey

DIR = uuid.UUID(int=7)
LISTENER = "CONTROLLER"
ENDPOINTS = (Endpoint(LISTENER, "127.0.0.1", 9093),)
RPC_DIR = Path(__file__).resolve().parents[2] / "kraft" / "raft" / "rpcs"

#: One request and one response of each RPC, with every field the newest
#: version carries set away from its default.
SAMPLES: dict[ApiKey, tuple[Any, Any]] = {
    ApiKey.VOTE: (
        rpcs.VoteRequest(cluster_id="c", voter_key=ReplicaKey(2, DIR), candidate_epoch=5,
                       candidate_key=ReplicaKey(1, DIR), last_offset_epoch=4, last_offset=10, pre_vote=True),
        rpcs.VoteResponse(partition_error=Errors.FENCED_LEADER_EPOCH, leader_id=3, leader_epoch=6,
                        leader_endpoints=ENDPOINTS, vote_granted=True),
    ),
    ApiKey.BEGIN_QUORUM_EPOCH: (
        rpcs.BeginQuorumEpochRequest(cluster_id="c", voter_key=ReplicaKey(2, DIR), leader_id=1, leader_epoch=5,
                                   leader_endpoints=ENDPOINTS),
        rpcs.BeginQuorumEpochResponse(leader_id=1, leader_epoch=5, leader_endpoints=ENDPOINTS),
    ),
    ApiKey.END_QUORUM_EPOCH: (
        rpcs.EndQuorumEpochRequest(cluster_id="c", leader_id=1, leader_epoch=5,
                                 preferred_candidates=(ReplicaKey(2, DIR), ReplicaKey(3, DIR)),
                                 leader_endpoints=ENDPOINTS),
        rpcs.EndQuorumEpochResponse(partition_error=Errors.NOT_LEADER_OR_FOLLOWER, leader_id=1, leader_epoch=5,
                                  leader_endpoints=ENDPOINTS),
    ),
    ApiKey.FETCH: (
        rpcs.FetchRequest(cluster_id="c", replica_key=ReplicaKey(2, DIR), current_leader_epoch=5, fetch_offset=10,
                        last_fetched_epoch=4, max_wait_ms=500, max_bytes=1024, high_watermark=8),
        rpcs.FetchResponse(high_watermark=9, log_start_offset=1, records=b"abc",
                         diverging_epoch=OffsetAndEpoch(7, 3), snapshot_id=OffsetAndEpoch(5, 2),
                         leader_id=1, leader_epoch=5, leader_endpoints=ENDPOINTS),
    ),
    ApiKey.FETCH_SNAPSHOT: (
        rpcs.FetchSnapshotRequest(cluster_id="c", replica_key=ReplicaKey(2, DIR), current_leader_epoch=5,
                                snapshot_id=OffsetAndEpoch(100, 4), position=64, max_bytes=4096),
        rpcs.FetchSnapshotResponse(snapshot_id=OffsetAndEpoch(100, 4), size=512, position=64,
                                 unaligned_records=b"xyz", leader_id=1, leader_epoch=5, leader_endpoints=ENDPOINTS),
    ),
    ApiKey.ADD_RAFT_VOTER: (
        rpcs.AddRaftVoterRequest(cluster_id="c", timeout_ms=3000, voter_key=ReplicaKey(4, DIR), listeners=ENDPOINTS,
                               ack_when_committed=False),
        rpcs.AddRaftVoterResponse(error=Errors.DUPLICATE_VOTER, error_message="already a voter"),
    ),
    ApiKey.REMOVE_RAFT_VOTER: (
        rpcs.RemoveRaftVoterRequest(cluster_id="c", voter_key=ReplicaKey(4, DIR)),
        rpcs.RemoveRaftVoterResponse(error=Errors.VOTER_NOT_FOUND, error_message="not a voter"),
    ),
    ApiKey.UPDATE_RAFT_VOTER: (
        rpcs.UpdateRaftVoterRequest(cluster_id="c", current_leader_epoch=5, voter_key=ReplicaKey(2, DIR),
                                  listeners=ENDPOINTS, supported_kraft_versions=(0, 1)),
        rpcs.UpdateRaftVoterResponse(leader_id=1, leader_epoch=5, leader_endpoints=ENDPOINTS),
    ),
}


#: What an older version cannot carry (the sender never asks it to: a
#: pre-vote needs Vote v2, KIP-996; AddRaftVoter v0 always waits for the
#: commit).
OLDER: dict[ApiKey, tuple[int, dict[str, Any]]] = {
    ApiKey.VOTE: (2, {"pre_vote": False}),
    ApiKey.ADD_RAFT_VOTER: (1, {"ack_when_committed": True}),
    # Fetch before v12 (a broker's, not a replica's) has no last fetched
    # epoch, before v9 no current leader epoch.
    ApiKey.FETCH: (12, {"last_fetched_epoch": -1, "current_leader_epoch": -1}),
}


def _through_codec(cls: Any, message: Any, version: int) -> Any:
    return cls.decode(message.encode(version), version)


def test_the_registry_is_built_from_one_module_per_rpc() -> None:
    # DescribeQuorum is the node's to answer (the core only describes):
    # its module holds its versions and wire mapping, no RaftRpc.
    modules = sorted(p.stem for p in RPC_DIR.glob("*_rpc.py") if p.stem != "describe_quorum_rpc")
    assert len(modules) == len(RPCS)
    for name in modules:
        module = importlib.import_module(f"kraft.raft.rpcs.{name}")
        rpc = module.RPC
        assert isinstance(rpc, RaftRpc) and rpc in RPCS
        # Everything the RPC does is written in its own module: its message
        # classes, wire mapping and handlers (which call their family's shared
        # steps in kraft.raft.families).
        assert rpc.request_type.__module__ == rpc.response_type.__module__ == module.__name__, name
        for field in dataclasses.fields(rpc):
            value = getattr(rpc, field.name)
            if callable(value) and hasattr(value, "__module__") and not isinstance(value, type):
                assert value.__module__ in (module.__name__, "kraft.raft.rpcs.rpc_unit"), (name, field.name)
        # Every RPC the core answers has its handler here.
        assert (rpc.handle_request is not None) == rpc.to_core, name


def _leaf_subclasses(base: type) -> set[type]:
    """The message classes under ``base``, as their modules define them
    (``dataclass(slots=True)`` leaves the class it replaced behind)."""
    found = set()
    for sub in base.__subclasses__():
        if getattr(importlib.import_module(sub.__module__), sub.__name__, None) is not sub:
            continue
        found |= _leaf_subclasses(sub) if sub.__subclasses__() else {sub}
    return found


def test_every_event_type_has_one_rpc() -> None:
    assert set(BY_REQUEST) == _leaf_subclasses(ev.RaftRequest)
    assert set(BY_RESPONSE) == _leaf_subclasses(ev.RaftResponse)
    assert len(BY_API_KEY) == len(RPCS)


def test_no_rpc_is_listed_outside_its_module() -> None:
    # The translation ladders and tables are gone: the node's modules name
    # no event type of a raft RPC to translate it.
    node = Path(__file__).resolve().parents[2] / "kraft" / "node"
    for path in (node / "controller_apis.py", node / "raft_metrics.py"):
        tree = ast.parse(path.read_text())
        named = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not named & {t.__name__ for t in (*BY_REQUEST, *BY_RESPONSE)}, path


def test_the_node_advertises_the_versions_the_modules_declare() -> None:
    for rpc in RPCS:
        if rpc.to_core:
            assert SUPPORTED_APIS[rpc.api_key] == rpc.versions
    assert CORE_API_KEYS == {rpc.api_key for rpc in RPCS} - {ApiKey.API_VERSIONS}


@pytest.mark.parametrize("api_key", list(SAMPLES), ids=lambda k: ApiKey(k).name)
def test_requests_round_trip_at_every_version(api_key: ApiKey) -> None:
    rpc = BY_API_KEY[api_key]
    request, _ = SAMPLES[api_key]
    low, high = rpc.versions
    newest = rpc.read_request(high, _through_codec(request_class(api_key), rpc.write_request(
        request, high, ()), high))
    assert newest == request
    for version in range(low, high + 1):
        since, defaults = OLDER.get(api_key, (low, {}))
        if version < since:
            request = dataclasses.replace(request, **defaults)
        wire = _through_codec(request_class(api_key), rpc.write_request(request, version, ENDPOINTS), version)
        back = rpc.read_request(version, wire)
        assert type(back) is type(request)
        assert rpc.request_source(back) == rpc.request_source(request)


@pytest.mark.parametrize("api_key", list(SAMPLES), ids=lambda k: ApiKey(k).name)
def test_responses_round_trip_at_the_newest_version(api_key: ApiKey) -> None:
    rpc = BY_API_KEY[api_key]
    _, response = SAMPLES[api_key]
    version = rpc.versions[1]
    wire = _through_codec(response_class(api_key), rpc.write_response(response, version, LISTENER), version)
    assert rpc.read_response(version, wire, LISTENER) == response


@pytest.mark.parametrize("rpc", [r for r in RPCS if r.to_core], ids=lambda r: r.metrics_name)
def test_error_answers_and_their_metrics_tag(rpc: RegisteredRpc) -> None:
    top = rpc.error_response(Errors.INCONSISTENT_CLUSTER_ID, False)
    assert type(top) is rpc.response_type
    assert top.error is Errors.INCONSISTENT_CLUSTER_ID
    assert rpc.error_tag(top) == "INCONSISTENT_CLUSTER_ID"
    if hasattr(top, "partition_error"):
        part = rpc.error_response(Errors.UNKNOWN_TOPIC_OR_PARTITION, True)
        assert (part.error, part.partition_error) == (Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION)
        assert rpc.error_tag(part) == "UNKNOWN_TOPIC_OR_PARTITION"


def test_wait_times() -> None:
    # The inbound side waits request.timeout.ms for the core, plus a Fetch's
    # long poll; a voter change is admitted first, then answered within
    # request.timeout.ms (Kafka's handler timer).
    fetch, _ = SAMPLES[ApiKey.FETCH]
    assert BY_API_KEY[ApiKey.FETCH].answer_wait(fetch, 2000) == 2500
    assert BY_API_KEY[ApiKey.FETCH].send_timeout(fetch, 2000) == 2500
    vote, _ = SAMPLES[ApiKey.VOTE]
    assert BY_API_KEY[ApiKey.VOTE].answer_wait(vote, 2000) == 2000
    add, _ = SAMPLES[ApiKey.ADD_RAFT_VOTER]
    assert BY_API_KEY[ApiKey.ADD_RAFT_VOTER].answer_wait(add, 2000) == 5000
    assert BY_API_KEY[ApiKey.ADD_RAFT_VOTER].request_source(add) == -1


def test_a_request_for_another_partition_is_rejected_as_kafka_does() -> None:
    # KafkaRaftClient: INVALID_REQUEST for a quorum RPC ("until we support
    # multi-raft"), UNKNOWN_TOPIC_OR_PARTITION on a FetchSnapshot's partition.
    vote = BY_API_KEY[ApiKey.VOTE]
    wire = vote.write_request(SAMPLES[ApiKey.VOTE][0], 2, ())
    wire.topics[0].topic_name = "other"  # type: ignore[attr-defined]
    with pytest.raises(Reject) as refused:
        vote.read_request(2, wire)
    assert (refused.value.error, refused.value.partition_level) == (Errors.INVALID_REQUEST, False)
    snapshot = BY_API_KEY[ApiKey.FETCH_SNAPSHOT]
    wire = snapshot.write_request(SAMPLES[ApiKey.FETCH_SNAPSHOT][0], 1, ())
    wire.topics[0].partitions[0].partition = 3  # type: ignore[attr-defined]
    with pytest.raises(Reject) as refused:
        snapshot.read_request(1, wire)
    assert (refused.value.error, refused.value.partition_level) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, True)


def test_api_versions_answer_gives_the_kraft_version_range() -> None:
    rpc = BY_API_KEY[ApiKey.API_VERSIONS]
    body = api_versions_response.ApiVersionsResponse(supported_features=[
        api_versions_response.SupportedFeatureKey(name="kraft.version", min_version=0, max_version=1)])
    assert rpc.read_response(4, body, LISTENER) == rpcs.ApiVersionsResponse(supported_kraft_versions=(0, 1))


def test_the_registry_checks_each_call_against_the_rpcs_own_types() -> None:
    # The registry holds every RPC on the base event types (RegisteredRpc);
    # a request, response or wire message of another RPC is refused at the
    # door rather than mapped field by field into the wrong message.
    vote = BY_API_KEY[ApiKey.VOTE]
    fetch_request, fetch_response = SAMPLES[ApiKey.FETCH]
    with pytest.raises(TypeError, match="not a VoteRequest"):
        vote.write_request(fetch_request, 2)
    with pytest.raises(TypeError, match="not a VoteResponse"):
        vote.write_response(fetch_response, 2, LISTENER)
    with pytest.raises(TypeError, match="not a VoteRequest"):
        vote.answer_wait(fetch_request, 2000)
    with pytest.raises(TypeError, match="not a VoteRequest"):
        vote.read_request(2, BY_API_KEY[ApiKey.FETCH].write_request(fetch_request, 18))
    with pytest.raises(TypeError, match="not a VoteResponse"):
        vote.read_response(2, BY_API_KEY[ApiKey.FETCH].write_response(fetch_response, 18, LISTENER))


def test_a_response_of_the_wrong_shape_is_a_top_level_error() -> None:
    # A Vote answer without its one partition: INVALID_REQUEST at the top
    # (KafkaRaftClient treats it as an error answer, not a vote).
    body = BY_API_KEY[ApiKey.VOTE].write_response(SAMPLES[ApiKey.VOTE][1], 2, LISTENER)
    body.topics = []  # type: ignore[attr-defined]
    assert BY_API_KEY[ApiKey.VOTE].read_response(2, body) == rpcs.VoteResponse(error=Errors.INVALID_REQUEST)
