"""The observer against real nodes in one trio run (real files, real sockets
on 127.0.0.1): discovery as kafka-metadata-quorum.sh does it, the image,
the change stream, resuming from the local copy, snapshot catch-up, and the
ways it refuses to start."""

from __future__ import annotations

import copy
import time
import uuid
from pathlib import Path

import pytest
import trio

from kraft.image.changes import Change, SnapshotChange
from kraft.messages.generated import describe_quorum_request as dq_req
from kraft.node.node import KraftNode
from kraft.programs.observer import (
    ClusterIdMismatch,
    DiscoveryError,
    Observer,
    ObserverError,
    discover,
    open_observer,
    prepare_data_dir,
)
from kraft.node.snapshots import SnapshotPolicy, run_record_history_snapshots
from kraft.records.log import metadata_partition_dir
from kraft.records.state_files import MetaProperties
from kraft.image.metadata_source import image_from_directory
from kraft.wire.apis import ApiKey
from tests.harness.configs import CLUSTER_ID, fast_configs
from tests.harness.inprocess import append_until_ok, leader_of, node_config, peer, start
from tests.harness.poll import until_async
from tests.image.records import partition, rec, topic
from tests.ports import free_ports


def _topic_records(name: str, partitions: int = 2) -> list[bytes]:
    topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    return [topic(name, topic_id)] + [partition(topic_id, p, [1, 2, 3]) for p in range(partitions)]


async def _cluster(nursery: trio.Nursery, tmp_path: Path, extra: dict[str, str] | None = None) -> list[KraftNode]:
    paths = fast_configs(tmp_path, [1, 2, 3], extra=extra)
    return [await start(nursery, node_config(p)) for p in paths.values()]


def _bootstrap(node: KraftNode) -> str:
    return f"127.0.0.1:{node.ports['CONTROLLER']}"


async def test_discovery_finds_the_voters_and_refusals_happen_before_any_file_is_written(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path)
            leader = await leader_of(nodes)
            await leader.append(_topic_records("foo"))
            follower = next(n for n in nodes if n is not leader)
            view = await discover([("127.0.0.1", follower.ports["CONTROLLER"])])
            # DescribeCluster named the leader; DescribeQuorum was asked there.
            assert view.cluster_id == CLUSTER_ID and view.leader_id == leader.config.node_id
            assert view.answered_by == ("127.0.0.1", leader.ports["CONTROLLER"])
            assert sorted(v.node_id for v in view.voters) == [1, 2, 3]
            assert {(v.host, v.port) for v in view.voters} == {("127.0.0.1", n.ports["CONTROLLER"]) for n in nodes}
            assert view.high_watermark >= 4 and view.describe_quorum_version == 2
            with pytest.raises(ClusterIdMismatch, match="not AAAAAAAAAAAAAAAAAAAAAA"):
                await discover([("127.0.0.1", follower.ports["CONTROLLER"])],
                               expected_cluster_id="AAAAAAAAAAAAAAAAAAAAAA")

            # An observer refuses a voter's id, and a cluster id the cluster does not have.
            with pytest.raises(ObserverError, match="node id 2 is a voter"):
                async with open_observer(_bootstrap(nodes[0]), data_dir=tmp_path / "o1", node_id=2):
                    pass
            with pytest.raises(ClusterIdMismatch):
                async with open_observer(_bootstrap(nodes[0]), data_dir=tmp_path / "o2",
                                         cluster_id="AAAAAAAAAAAAAAAAAAAAAA"):
                    pass
            assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()  # nothing formatted
            nursery.cancel_scope.cancel()


async def test_discovery_with_nobody_listening_says_so() -> None:
    [port] = free_ports(1)
    with trio.fail_after(30), pytest.raises(DiscoveryError, match=f"127.0.0.1:{port}"):
        await discover([("127.0.0.1", port)], timeout_ms=300, retry_for_ms=500)


