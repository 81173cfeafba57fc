"""The admin surface of the controller listener (kraft/node/admin_apis.py),
against real nodes over TCP: ApiVersions with features, DescribeQuorum v0-v2
on the leader and elsewhere, DescribeCluster for controllers and brokers,
Metadata for broker-only clients, Kafka's own request frames replayed, and
the leader's bookkeeping behind DescribeQuorum (observer expiry)."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.raft.leader_progress import OBSERVER_SESSION_TIMEOUT_MS, LeaderProgress
from kraft.raft.rpcs.describe_quorum_rpc import describe
from kraft.messages.generated import describe_cluster_request as dc_req
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.messages.generated import metadata_request as md_req
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.node.admin_apis import CLUSTER_AUTHORIZED_OPERATIONS
from kraft.node.controller_apis import replayed_api_versions
from kraft.node.node import SUPPORTED_APIS, KraftNode
from kraft.raft.voters import ReplicaKey, VoterSet
from kraft.wire.apis import ApiKey
from kraft.wire.not_controller_admin import ADMIN_NOT_CONTROLLER_APIS
from kraft.wire.network_client import PeerClient
from kraft.wire.codec import decode_response
from kraft.wire.errors import ErrorCode
from kraft.wire.framing import unframe
from tests.conftest import fixture_path
from tests.harness import inprocess
from tests.harness.configs import CLUSTER_ID, load, make_configs
from tests.harness.inprocess import InProcessCluster
from tests.wire.netutil import RawConnection

HOST = "127.0.0.1"
VOTERS = [1, 2, 3]
OBSERVER = 9
ZERO_UUID = uuid.UUID(int=0)


@pytest.fixture(scope="module")
def quorum_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    """Three voters and an observer, formatted once for the module; each
    test starts them afresh from these directories."""
    return make_configs(tmp_path_factory.mktemp("quorum"), VOTERS, observers=[OBSERVER])


def running(paths: dict[int, Path], *, with_observer: bool = True,
            advertised_apis: dict[int, tuple[int, int]] | None = None) -> AbstractAsyncContextManager[InProcessCluster]:
    """The voters (and the observer) running until DescribeQuorum has them all."""
    ids = [*VOTERS, OBSERVER] if with_observer else VOTERS
    return inprocess.running({i: paths[i] for i in ids}, VOTERS, observers=1 if with_observer else 0,
                             advertised_apis=advertised_apis)


def describe_quorum_request(topic: str = "__cluster_metadata", partition: int = 0) -> dq_req.DescribeQuorumRequest:
    return dq_req.DescribeQuorumRequest(topics=[dq_req.TopicData(
        topic_name=topic, partitions=[dq_req.PartitionData(partition_index=partition)])])


async def ask(port: int, api: ApiKey, body: Any, version: int) -> Any:
    """One request at exactly ``version`` over a real connection."""
    client = PeerClient(HOST, port, client_id="admin-test")
    try:
        got, response = await client.request(api, lambda v: body, max_version=version)
        assert got == version
        return response
    finally:
        await client.aclose()


# ---------------------------------------------------------------- DescribeQuorum


async def test_describe_quorum_on_the_leader_reports_every_voter_and_the_observer(
        quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs) as cluster:
        before = int(time.time() * 1000)
        r = await ask(cluster.port(cluster.leader_id), ApiKey.DESCRIBE_QUORUM, describe_quorum_request(), 2)
        after = int(time.time() * 1000)
        assert r.error_code == 0
        [topic] = r.topics
        assert topic.topic_name == "__cluster_metadata"
        [p] = topic.partitions
        assert (p.partition_index, p.error_code) == (0, 0)
        assert p.leader_id == cluster.leader_id
        assert p.leader_epoch == cluster.leader.raft_driver.core.epoch  # type: ignore[union-attr]
        assert p.high_watermark == cluster.leader.high_watermark
        assert [v.replica_id for v in p.current_voters] == VOTERS
        end = cluster.leader.log.end_offset  # type: ignore[union-attr]
        for v in p.current_voters:
            # Static voters (controller.quorum.voters) carry no directory id.
            assert v.replica_directory_id == ZERO_UUID
            assert 0 < v.log_end_offset <= end
            assert 0 < v.last_caught_up_timestamp <= v.last_fetch_timestamp <= after
        me = next(v for v in p.current_voters if v.replica_id == cluster.leader_id)
        # The leader reports itself as fetching and caught up right now.
        assert before <= me.last_fetch_timestamp == me.last_caught_up_timestamp <= after
        [obs] = p.observers
        assert obs.replica_id == OBSERVER
        assert obs.replica_directory_id == cluster.nodes[OBSERVER].directory_id
        assert obs.last_fetch_timestamp > 0
        # v2: the voters' listeners, none for the observer.
        assert [(n.node_id, [(l.name, l.host, l.port) for l in n.listeners]) for n in r.nodes] == [
            (i, [("CONTROLLER", HOST, cluster.port(i))]) for i in VOTERS]


async def test_describe_quorum_v0_and_v1_leave_out_what_they_cannot_carry(quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs) as cluster:
        port = cluster.port(cluster.leader_id)
        v0 = await ask(port, ApiKey.DESCRIBE_QUORUM, describe_quorum_request(), 0)
        v1 = await ask(port, ApiKey.DESCRIBE_QUORUM, describe_quorum_request(), 1)
        for r in (v0, v1):
            p = r.topics[0].partitions[0]
            assert p.leader_id == cluster.leader_id and p.error_code == 0
            assert [v.replica_id for v in p.current_voters] == VOTERS
            assert [o.replica_id for o in p.observers] == [OBSERVER]
            assert r.nodes == []
            assert all(s.replica_directory_id == ZERO_UUID for s in [*p.current_voters, *p.observers])
        # Timestamps exist from v1 (KIP-836); v0 decodes them as the default -1.
        assert all(v.last_fetch_timestamp == -1 for v in v0.topics[0].partitions[0].current_voters)
        assert all(v.last_fetch_timestamp > 0 for v in v1.topics[0].partitions[0].current_voters)


async def test_describe_quorum_on_a_follower_or_observer_is_not_leader_or_follower(
        quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs) as cluster:
        for node_id in (cluster.a_follower(), OBSERVER):
            r = await ask(cluster.port(node_id), ApiKey.DESCRIBE_QUORUM, describe_quorum_request(), 2)
            assert r.error_code == 0
            [p] = r.topics[0].partitions
            assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
            assert p.error_message.startswith("For requests intended only for the leader, this error indicates")
            assert p.current_voters == [] and p.observers == []
            # Beyond Kafka (which leaves them 0): where the leader is.
            assert p.leader_id == cluster.leader_id
            assert p.leader_epoch == cluster.leader.raft_driver.core.epoch  # type: ignore[union-attr]
            assert [(n.node_id, n.listeners[0].port) for n in r.nodes] == [
                (cluster.leader_id, cluster.port(cluster.leader_id))]


async def test_describe_quorum_for_another_partition_is_unknown_topic_or_partition(
        quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs, with_observer=False) as cluster:
        port = cluster.port(cluster.leader_id)
        for request in (describe_quorum_request("orders", 0), describe_quorum_request("__cluster_metadata", 1)):
            r = await ask(port, ApiKey.DESCRIBE_QUORUM, request, 2)
            expected_topic = request.topics[0].topic_name
            assert [(t.topic_name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
                (expected_topic, [(request.topics[0].partitions[0].partition_index,
                                   ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]


# ---------------------------------------------------------------- DescribeCluster, Metadata, ApiVersions


async def test_describe_cluster_for_controllers_lists_the_voters_and_names_the_leader(
        quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs, with_observer=False) as cluster:
        for node_id in VOTERS:  # any voter knows the leader
            for version in (1, 2):
                r = await ask(cluster.port(node_id), ApiKey.DESCRIBE_CLUSTER,
                              dc_req.DescribeClusterRequest(endpoint_type=2), version)
                assert (r.error_code, r.error_message) == (0, None)
                assert (r.endpoint_type, r.cluster_id, r.controller_id) == (2, CLUSTER_ID, cluster.leader_id)
                assert [(b.broker_id, b.host, b.port, b.rack) for b in r.brokers] == [
                    (i, HOST, cluster.port(i), None) for i in VOTERS]
                assert r.cluster_authorized_operations == -(2**31)  # not asked for


async def test_describe_cluster_for_brokers_and_metadata_present_the_leader_as_the_one_broker(
        quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs, with_observer=False) as cluster:
        port = cluster.port(cluster.a_follower())
        leader_row = [(cluster.leader_id, HOST, cluster.port(cluster.leader_id))]
        for version in (0, 1, 2):
            r = await ask(port, ApiKey.DESCRIBE_CLUSTER,
                          dc_req.DescribeClusterRequest(include_cluster_authorized_operations=True), version)
            assert r.error_code == 0 and r.cluster_id == CLUSTER_ID
            assert r.controller_id == cluster.leader_id
            assert [(b.broker_id, b.host, b.port) for b in r.brokers] == leader_row
            assert r.cluster_authorized_operations == CLUSTER_AUTHORIZED_OPERATIONS
        for version in (1, 9, 12, 13):
            r = await ask(port, ApiKey.METADATA, md_req.MetadataRequest(topics=None), version)
            assert [(b.node_id, b.host, b.port) for b in r.brokers] == leader_row
            # (ClusterId exists from v2 on.)
            assert (r.cluster_id, r.controller_id, r.topics) == (CLUSTER_ID if version >= 2 else None,
                                                                 cluster.leader_id, [])
        asked = md_req.MetadataRequest(topics=[md_req.MetadataRequestTopic(name="orders"),
                                               md_req.MetadataRequestTopic(name="__cluster_metadata")])
        r = await ask(port, ApiKey.METADATA, asked, 12)
        assert [(t.name, t.error_code, t.partitions) for t in r.topics] == [
            ("orders", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
            ("__cluster_metadata", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]


async def test_describe_cluster_with_an_unknown_endpoint_type_is_refused(quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs, with_observer=False) as cluster:
        r = await ask(cluster.port(cluster.leader_id), ApiKey.DESCRIBE_CLUSTER,
                      dc_req.DescribeClusterRequest(endpoint_type=3), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        assert r.error_message == "Unsupported endpoint type 3"
        assert (r.brokers, r.controller_id) == ([], -1)


async def test_api_versions_lists_the_admin_apis_and_kraft_version(quorum_dirs: dict[int, Path]) -> None:
    async with running(quorum_dirs, with_observer=False) as cluster:
        port = cluster.port(cluster.leader_id)
        request = ApiVersionsRequest(client_software_name="admin-test", client_software_version="1.0")
        v4 = await ask(port, ApiKey.API_VERSIONS, request, 4)
        apis = {k.api_key: (k.min_version, k.max_version) for k in v4.api_keys}
        assert apis == {int(k): r for k, r in SUPPORTED_APIS.items()}
        assert apis[ApiKey.DESCRIBE_QUORUM] == (0, 2) and apis[ApiKey.DESCRIBE_CLUSTER] == (0, 2)
        assert [(f.name, f.min_version, f.max_version) for f in v4.supported_features] == [("kraft.version", 0, 1)]
        # A static quorum is kraft.version 0, which Kafka does not list as finalized.
        assert (v4.finalized_features, v4.finalized_features_epoch) == ([], -1)
        # Before v4 a supported minimum of 0 is left out (Kafka's alterFeatureLevel0).
        v3 = await ask(port, ApiKey.API_VERSIONS, request, 3)
        assert v3.supported_features == [] and v3.api_keys == v4.api_keys


async def test_kcat_lists_the_leader_as_the_one_broker_and_no_topics(quorum_dirs: dict[int, Path]) -> None:
    """librdkafka's ``kcat -L`` (Metadata) gets a clean answer from any node."""
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (Debian package kcat; .ci/deps installs it)")
    async with running(quorum_dirs) as cluster:
        for node_id in (cluster.a_follower(), OBSERVER):
            with trio.fail_after(30):
                result = await trio.run_process([kcat, "-L", "-b", f"{HOST}:{cluster.port(node_id)}", "-m", "10"],
                                                capture_stdout=True, capture_stderr=True, check=False)
            out = result.stdout.decode()
            assert result.returncode == 0, result.stderr.decode()
            assert " 1 brokers:\n" in out and " 0 topics:" in out
            assert f"broker {cluster.leader_id} at {HOST}:{cluster.port(cluster.leader_id)}" in out


