"""Bad input and faults at the node, over real sockets and real files.

Crafted requests come from ``wire.network_client.PeerClient`` as a misbehaving or
confused peer would send them; the node must answer with Kafka's error
codes (``KafkaRaftClient``'s handlers) and stay what it was. Then the disk:
a full filesystem (a size-limited tmpfs; the leader resigns, refuses appends
with a clear error, keeps serving reads and recovers when space returns),
and a crash that tore the last write.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.raft import events as ev
from kraft.raft import rpcs
from kraft.raft.errors import Errors, NotLeaderError
from kraft.node.node import KraftNode
from kraft.node.raft_driver import StorageError
from kraft.records.batch import build_data_batch
from kraft.records.errors import DiskIOError
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID, list_snapshot_paths
from kraft.records.view import OffsetAndEpoch
from kraft.raft.voters import ReplicaKey
from tests.harness.configs import CLUSTER_ID, make_configs
from tests.harness.inprocess import append_until_ok, history, leader_of, node_config, peer, start
from tests.harness.poll import until_async
from tests.node.verify import assert_committed_everywhere, assert_one_leader_per_epoch, read_stored_log

OBSERVER = ReplicaKey(9)


async def ask(node: KraftNode, message: ev.RaftRequest, *, max_version: int | None = None,
              mutate: Callable[[Any], None] | None = None) -> ev.RaftResponse:
    """Send one of the core's requests as a peer would (optionally altered on
    the wire) and return the answer as the core's response event."""
    raft_rpc = rpcs.BY_REQUEST[type(message)]

    def build(version: int) -> object:
        body = raft_rpc.write_request(message, version)
        if mutate is not None:
            mutate(body)
        return body

    client = peer(node)
    try:
        version, body = await client.request(raft_rpc.api_key, build, max_version=max_version)
    finally:
        await client.aclose()
    return raft_rpc.read_response(version, body)


def fetch(epoch: int, offset: int, last_epoch: int, *, replica: ReplicaKey = OBSERVER, **kw: Any) -> rpcs.FetchRequest:
    fields: dict[str, Any] = dict(cluster_id=CLUSTER_ID, replica_key=replica, current_leader_epoch=epoch,
                                  fetch_offset=offset, last_fetched_epoch=last_epoch, max_wait_ms=0,
                                  max_bytes=1 << 20)
    fields.update(kw)
    return rpcs.FetchRequest(**fields)


def vote(epoch: int, candidate: int, last_epoch: int, last_offset: int, pre_vote: bool = False) -> rpcs.VoteRequest:
    return rpcs.VoteRequest(cluster_id=CLUSTER_ID, candidate_epoch=epoch, candidate_key=ReplicaKey(candidate),
                          last_offset_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote)


def begin_epoch(epoch: int, leader: int) -> rpcs.BeginQuorumEpochRequest:
    return rpcs.BeginQuorumEpochRequest(cluster_id=CLUSTER_ID, leader_id=leader, leader_epoch=epoch)


def rename_topic(name: str) -> Callable[[Any], None]:
    def mutate(body: Any) -> None:
        body.topics[0].topic_name = name
    return mutate