async def test_observer_follows_and_its_image_matches_the_leaders_files(tmp_path: Path) -> None:
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path)
            await append_until_ok(nodes, _topic_records("foo"))
            await append_until_ok(nodes, [rec("FeatureLevelRecord", name="metadata.version", feature_level=21)])
            async with open_observer(_bootstrap(nodes[0]), data_dir=tmp_path / "observer") as observer:
                image = await observer.catch_up()
                assert image.topic("foo") is not None and image.features.metadata_version == 21
                # Later records arrive as they commit.
                last = await append_until_ok(nodes, _topic_records("bar", 3)
                                             + [rec("ConfigRecord", resource_type=2, resource_name="bar",
                                                    name="retention.ms", value="1")])
                image = await observer.wait_for_offset(last)
                assert len(image.topic("bar").partitions) == 3

                # Never a voter; listed by the leader's DescribeQuorum as an observer.
                assert observer.node.role in ("follower", "unattached")
                leader = await leader_of(nodes)
                client = peer(leader)
                _, dq = await client.request(ApiKey.DESCRIBE_QUORUM, lambda v: dq_req.DescribeQuorumRequest(
                    topics=[dq_req.TopicData(topic_name="__cluster_metadata",
                                             partitions=[dq_req.PartitionData(partition_index=0)])]))
                await client.aclose()
                part = dq.topics[0].partitions[0]
                assert observer.node_id in [o.replica_id for o in part.observers]
                assert observer.node_id not in [v.replica_id for v in part.current_voters]

                offline = image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir),
                                               up_to=image.offset)
                assert offline == image
            nursery.cancel_scope.cancel()


async def test_change_stream_from_an_offset_and_from_latest(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path)
            await append_until_ok(nodes, _topic_records("foo", 1))
            async with open_observer(_bootstrap(nodes[1]), data_dir=tmp_path / "observer") as observer:
                await observer.catch_up()
                seen: list[Change | SnapshotChange] = []
                async for change in observer.changes(0):
                    seen.append(change)
                    if isinstance(change, Change) and change.type == "PARTITION_RECORD":
                        break
                assert seen[0].type == "LEADER_CHANGE" and seen[0].control and seen[0].data["leaderId"] >= 1
                assert [c.type for c in seen if not c.control] == ["TOPIC_RECORD", "PARTITION_RECORD"]
                assert [c.offset for c in seen] == list(range(len(seen)))

                latest = await observer.latest_offset()
                last = await append_until_ok(nodes, [rec("NoOpRecord")])
                async for change in observer.changes(latest):
                    assert change.offset >= latest
                    if change.offset == last:
                        assert change.type == "NO_OP_RECORD"
                        break
            nursery.cancel_scope.cancel()


async def test_a_restart_resumes_from_the_local_copy(tmp_path: Path) -> None:
    data_dir = tmp_path / "observer"
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path)
            await append_until_ok(nodes, _topic_records("foo"))
            async with open_observer(_bootstrap(nodes[0]), data_dir=data_dir) as observer:
                first = await observer.catch_up()
                node_id = observer.node_id
            meta = MetaProperties.read(data_dir / "meta.properties")
            assert (meta.cluster_id, meta.node_id) == (CLUSTER_ID, node_id) and meta.directory_id is not None
            copied = (data_dir / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size
            assert copied > 0

            await append_until_ok(nodes, _topic_records("bar"))
            observer = Observer(_bootstrap(nodes[2]), data_dir=data_dir)
            await nursery.start(observer.run)
            # The log was there before the first fetch: it resumes, not restarts.
            assert observer.node.log.end_offset >= first.offset + 1 and observer.node_id == node_id
            image = await observer.catch_up()
            assert image.topic("foo") is not None and image.topic("bar") is not None
            await observer.shutdown()
            nursery.cancel_scope.cancel()


async def test_a_late_observer_catches_up_from_a_snapshot(tmp_path: Path) -> None:
    small_log = {"internal.metadata.log.segment.bytes": "1024", "metadata.max.retention.bytes": "1"}
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path, small_log)
            for node in nodes:
                policy = SnapshotPolicy(max_bytes_between_snapshots=2000, max_interval_ms=0,
                                        last_snapshot_ms=int(time.time() * 1000))
                nursery.start_soon(run_record_history_snapshots, node, policy)
            for i in range(30):
                last = await append_until_ok(nodes, _topic_records(f"t{i}", 2))
            leader = await leader_of(nodes)
            while leader.log.start_offset == 0:  # retention moved the start past offset 0
                await append_until_ok(nodes, [rec("NoOpRecord")])
                await trio.sleep(0.05)
            async with open_observer(_bootstrap(leader), data_dir=tmp_path / "observer") as observer:
                image = await observer.wait_for_offset(last)
                assert observer.node.log.start_offset > 0  # it installed a snapshot: no offset 0 here
                assert sorted(t.name for t in image.topics.values()) == sorted(f"t{i}" for i in range(30))
                # The stream from 0 starts with that snapshot.
                async for change in observer.changes(0):
                    assert isinstance(change, SnapshotChange) and change.records > 0
                    break
                offline = image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir),
                                               up_to=image.offset)
                assert offline.content_equals(image)
            nursery.cancel_scope.cancel()


