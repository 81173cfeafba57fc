"""Snapshots in the node (KIP-630), with real nodes on 127.0.0.1: writing one
at a committed offset, retention moving the log start, a late follower
catching up through FetchSnapshot in slices, listeners getting the snapshot
first (Kafka's ``handleLoadSnapshot``), and FetchSnapshot's error answers."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kraft.raft.errors import Errors, InvalidSnapshotIdError
from kraft.messages.generated import fetch_snapshot_request as fs_req
from kraft.node.node import CommittedBatch, KraftNode, SnapshotLoaded
from kraft.node.snapshots import SnapshotPolicy, run_log_cleaner, run_record_history_snapshots
from kraft.raft import rpcs
from kraft.raft.rpcs import fetch_snapshot_rpc
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID, SnapshotReader, list_snapshot_paths, snapshot_file_name
from kraft.records.view import OffsetAndEpoch
from kraft.raft.voters import ReplicaKey
from kraft.wire.apis import ApiKey
from tests.harness.configs import CLUSTER_ID, make_configs
from tests.harness.inprocess import append_until_ok, history, leader_of, node_config, peer, start
from tests.harness.poll import until_async

#: Small segments and a retention that always applies: each new snapshot
#: moves the log start up to it.
SMALL_LOG = {"internal.metadata.log.segment.bytes": "1024", "metadata.max.retention.bytes": "1"}


def partition_dir(node: KraftNode) -> Path:
    return metadata_partition_dir(node.config.metadata_log_dir)


def snapshot_files(node: KraftNode) -> list[OffsetAndEpoch]:
    return [p.snapshot_id for p in list_snapshot_paths(partition_dir(node)) if not p.partial and not p.deleted]


async def _fill(nodes: list[KraftNode], count: int, tag: str) -> int:
    last = -1
    for i in range(count):
        last = await append_until_ok(nodes, [f"{tag}-{i}".encode() * 4])
    return last


async def test_create_snapshot_at_a_committed_offset(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1, 2, 3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(p)) for p in paths.values()]
            leader = await leader_of(nodes)
            await leader.append([b"a"])
            three = await leader.append([b"b0", b"b1", b"b2"])  # one batch of three
            epoch = leader.leader.epoch

            # KIP-630: only committed offsets, at a real (offset, epoch) of the log.
            with pytest.raises(InvalidSnapshotIdError, match="not committed"):
                await leader.create_snapshot(OffsetAndEpoch(three + 100, epoch), [])
            with pytest.raises(InvalidSnapshotIdError, match="does not match the log"):
                await leader.create_snapshot(OffsetAndEpoch(three + 1, epoch + 1), [])
            with pytest.raises(InvalidSnapshotIdError, match="batch boundary"):
                await leader.create_snapshot(OffsetAndEpoch(three, epoch), [])

            # An offset alone: the epoch comes from the log.
            sid = await leader.create_snapshot(three + 1, [b"state-1", b"state-2"])
            assert sid == OffsetAndEpoch(three + 1, epoch)
            path = partition_dir(leader) / snapshot_file_name(sid)
            with SnapshotReader(path) as reader:
                contents = reader.contents()  # header, records, footer: validated
            assert [bytes(r.value) for r in contents.data_records()] == [b"state-1", b"state-2"]
            assert contents.header.last_contained_log_timestamp > 0

            with pytest.raises(InvalidSnapshotIdError, match="not newer"):
                await leader.create_snapshot(sid, [b"again"])
            assert not [p for p in list_snapshot_paths(partition_dir(leader)) if p.partial]

            # A new listener starts from the latest snapshot (handleLoadSnapshot).
            items, _ = await history(leader, sid.offset - 1)
            assert items[0] == SnapshotLoaded(sid, (b"state-1", b"state-2"), contents.header.last_contained_log_timestamp)
            # One that asks for offset 0 (still in the log) gets the batches.
            items, records = await history(leader, three, start_offset=0)
            assert isinstance(items[0], CommittedBatch)
            assert [records[o] for o in sorted(records)] == [b"a", b"b0", b"b1", b"b2"]
            nursery.cancel_scope.cancel()


async def test_late_follower_catches_up_through_fetch_snapshot_in_slices(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1, 2, 3], observers=[9], extra=SMALL_LOG)
    with trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            voters = [await start(nursery, node_config(paths[i])) for i in (1, 2)]  # 3 and 9 stay down
            await _fill(voters, 30, "early")
            leader = await leader_of(voters)
            first = await leader.create_snapshot(leader.high_watermark, [b"state-as-of-first"])
            await _fill(voters, 30, "late")
            leader = await leader_of(voters)
            hwm = leader.high_watermark
            second = await leader.create_snapshot(hwm, [b"state", b"as-of", b"second"])

            # Retention (metadata.max.retention.bytes=1): the log now starts at
            # the newest snapshot, the older snapshot and the segments before
            # it are gone, and one snapshot is kept.
            assert leader.log.start_offset == second.offset
            assert snapshot_files(leader) == [second]
            bases = sorted(int(p.name.split(".")[0]) for p in partition_dir(leader).glob("*.log"))
            assert bases[0] > first.offset and bases[0] <= second.offset

            # A new voter and a new observer start empty: both are below the
            # log start, so they download the snapshot with FetchSnapshot, in
            # 97-byte slices, then fetch the log from its end offset.
            late = [await start(nursery, node_config(paths[i], fetch_snapshot_max_bytes=97)) for i in (3, 9)]
            tail = await append_until_ok(voters, [b"after-the-snapshot"])
            for node in late:
                items, records = await history(node, tail)
                assert items[0] == SnapshotLoaded(second, (b"state", b"as-of", b"second"),
                                                  items[0].last_contained_log_timestamp)
                assert all(isinstance(i, CommittedBatch) for i in items[1:])
                assert items[1].base_offset == second.offset
                assert records[tail] == b"after-the-snapshot"
                copied = (partition_dir(node) / snapshot_file_name(second)).read_bytes()
                assert copied == (partition_dir(leader) / snapshot_file_name(second)).read_bytes()
                assert node.log.start_offset == second.offset

            # A listener that resumes below the log start gets the snapshot first.
            items, _ = await history(leader, tail, start_offset=0)
            assert isinstance(items[0], SnapshotLoaded) and items[0].snapshot_id == second
            nursery.cancel_scope.cancel()

        # After a restart the log opens at the snapshot and keeps serving.
        mlog = MetadataLog.open(metadata_partition_dir(node_config(paths[3]).metadata_log_dir))
        try:
            assert mlog.start_offset == second.offset and mlog.latest_snapshot_id() == second
            assert mlog.end_offset > tail
        finally:
            mlog.close()


async def test_fetch_snapshot_over_the_wire(tmp_path: Path) -> None:
    """FetchSnapshot as a peer sends it: slices reassemble to the file;
    SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, epoch fencing, and a
    non-leader's NOT_LEADER_OR_FOLLOWER (Kafka's handleFetchSnapshotRequest)."""
    paths = make_configs(tmp_path, [1, 2, 3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(p)) for p in paths.values()]
            await _fill(nodes, 20, "r")
            leader = await leader_of(nodes)
            sid = await leader.create_snapshot(leader.high_watermark, [b"x" * 300, b"y" * 300])
            epoch = leader.leader.epoch
            expected = (partition_dir(leader) / snapshot_file_name(sid)).read_bytes()

            async def fetch_snapshot(node: KraftNode, snapshot_id: OffsetAndEpoch, position: int,
                                     max_bytes: int = 100, leader_epoch: int = epoch,
                                     partition: int = 0) -> rpcs.FetchSnapshotResponse:
                message = rpcs.FetchSnapshotRequest(
                    cluster_id=CLUSTER_ID, replica_key=ReplicaKey(9), current_leader_epoch=leader_epoch,
                    snapshot_id=snapshot_id, position=position, max_bytes=max_bytes)

                def build(version: int) -> fs_req.FetchSnapshotRequest:
                    body = fetch_snapshot_rpc.RPC.request_to_wire(message, version, ())
                    body.topics[0].partitions[0].partition = partition
                    return body

                client = peer(node)
                try:
                    version, body = await client.request(ApiKey.FETCH_SNAPSHOT, build)
                finally:
                    await client.aclose()
                return fetch_snapshot_rpc.RPC.read_response(version, body)

            data = b""
            while True:
                answer = await fetch_snapshot(leader, sid, len(data))
                assert answer.partition_error is Errors.NONE and answer.size == len(expected)
                assert answer.position == len(data) and len(answer.unaligned_records) <= 100
                data += answer.unaligned_records
                if len(data) == answer.size:
                    break
            assert data == expected

            missing = await fetch_snapshot(leader, OffsetAndEpoch(sid.offset + 1, sid.epoch), 0)
            assert missing.partition_error is Errors.SNAPSHOT_NOT_FOUND
            assert (missing.leader_id, missing.leader_epoch) == (leader.config.node_id, epoch)
            beyond = await fetch_snapshot(leader, sid, len(expected) + 5)
            assert beyond.partition_error is Errors.POSITION_OUT_OF_RANGE
            assert (await fetch_snapshot(leader, sid, 0, leader_epoch=epoch - 1)).partition_error \
                is Errors.FENCED_LEADER_EPOCH
            assert (await fetch_snapshot(leader, sid, 0, leader_epoch=epoch + 1)).partition_error \
                is Errors.UNKNOWN_LEADER_EPOCH
            assert (await fetch_snapshot(leader, sid, 0, partition=1)).partition_error \
                is Errors.UNKNOWN_TOPIC_OR_PARTITION
            follower = next(n for n in nodes if n is not leader)
            assert (await fetch_snapshot(follower, sid, 0)).partition_error is Errors.NOT_LEADER_OR_FOLLOWER
            assert leader.role == "leader" and leader.leader.epoch == epoch
            nursery.cancel_scope.cancel()


def test_snapshot_policy_follows_kafkas_snapshot_generator() -> None:
    """metadata.log.max.record.bytes.between.snapshots, or
    metadata.log.max.snapshot.interval.ms once something was committed."""
    policy = SnapshotPolicy(max_bytes_between_snapshots=1000, max_interval_ms=60_000, last_snapshot_ms=0)
    assert policy.on_commit(600, now_ms=10) is None
    assert "1000 bytes" in policy.on_commit(400, now_ms=20)
    policy.on_snapshot(now_ms=20)
    assert policy.on_commit(10, now_ms=60_019) is None
    assert "60000 ms" in policy.on_commit(10, now_ms=60_020)
    policy.on_failure(now_ms=60_020)
    assert policy.on_commit(5000, now_ms=60_021) is None  # backing off after a failed attempt
    assert policy.on_commit(0, now_ms=60_020 + policy.retry_backoff_ms) is not None
    never_by_time = SnapshotPolicy(max_bytes_between_snapshots=1000, max_interval_ms=0, last_snapshot_ms=0)
    assert never_by_time.on_commit(1, now_ms=10**12) is None


async def test_record_history_snapshots_hold_every_committed_record(tmp_path: Path) -> None:
    """``kraft node start``'s snapshots: the committed data records, in order."""
    extra = {**SMALL_LOG, "metadata.log.max.record.bytes.between.snapshots": "2000"}
    paths = make_configs(tmp_path, [1], extra=extra)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            nursery.start_soon(run_record_history_snapshots, node)
            await leader_of([node])
            values = [f"record-{i:03d}".encode() * 3 for i in range(120)]
            for value in values:
                await node.append([value])
            await until_async("a snapshot within 40 of the high watermark",
                              lambda: bool(snapshot_files(node))
                              and snapshot_files(node)[-1].offset >= node.high_watermark - 40,
                              interval_s=0.05)
            sid = snapshot_files(node)[-1]
            with SnapshotReader(partition_dir(node) / snapshot_file_name(sid)) as reader:
                snap = [bytes(r.value) for r in reader.contents().data_records()]
            assert snap == values[: len(snap)] and len(snap) > 40
            assert node.log.start_offset == sid.offset  # retention followed the snapshots
            # History = snapshot + the log after it: every record exactly once.
            _, records = await history(node, node.high_watermark - 1, start_offset=sid.offset)
            assert snap + [records[o] for o in sorted(records)] == values
            nursery.cancel_scope.cancel()