async def test_requests_for_another_partition_are_invalid(tmp_path: Path) -> None:
    """Kafka (until multi-raft) answers a raft RPC for any other topic or
    partition with a top-level INVALID_REQUEST; FetchSnapshot with
    UNKNOWN_TOPIC_OR_PARTITION for the partition."""
    paths = make_configs(tmp_path, [1])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            await leader_of([node])
            offset = await node.append([b"before"])
            epoch = node.leader.epoch

            answer = await ask(node, vote(epoch + 1, 2, epoch, offset + 1), mutate=rename_topic("orders"))
            assert answer.error is Errors.INVALID_REQUEST
            answer = await ask(node, begin_epoch(epoch + 1, 2), mutate=rename_topic("orders"))
            assert answer.error is Errors.INVALID_REQUEST

            def other_partition(body: Any) -> None:
                body.topics[0].partitions[0].partition = 3

            def other_topic_id(body: Any) -> None:
                body.topics[0].topic_id = uuid.uuid4()

            def other_topic_name(body: Any) -> None:
                body.topics[0].topic = "orders"

            for mutate, max_version in ((other_partition, None), (other_topic_id, None), (other_topic_name, 12)):
                answer = await ask(node, fetch(epoch, 0, 0), mutate=mutate, max_version=max_version)
                assert answer.error is Errors.INVALID_REQUEST, mutate.__name__

            def two_partitions(body: Any) -> None:
                body.topics[0].partitions.append(body.topics[0].partitions[0])

            assert (await ask(node, fetch(epoch, 0, 0), mutate=two_partitions)).error is Errors.INVALID_REQUEST

            # None of it disturbed the leader.
            assert node.role == "leader" and node.leader.epoch == epoch
            assert await node.append([b"after"]) > offset
            nursery.cancel_scope.cancel()


async def test_stale_and_future_epochs(tmp_path: Path) -> None:
    """KIP-595: a request from an older epoch is fenced (FENCED_LEADER_EPOCH,
    with the current leader and epoch so the sender can catch up); a Fetch
    from a newer epoch than the leader's is UNKNOWN_LEADER_EPOCH."""
    paths = make_configs(tmp_path, [1, 2, 3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(p)) for p in paths.values()]
            leader = await leader_of(nodes)
            end = await leader.append([b"r"]) + 1
            epoch = leader.leader.epoch
            other = next(n.config.node_id for n in nodes if n is not leader)

            # A future-epoch Vote from a voter whose log is behind: the leader
            # moves to that epoch (Raft) but does not grant; a voter with the
            # whole log wins the next election and nothing committed is lost.
            behind = await ask(leader, vote(epoch + 5, other, 0, 0))
            assert not behind.vote_granted and behind.leader_epoch == epoch + 5
            new = await append_until_ok(nodes, [b"after the disruption"])
            for node in nodes:
                _, records = await history(node, new, start_offset=0)
                assert records[end - 1] == b"r" and records[new] == b"after the disruption"

            leader = await leader_of(nodes)
            epoch = leader.leader.epoch
            assert epoch > 6
            lid = leader.config.node_id
            other = next(n.config.node_id for n in nodes if n is not leader)
            end = new + 1
            stale = await ask(leader, fetch(epoch - 1, end, epoch - 1))
            assert stale.partition_error is Errors.FENCED_LEADER_EPOCH
            assert (stale.leader_id, stale.leader_epoch) == (lid, epoch)
            future = await ask(leader, fetch(epoch + 1, end, epoch))
            assert future.partition_error is Errors.UNKNOWN_LEADER_EPOCH
            old_vote = await ask(leader, vote(epoch - 1, other, epoch - 2, end))
            assert old_vote.partition_error is Errors.FENCED_LEADER_EPOCH and not old_vote.vote_granted
            old_leader = await ask(leader, begin_epoch(epoch - 1, other))
            assert old_leader.partition_error is Errors.FENCED_LEADER_EPOCH
            assert all(n.leader.epoch == epoch for n in nodes) and leader.role == "leader"
            nursery.cancel_scope.cancel()