# ----------------------------------------------------------------- refusals


async def test_a_data_dir_of_another_cluster_is_refused(tmp_path: Path) -> None:
    prepare_data_dir(tmp_path / "d", "OtherClusterIdAAAAAAAAA", 7)
    with pytest.raises(ClusterIdMismatch, match="use another --data-dir"):
        prepare_data_dir(tmp_path / "d", CLUSTER_ID, None)
    with pytest.raises(ObserverError, match="formatted for node id 7"):
        prepare_data_dir(tmp_path / "d", "OtherClusterIdAAAAAAAAA", 8)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "something").write_text("x")
    with pytest.raises(ObserverError, match="not empty"):
        prepare_data_dir(tmp_path / "busy", CLUSTER_ID, None)


# ----------------------------------------------------------------- on the wire


def _kafka_fetch_request() -> dict:
    """A Fetch v17 that Kafka's own raft client sent (golden frames)."""
    import json

    from tests.conftest import fixture_path

    frames = fixture_path("wire", "kafka-java-frames.jsonl")
    for line in frames.read_text().splitlines():
        frame = json.loads(line)
        if frame["api"] == "FETCH" and frame["direction"] == "request":
            return frame["kafkaDecoded"]["body"]
    raise AssertionError("no Fetch request in the golden frames")


async def test_the_observer_sends_what_a_kafka_controller_takes_from_a_broker(tmp_path: Path) -> None:
    """Every request the observer sends, as the voters received it: only
    ApiVersions, DescribeCluster (endpoint type 2), DescribeQuorum, Fetch
    (v13+, by topic id, ReplicaState with its node id and epoch -1, its
    directory id) -- never Vote or the other voter RPCs -- and each Fetch has
    the shape of the Fetch Kafka's raft client sends."""
    from kraft.messages.json_form import to_json
    from kraft.raft.rpcs.rpc_unit import METADATA_TOPIC_ID

    observer_id = 4242
    seen: list[tuple[str, int, object]] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await _cluster(nursery, tmp_path)
            for node in nodes:
                apis = node.controller_apis
                assert apis is not None
                original = apis.handle

                async def recording(request, conn, original=original):  # type: ignore[no-untyped-def]
                    if request.header.client_id in ("kraft-observer", f"raft-client-{observer_id}"):
                        seen.append((request.api_key.name, request.api_version, request.body))
                    return await original(request, conn)

                apis.handle = recording  # type: ignore[method-assign]
            await append_until_ok(nodes, _topic_records("foo"))
            async with open_observer(_bootstrap(nodes[0]), data_dir=tmp_path / "o", node_id=observer_id) as observer:
                await observer.catch_up()
                directory_id = observer.node.directory_id
            nursery.cancel_scope.cancel()

    apis = {name for name, _, _ in seen}
    assert apis <= {"API_VERSIONS", "DESCRIBE_CLUSTER", "DESCRIBE_QUORUM", "FETCH", "FETCH_SNAPSHOT"}
    assert {"DESCRIBE_CLUSTER", "DESCRIBE_QUORUM", "FETCH"} <= apis
    for name, version, body in seen:
        if name == "DESCRIBE_CLUSTER":
            assert version >= 1 and body.endpoint_type == 2
    fetches = [(v, b) for name, v, b in seen if name == "FETCH"]
    kafka = _kafka_fetch_request()
    for version, body in fetches:
        assert 13 <= version <= 18
        assert body.cluster_id == CLUSTER_ID
        assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (observer_id, -1)
        [topic_] = body.topics
        [part] = topic_.partitions
        assert topic_.topic_id == METADATA_TOPIC_ID and part.partition == 0
        assert part.replica_directory_id == directory_id
        # Field for field the shape of Kafka's Fetch v17, per-request values aside.
        ours = to_json(body, 17)
        for key in ("clusterId", "replicaState", "maxBytes"):
            ours.pop(key)
        theirs = copy.deepcopy({k: v for k, v in kafka.items() if k not in ("clusterId", "replicaState", "maxBytes")})
        for p in (ours["topics"][0]["partitions"][0], theirs["topics"][0]["partitions"][0]):
            for key in ("currentLeaderEpoch", "fetchOffset", "lastFetchedEpoch", "replicaDirectoryId"):
                p.pop(key)
        assert ours == theirs, (ours, theirs)