async def test_time_based_retention_runs_in_the_background(tmp_path: Path) -> None:
    """metadata.max.retention.ms: a snapshot older than that goes (with the
    log before the next one) at the next periodic clean (Kafka runs it every
    60 s; here every 0.2 s), keeping the latest snapshot."""
    extra = {"metadata.max.retention.bytes": "-1", "metadata.max.retention.ms": "5000",
             "internal.metadata.log.segment.bytes": "1024"}
    paths = make_configs(tmp_path, [1], extra=extra)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            await leader_of([node])
            await _fill([node], 20, "a")
            first = await node.create_snapshot(node.high_watermark, [b"one"])
            await _fill([node], 20, "b")
            second = await node.create_snapshot(node.high_watermark, [b"two"])
            # Too young yet. (The format's bootstrap snapshot goes at the
            # first clean after it is metadata.max.retention.ms old, as in
            # Kafka's KafkaRaftLog.cleanSnapshotsRetentionMs: under load
            # that may be when `first` was taken.)
            assert node.log.start_offset <= first.offset
            assert [s for s in snapshot_files(node) if s != BOOTSTRAP_SNAPSHOT_ID] == [first, second]
            nursery.start_soon(run_log_cleaner, node.raft_driver, 0.2)
            # (Read as the cleaner's worker thread finishes: poll for the end state.)
            await until_async("the log starting at the second snapshot, its only one",
                              lambda: node.log.start_offset == second.offset and snapshot_files(node) == [second],
                              interval_s=0.05)
            nursery.cancel_scope.cancel()