async def test_replicas_outside_the_voters_are_checked_for_epoch_and_id_only(tmp_path: Path) -> None:
    """Static quorum (kraft.version 0), as Kafka 3.9+/4.x
    ``KafkaRaftClient.validateVoterOnlyRequest``: a Vote or BeginQuorumEpoch
    from a replica outside controller.quorum.voters is checked for its epoch
    (FENCED_LEADER_EPOCH) and a non-negative id (INVALID_REQUEST) only --
    never INCONSISTENT_VOTER_SET. A pre-vote from such a replica, however
    high its epoch, disrupts nothing: replicas that hear from their leader
    do not grant it (KIP-996)."""
    paths = make_configs(tmp_path, [1, 2, 3], observers=[9])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(paths[i])) for i in (1, 2, 3)]
            leader = await leader_of(nodes)
            end = await leader.append([b"r"]) + 1
            epoch = leader.leader.epoch
            follower = next(n for n in nodes if n is not leader)
            for target in (leader, follower):
                invalid = await ask(target, vote(epoch + 10, -5, epoch, end + 100))
                assert invalid.partition_error is Errors.INVALID_REQUEST and not invalid.vote_granted
                answer = await ask(target, vote(epoch + 10, 42, epoch, end + 100, pre_vote=True))
                assert answer.partition_error is Errors.NONE and not answer.vote_granted
                claim = await ask(target, begin_epoch(epoch - 1, 42))
                assert claim.partition_error is Errors.FENCED_LEADER_EPOCH
            assert all(n.leader == leader.leader for n in nodes) and leader.role == "leader"
            # The observer (9) is a real node but not a voter: its pre-vote is
            # answered (no INCONSISTENT_VOTER_SET) and not granted.
            observer_vote = await ask(follower, vote(epoch + 1, 9, epoch, end, pre_vote=True))
            assert observer_vote.partition_error is Errors.NONE and not observer_vote.vote_granted
            assert follower.leader.epoch == epoch
            nursery.cancel_scope.cancel()


async def test_fetch_at_bogus_offsets(tmp_path: Path) -> None:
    """The leader validates every Fetch position (KIP-595 + KIP-101):
    malformed fields are INVALID_REQUEST; an offset past the log end or an
    epoch the log does not know is answered with the diverging epoch; an
    offset below the log start with the snapshot id; a foreign cluster id
    with INCONSISTENT_CLUSTER_ID."""
    paths = make_configs(tmp_path, [1], extra={"internal.metadata.log.segment.bytes": "1024",
                                               "metadata.max.retention.bytes": "1"})
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            await leader_of([node])
            for i in range(40):
                end = await node.append([f"record-{i}".encode() * 4]) + 1
            epoch = node.leader.epoch
            lid = node.config.node_id

            for bad in (fetch(epoch, -1, epoch), fetch(epoch, end, epoch + 1), fetch(epoch, end, -1),
                        fetch(epoch, end, epoch, max_wait_ms=-5), fetch(epoch, end, epoch, replica=ReplicaKey(lid))):
                assert (await ask(node, bad)).partition_error is Errors.INVALID_REQUEST, bad

            past_end = await ask(node, fetch(epoch, end + 1000, epoch))
            assert past_end.partition_error is Errors.NONE and not past_end.records
            assert past_end.diverging_epoch == OffsetAndEpoch(end, epoch)

            ok = await ask(node, fetch(epoch, end - 1, epoch))
            assert ok.partition_error is Errors.NONE and ok.records and ok.high_watermark == end

            foreign = await ask(node, fetch(epoch, end, epoch, cluster_id="AAAAAAAAAAAAAAAAAAAAAA"))
            assert foreign.error is Errors.INCONSISTENT_CLUSTER_ID

            await node.create_snapshot(end - 10, [b"older state"])
            sid = await node.create_snapshot(end, [b"state"])
            assert node.log.start_offset == end  # retention moved the log start to the newer one
            below = await ask(node, fetch(epoch, 5, epoch))
            assert below.snapshot_id == sid and not below.records
            assert node.role == "leader" and node.leader.epoch == epoch
            nursery.cancel_scope.cancel()