async def test_kafka_python_admin_client_gets_not_controller_for_create_delete_and_partitions(tmp_path: Path) -> None:
    """A Kafka admin client sent straight to a controller (KIP-919) that
    finds kraft as its controller: CreateTopics, DeleteTopics and
    CreatePartitions get NOT_CONTROLLER (kafka-python's
    ``_send_request_to_controller`` refreshes the controller and retries once,
    then gives up), not a closed connection. The nodes advertise what kraft
    advertises while it leads a hand-over epoch (the admin RPCs at a real
    Kafka 4.0 controller's versions), so the client sends them; with
    ``kraft.witness=false``, as the nodes would otherwise take each other for
    Kafka controllers (kraft/raft/witness_policy.py) and none would lead."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewPartitions, NewTopic

    kafka = replayed_api_versions(_real_controller_api_versions())
    handover = {int(k): r for k, r in SUPPORTED_APIS.items()} | {k: kafka[k] for k in ADMIN_NOT_CONTROLLER_APIS}
    paths = make_configs(tmp_path, VOTERS, extra={"kraft.witness": "false"})
    async with running(paths, with_observer=False, advertised_apis=handover) as cluster:
        port = cluster.port(cluster.leader_id)
        served: list[str] = []

        def use_the_admin_client() -> None:
            admin = KafkaAdminClient(bootstrap_servers=f"{HOST}:{port}", request_timeout_ms=10_000)
            try:
                for call in (lambda: admin.create_topics([NewTopic("orders", 3, 1)]),
                             lambda: admin.delete_topics(["orders"]),
                             lambda: admin.create_partitions({"orders": NewPartitions(6)})):
                    with pytest.raises(RuntimeError, match="active controller"):
                        call()
                    served.append("NOT_CONTROLLER")
            finally:
                admin.close()

        await trio.to_thread.run_sync(use_the_admin_client, abandon_on_cancel=True)
        assert served == ["NOT_CONTROLLER"] * 3


def _real_controller_api_versions() -> str:
    path = fixture_path("wire", "kafka-4.0-controller-frames.jsonl")
    for line in path.read_text().splitlines():
        frame = json.loads(line)
        if frame["direction"] == "response" and frame["apiKey"] == ApiKey.API_VERSIONS:
            return str(frame["frameHex"])
    raise AssertionError(f"no ApiVersions response in {path}")


# ---------------------------------------------------------------- Kafka's own frames


def _golden(api: str, direction: str) -> dict[str, Any]:
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return next(f for f in frames if f["api"] == api and f["direction"] == direction)


def _fields(kafka_json: Any) -> Any:
    """The field names of a Kafka JSON form, nested (the response's shape)."""
    if isinstance(kafka_json, dict):
        return {k: _fields(v) for k, v in kafka_json.items()}
    if isinstance(kafka_json, list):
        return [_fields(kafka_json[0])] if kafka_json else []
    return None


async def test_kafkas_own_admin_frames_get_answers_shaped_like_kafkas(quorum_dirs: dict[int, Path]) -> None:
    """kafka-metadata-quorum.sh's ApiVersions v4, DescribeCluster v1 and
    DescribeQuorum v2 request frames, byte for byte, against a live node:
    the answers decode, carry the request's correlation id, and have the
    shape of the answers Kafka's own quorum gave."""
    from kraft.messages.json_form import to_json

    async with running(quorum_dirs) as cluster:
        conn = await RawConnection.open(cluster.port(cluster.a_follower()))
        try:
            answers = {}
            for api in ("API_VERSIONS", "DESCRIBE_CLUSTER"):
                request = _golden(api, "request")
                await conn.send(bytes.fromhex(request["frameHex"]))
                answers[api] = decode_response(await conn.read_frame(), request["apiKey"], request["apiVersion"])
                assert answers[api].header.correlation_id == request["kafkaDecoded"]["header"]["correlationId"]
        finally:
            await conn.aclose()
        api_versions = {k.api_key: k.max_version for k in answers["API_VERSIONS"].body.api_keys}
        assert api_versions[ApiKey.DESCRIBE_CLUSTER] >= 1 and api_versions[ApiKey.DESCRIBE_QUORUM] >= 2
        described = answers["DESCRIBE_CLUSTER"].body
        kafka = _golden("DESCRIBE_CLUSTER", "response")["kafkaDecoded"]["body"]
        ours = to_json(described, 1)
        assert _fields(ours) == _fields(kafka)
        assert (ours["endpointType"], ours["clusterId"], ours["errorCode"]) == (2, kafka["clusterId"], 0)
        assert ours["controllerId"] == cluster.leader_id
        assert len(ours["brokers"]) == len(kafka["brokers"]) == 3

        # The tool then sends DescribeQuorum to the controllerId it learned.
        conn = await RawConnection.open(cluster.port(described.controller_id))
        try:
            request = _golden("DESCRIBE_QUORUM", "request")
            await conn.send(bytes.fromhex(request["frameHex"]))
            answer = decode_response(await conn.read_frame(), 55, 2)
        finally:
            await conn.aclose()
        assert answer.header.correlation_id == request["kafkaDecoded"]["header"]["correlationId"]
        kafka = _golden("DESCRIBE_QUORUM", "response")["kafkaDecoded"]["body"]
        ours = to_json(answer.body, 2)
        # Kafka's quorum had no observer; ours has one: compare the rest.
        kafka_shape, our_shape = _fields(kafka), _fields(ours)
        our_shape["topics"][0]["partitions"][0]["observers"] = []
        assert our_shape == kafka_shape
        assert ours["errorMessage"] == kafka["errorMessage"] == ""
        kp, op = kafka["topics"][0]["partitions"][0], ours["topics"][0]["partitions"][0]
        assert (op["errorCode"], op["leaderId"]) == (0, cluster.leader_id)
        assert [v["replicaId"] for v in op["currentVoters"]] == [v["replicaId"] for v in kp["currentVoters"]]
        assert [v["replicaDirectoryId"] for v in op["currentVoters"]] == [
            v["replicaDirectoryId"] for v in kp["currentVoters"]]  # static voters: the zero uuid
        assert [n["listeners"][0]["name"] for n in ours["nodes"]] == ["CONTROLLER"] * 3


async def test_kafkas_vote_from_another_cluster_is_inconsistent_cluster_id(tmp_path: Path) -> None:
    """Kafka's own Vote frame (cluster MkU3OEVBNTcwNTJENDM2Qk) at a node of
    another cluster: INCONSISTENT_CLUSTER_ID, and the connection stays up."""
    request = _golden("VOTE", "request")
    paths = make_configs(tmp_path, [1], cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            node = KraftNode(load(paths[1]))
            await nursery.start(node.run)
            conn = await RawConnection.open(node.ports["CONTROLLER"])
            try:
                await conn.send(bytes.fromhex(request["frameHex"]))
                answer = decode_response(await conn.read_frame(), 52, request["apiVersion"])
                assert answer.body.error_code == ErrorCode.INCONSISTENT_CLUSTER_ID
                await conn.send(bytes.fromhex(_golden("DESCRIBE_CLUSTER", "request")["frameHex"]))
                described = decode_response(await conn.read_frame(), 60, 1).body
                assert described.cluster_id == "AAAAAAAAAAAAAAAAAAAAAA"
            finally:
                await conn.aclose()
            nursery.cancel_scope.cancel()


def test_golden_describe_quorum_response_frame_is_what_our_codec_writes() -> None:
    """Kafka's DescribeQuorum v2 answer re-encodes byte for byte (so our
    answers are read by Kafka's admin client the way it reads its own)."""
    from kraft.wire.codec import encode_response

    frame = _golden("DESCRIBE_QUORUM", "response")
    raw = bytes.fromhex(frame["frameHex"])
    decoded = decode_response(unframe(raw), 55, 2)
    assert b"".join(encode_response(decoded.body, 2, decoded.header.correlation_id)) == raw


# ---------------------------------------------------------------- the leader's bookkeeping


def test_an_observer_that_stops_fetching_ages_out_after_kafkas_session_timeout() -> None:
    """LeaderState.OBSERVER_SESSION_TIMEOUT_MS: an observer is described
    until 300 s after its last fetch; the voters always are."""
    t0 = 1_700_000_000_000
    progress = LeaderProgress(ReplicaKey(1), 0, VoterSet.from_ids([1, 2, 3]), t0, 3000, 1000)
    progress.update_local_end_offset(10)
    observer = ReplicaKey(9, uuid.uuid4())
    progress.update_replica(observer, t0, 10)
    assert OBSERVER_SESSION_TIMEOUT_MS == 300_000
    seen = describe(progress, t0 + OBSERVER_SESSION_TIMEOUT_MS - 1, 5, VoterSet.from_ids([1, 2, 3]))
    assert [(o.key, o.log_end_offset, o.last_fetch_ms, o.last_caught_up_ms) for o in seen.observers] == [
        ((observer.id, observer.directory_id), 10, t0, t0)]
    gone = describe(progress, t0 + OBSERVER_SESSION_TIMEOUT_MS, 5, VoterSet.from_ids([1, 2, 3]))
    assert gone.observers == ()
    assert [v.replica_id for v in gone.voters] == [1, 2, 3]
    # Voters that never fetched: unknown offset and times (-1 on the wire,
    # None in the model); the leader: now.
    assert [(v.log_end_offset, v.last_fetch_ms, v.last_caught_up_ms) for v in gone.voters[1:]] == [
        (-1, None, None), (-1, None, None)]
    assert gone.voters[0].last_fetch_ms == gone.voters[0].last_caught_up_ms == t0 + OBSERVER_SESSION_TIMEOUT_MS
    # Describing changed nothing: a fetch brings the observer back with its history.
    progress.update_replica(observer, t0 + OBSERVER_SESSION_TIMEOUT_MS + 5, 10)
    back = describe(progress, t0 + OBSERVER_SESSION_TIMEOUT_MS + 5, 5, VoterSet.from_ids([1, 2, 3]))
    assert [o.key for o in back.observers] == [(observer.id, observer.directory_id)]
    assert back.high_watermark == -1  # no voter has reached past the epoch start yet