# ----------------------------------------------------------------- reconfiguration (KIP-853)


async def test_the_observer_follows_a_dynamic_quorum_through_reconfiguration(tmp_path: Path) -> None:
    """A quorum grown from one --standalone controller to three, then the
    first one removed and stopped: the observer, bootstrapped from that first
    controller alone, follows throughout (it reads the voter set from the log,
    as a Kafka 3.9+ broker with controller.quorum.bootstrap.servers does)."""
    from kraft.raft.errors import Errors
    from tests.harness.configs import format_node, write_configs
    from tests.node.reconfig_cluster import add_voter, directory_id, remove_voter

    paths, ports = write_configs(tmp_path, [1, 2, 3], bootstrap=[1])
    format_node(paths[1], "--standalone")
    format_node(paths[2])
    format_node(paths[3])
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            nodes = {i: await start(nursery, node_config(p)) for i, p in paths.items()}
            await append_until_ok([nodes[1]], _topic_records("before"))
            async with trio.open_nursery() as observing:
                observer = Observer(f"127.0.0.1:{ports[1]}", data_dir=tmp_path / "observer")
                await observer.prepare()
                assert observer.view is not None and observer.view.is_dynamic
                assert [v.node_id for v in observer.view.voters] == [1]
                await observing.start(observer.run)

                for node_id in (2, 3):
                    while True:
                        leader = await leader_of(nodes.values())
                        body = await add_voter(("127.0.0.1", leader.ports["CONTROLLER"]), node_id,
                                               directory_id(tmp_path, node_id), ports[node_id])
                        # DUPLICATE_VOTER: an earlier attempt whose answer timed out went through.
                        if body.error_code in (Errors.NONE, Errors.DUPLICATE_VOTER):
                            break
                        await trio.sleep(0.1)
                await append_until_ok(nodes.values(), _topic_records("three-voters"))
                body = await remove_voter(("127.0.0.1", ports[1]), 1, directory_id(tmp_path, 1))
                assert body.error_code == Errors.NONE, body
                await until_async("a leader other than node 1",
                                  lambda: any(n.role == "leader" for i, n in nodes.items() if i != 1), interval_s=0.02)
                await nodes[1].shutdown()  # the only address the observer was given is gone
                last = await append_until_ok([nodes[2], nodes[3]], _topic_records("without-1"))

                image = await observer.wait_for_offset(last)
                assert {"before", "three-voters", "without-1"} <= set(image.topic_ids_by_name)
                assert observer.node.raft_driver.core.voters.voter_ids == (2, 3)
                leader = await leader_of([nodes[2], nodes[3]])
                offline = image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir),
                                               up_to=image.offset)
                assert offline == image
                observing.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