async def test_garbage_on_the_wire_closes_only_that_connection(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            await leader_of([node])
            port = next(iter(node.ports.values()))
            for junk in (b"\x00\x00\x00\x05hello", b"\xff\xff\xff\xff", b"\x00\x00\x00\x08" + b"\x00\x01" * 4,
                         b"GET / HTTP/1.1\r\n\r\n"):
                stream = await trio.open_tcp_stream("127.0.0.1", port)
                await stream.send_all(junk)
                with trio.fail_after(30):  # a bound for a hang; the node closes at once
                    while await stream.receive_some(4096):
                        pass  # the node closes the connection
                await stream.aclose()
            assert await node.append([b"still serving"]) >= 0
            assert (await ask(node, fetch(node.leader.epoch, 0, 0))).partition_error is Errors.NONE
            nursery.cancel_scope.cancel()


# ---------------------------------------------------------------- the disk


@contextlib.contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    """A size-limited tmpfs at ``path`` (a real filesystem that fills up)."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("simulating a full disk needs a size-limited tmpfs: mount(8) as root")
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a size-limited tmpfs to simulate a full disk: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem refuses with ENOSPC."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        for size in (1 << 16, 4096, 1):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler


@pytest.mark.slow
async def test_full_disk_leader_resigns_keeps_serving_reads_and_recovers(tmp_path: Path) -> None:
    """ENOSPC on the leader's log: Kafka's controller treats a failed append
    as fatal for its leadership. The leader resigns, refuses appends with a
    clear error, its listeners keep reading what was committed, a voter with
    space leads meanwhile; when space returns the node catches up, and no
    committed record is lost on any node."""
    with contextlib.ExitStack() as mounts:
        for i in (1, 2, 3):
            mounts.enter_context(small_filesystem(tmp_path / f"node-{i}", "6m"))
        paths = make_configs(tmp_path, [1, 2, 3])
        committed: dict[int, bytes] = {}
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                nodes = [await start(nursery, node_config(p)) for p in paths.values()]
                for i in range(20):
                    value = f"before-{i}".encode()
                    committed[await append_until_ok(nodes, [value])] = value
                full = await leader_of(nodes)
                filler = fill(Path(full.config.metadata_log_dir))

                # Append until the disk says no (the segment's last page may
                # still take a few records).
                error: NotLeaderError | None = None
                for i in range(10_000):
                    value = f"filling-{i}".encode() * 50
                    try:
                        committed[await full.append([value])] = value
                    except NotLeaderError as e:
                        error = e
                        break
                assert isinstance(error, StorageError), error
                assert "No space left on device" in str(error)
                assert full.raft_driver.storage_error is not None
                with pytest.raises(StorageError, match="cannot be written"):
                    await full.append([b"refused"])

                # Another voter leads and commits meanwhile.
                others = [n for n in nodes if n is not full]
                during = {}
                for i in range(10):
                    value = f"during-{i}".encode()
                    during[await append_until_ok(others, [value])] = value
                committed.update(during)
                assert full.role != "leader"
                # Reads on the full node go on: everything committed before.
                last_before = max(o for o, v in committed.items() if not v.startswith(b"during"))
                _, seen = await history(full, last_before, start_offset=0)
                assert all(seen[o] == v for o, v in committed.items() if o <= last_before)

                # Space returns: the node catches up and writes again.
                filler.unlink()
                last = max(committed)
                _, seen = await history(full, last, start_offset=0)
                assert all(seen[o] == v for o, v in committed.items())
                with trio.fail_after(20):
                    await until_async("full.raft_driver.storage_error is None",
                                      lambda: full.raft_driver.storage_error is None, interval_s=0.05)
                value = b"after recovery"
                committed[await append_until_ok(nodes, [value])] = value
                _, seen = await history(full, max(committed), start_offset=0)
                assert seen[max(committed)] == value
                for node in nodes:  # the last records on every node before the stop (see below)
                    await history(node, max(committed), start_offset=0)
                nursery.cancel_scope.cancel()

        logs = {i: read_stored_log(tmp_path / f"node-{i}") for i in (1, 2, 3)}
        assert_committed_everywhere(committed, logs)
        assert_one_leader_per_epoch((e, leader) for s in logs.values() for e, leader in s.leaders.items())


@pytest.mark.slow
async def test_torn_write_from_a_crash_is_cut_and_the_node_catches_up(tmp_path: Path) -> None:
    """A crash in the middle of an append leaves a partial batch at the end of
    the segment (written, never fsynced whole). Opening the log cuts it (as
    Kafka's log recovery does), and the node rejoins and catches up without
    any committed record lost."""
    paths = make_configs(tmp_path, [1, 2, 3])
    committed: dict[int, bytes] = {}
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(p)) for p in paths.values()]
            for i in range(30):
                value = f"first-{i}".encode()
                committed[await append_until_ok(nodes, [value])] = value
            victim = next(n for n in nodes if n.role != "leader")
            victim_id = victim.config.node_id
            nursery.cancel_scope.cancel()  # every node stops at once, mid-flight

    partition = metadata_partition_dir(tmp_path / f"node-{victim_id}")
    segment = sorted(partition.glob("*.log"))[-1]
    data = segment.read_bytes()
    with open(segment, "ab") as f:
        f.write(data[-40:-10])  # the front of a batch, cut short: a torn write
    torn_size = segment.stat().st_size

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(p)) for p in paths.values()]
            victim = next(n for n in nodes if n.config.node_id == victim_id)
            repairs = victim.log.recovery_report.repairs
            assert repairs and segment.stat().st_size < torn_size, victim.log.recovery_report
            for i in range(10):
                value = f"second-{i}".encode()
                committed[await append_until_ok(nodes, [value])] = value
            # Every node, not only the victim: the check of the stored logs
            # below wants every committed record on every node, and a record
            # is committed on two of the three (a loaded follower may still
            # be fetching the last ones when the nodes stop).
            for node in nodes:
                _, seen = await history(node, max(committed), start_offset=0)
                assert {o: seen.get(o) for o in committed} == committed, node.config.node_id
            nursery.cancel_scope.cancel()
    logs = {i: read_stored_log(tmp_path / f"node-{i}") for i in (1, 2, 3)}
    assert_committed_everywhere(committed, logs)
    assert_one_leader_per_epoch((e, leader) for s in logs.values() for e, leader in s.leaders.items())


def test_failed_append_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    """A write the disk refuses part-way (ENOSPC) is rolled back: the segment
    file, its index and the log end are what they were, so the next append,
    once there is space, lands where the failed one should have."""
    with small_filesystem(tmp_path / "fs", "1m") as fs:
        mlog = MetadataLog.open(fs / "__cluster_metadata-0")
        try:
            mlog.append_as_leader(build_data_batch([b"first"], base_offset=0, epoch=1, timestamp=1), 1)
            segment = mlog.segments[-1].log_path
            size, end = segment.stat().st_size, mlog.end_offset
            filler = fill(fs)
            big = build_data_batch([b"x" * 100_000], base_offset=end, epoch=1, timestamp=1)
            with pytest.raises(DiskIOError) as failed:
                mlog.append_as_leader(big, 1)
            assert failed.value.errno == errno.ENOSPC
            assert (segment.stat().st_size, mlog.end_offset) == (size, end)
            # A known outcome (nothing of it is on disk): the one disk error
            # the node survives, named for the operator.
            assert failed.value.rolled_back
            assert str(failed.value).startswith(f"write of {segment} failed: ENOSPC")
            filler.unlink()
            info = mlog.append_as_leader(big, 1)
            assert info.first_offset == end
            assert [b.base_offset for b in mlog.iter_batches()] == [0, end]
        finally:
            mlog.close()
        reopened = MetadataLog.open(fs / "__cluster_metadata-0")
        try:
            assert reopened.recovery_report.clean, reopened.recovery_report
            assert reopened.end_offset == end + 1
        finally:
            reopened.close()


async def test_snapshot_on_a_full_disk_fails_cleanly(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "node-1", "8m"):
        paths = make_configs(tmp_path, [1])
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                node = await start(nursery, node_config(paths[1]))
                await leader_of([node])
                offset = await node.append([b"r"])
                filler = fill(Path(node.config.metadata_log_dir))
                with pytest.raises(OSError) as failed:
                    await node.create_snapshot(offset + 1, [b"s" * 1000] * 3000)
                assert failed.value.errno == errno.ENOSPC
                part = metadata_partition_dir(node.config.metadata_log_dir)
                # Only the format's bootstrap snapshot: no .part left behind.
                assert [p.snapshot_id for p in list_snapshot_paths(part)] == [BOOTSTRAP_SNAPSHOT_ID]
                assert node.log.latest_snapshot_id() == BOOTSTRAP_SNAPSHOT_ID and node.role == "leader"
                filler.unlink()
                sid = await node.create_snapshot(offset + 1, [b"s" * 1000] * 3000)
                assert [p.snapshot_id for p in list_snapshot_paths(part)] == [BOOTSTRAP_SNAPSHOT_ID, sid]
                nursery.cancel_scope.cancel()


@pytest.mark.slow
async def test_snapshot_download_onto_a_full_disk_completes_when_space_returns(tmp_path: Path) -> None:
    """A follower whose disk cannot hold the leader's snapshot: every
    download fails (nothing half-installed, the node stays up) until the
    filesystem grows; then it installs the snapshot and catches up."""
    with small_filesystem(tmp_path / "node-3", "1m") as fs:
        paths = make_configs(tmp_path, [1, 2, 3], extra={"metadata.max.retention.bytes": "1"})
        with trio.fail_after(90):
            async with trio.open_nursery() as nursery:
                voters = [await start(nursery, node_config(paths[i])) for i in (1, 2)]
                state = [f"{i:06d}".encode() * 200 for i in range(1500)]  # 1.8 MB
                for round_ in range(2):
                    end = await append_until_ok(voters, [f"round-{round_}".encode()]) + 1
                    leader = await leader_of(voters)
                    sid = await leader.create_snapshot(end, state)
                assert leader.log.start_offset == sid.offset

                late = await start(nursery, node_config(paths[3], fetch_snapshot_max_bytes=256 * 1024))
                with trio.fail_after(30):
                    await until_async("late.raft_driver.storage_error is not None",
                                      lambda: late.raft_driver.storage_error is not None, interval_s=0.05)
                await trio.sleep(1)  # a few failed downloads
                assert late.log.latest_snapshot_id() == BOOTSTRAP_SNAPSHOT_ID and late.log.end_offset == 0
                done = subprocess.run(["mount", "-o", "remount,size=8m", str(fs)], capture_output=True, text=True)
                assert done.returncode == 0, done.stderr
                tail = await append_until_ok(voters, [b"after"])
                items, records = await history(late, tail)
                assert items[0].snapshot_id == sid and list(items[0].records) == state
                assert records[tail] == b"after"
                nursery.cancel_scope.cancel()


def test_restart_after_follower_appends_needs_no_index_repair(tmp_path: Path) -> None:
    """A follower appends what one Fetch returned: several batches at once.
    Its offset index must hold (last offset of a batch, position of that
    batch), as Kafka's LogSegment.append writes per batch, so that a restart
    after kill -9 finds nothing to rebuild (it used to index the last
    batch's offset at the first batch's position)."""
    mlog = MetadataLog.open(tmp_path / "__cluster_metadata-0")
    offset = 0
    for i in range(30):
        mlog.append_as_follower(b"".join(
            build_data_batch([b"x" * 100], base_offset=offset + j, epoch=1, timestamp=i) for j in range(3)))
        offset += 3
    assert len(mlog.segments[-1].index) > 1
    # No close: a kill -9 leaves the files as they are.
    reopened = MetadataLog.open(tmp_path / "__cluster_metadata-0")
    try:
        assert reopened.recovery_report.clean, reopened.recovery_report
        assert [b.base_offset for b in reopened.iter_batches(45)][:1] == [45]
    finally:
        reopened.close()
        mlog.close()
