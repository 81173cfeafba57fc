"""The observer's bad inputs (issue 6), against real nodes: a full disk under
its local copy (a size-limited tmpfs, as tests/node/test_faults.py fills a
voter's), Ctrl-C in the middle of a snapshot download, the leader deleting
the snapshot being downloaded, and records newer than ours. After each, the
local copy is reopened with :class:`~kraft.records.log.MetadataLog` and
compared, offset by offset, with the leader's log: it is always a valid
prefix (same batches, byte for byte, from its log start; a snapshot the
leader took)."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from kraft.image.changes import Change, SnapshotChange, format_jsonl
from kraft.node.node import KraftNode
from kraft.programs.observer import Observer, open_observer
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.snapshot import PARTIAL_SUFFIX, SUFFIX, snapshot_file_name
from kraft.records.view import OffsetAndEpoch
from kraft.image.metadata_source import image_from_directory
from tests.harness.configs import (FAST_ELECTION, fast_configs, format_in_process, node_properties, static_voters,
                                   write_properties)
from tests.harness.inprocess import leader_of, node_config, start
from tests.harness import cli
from tests.harness.poll import until_async
from tests.image.records import partition, raw_record, rec, topic
from tests.node.test_faults import fill, small_filesystem

REPO = Path(__file__).resolve().parents[2]


def _bootstrap(node: KraftNode) -> str:
    return f"127.0.0.1:{node.ports['CONTROLLER']}"


def _config(i: int, size: int = 1000) -> bytes:
    """A topic config record of about ``size`` bytes (a page fills in a few)."""
    return rec("ConfigRecord", resource_type=2, resource_name="big", name=f"key.{i}", value="x" * size)


def _topic_records(name: str) -> list[bytes]:
    topic_id = uuid.uuid5(uuid.NAMESPACE_DNS, name)
    return [topic(name, topic_id), partition(topic_id, 0, [1])]


def _batches(mlog: MetadataLog) -> dict[int, bytes]:
    """base offset -> the batch's bytes."""
    return {b.base_offset: bytes(b.buffer[b.position:b.position + b.size_in_bytes]) for b in mlog.iter_batches()}


async def _leader_log(leader: KraftNode) -> tuple[dict[int, bytes], list[OffsetAndEpoch]]:
    assert leader.raft_driver is not None and leader.log is not None
    async with leader.raft_driver.log_lock:
        return _batches(leader.log), leader.log.snapshot_ids()


def assert_valid_prefix(copy_dir: Path, leader_batches: dict[int, bytes],
                        leader_snapshots: Sequence[OffsetAndEpoch] = ()) -> MetadataLog:
    """Reopen the observer's copy (closed first) and check it against the
    leader's log: every batch from the copy's log start is the leader's batch
    at that offset, with no gap, and a copy that starts past 0 starts at a
    snapshot the leader took. Returns the reopened log (close it)."""
    copy = MetadataLog.open(metadata_partition_dir(copy_dir))
    try:
        assert copy.recovery_report.clean, copy.recovery_report
        assert not list(copy.directory.glob("*" + PARTIAL_SUFFIX)), "a partial snapshot was left behind"
        ours = _batches(copy)
        expected = copy.start_offset
        for base, data in sorted(ours.items()):
            assert base == expected, f"the copy has a gap at {expected} (next batch at {base})"
            assert leader_batches.get(base) == data, f"the copy's batch at {base} is not the leader's"
            expected = copy.end_offset if base == max(ours) else min(o for o in ours if o > base)
        if copy.start_offset > 0:
            assert copy.latest_snapshot_id() in leader_snapshots, (copy.latest_snapshot_id(), leader_snapshots)
            assert copy.latest_snapshot_id().offset == copy.start_offset
    except BaseException:
        copy.close()
        raise
    return copy


async def _snapshot_past_the_log_start(leader: KraftNode, state: list[bytes], rounds: int = 2) -> OffsetAndEpoch:
    """Snapshots of ``state`` until retention (one byte) moved the leader's
    log start to the latest one: a fetch from offset 0 gets a snapshot id."""
    assert leader.log is not None
    for i in range(rounds):
        offset = await leader.append([rec("NoOpRecord")])
        sid = await leader.create_snapshot(offset + 1, state)
    assert leader.log.start_offset == sid.offset and leader.log.snapshot_ids() == [sid]
    return sid


# ---------------------------------------------------------------- a full disk


async def test_a_full_disk_stops_the_copy_the_image_is_still_served_and_it_recovers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """ENOSPC under the observer's copy: the follower append is rolled back,
    the observer says once that the copy cannot be written, its image stays
    where it was and is still served (image, committed stream); when space
    returns it catches up, and the copy is a valid prefix of the leader's log
    throughout."""
    caplog.set_level(logging.WARNING, logger="kraft")
    paths = fast_configs(tmp_path, [1])
    with small_filesystem(tmp_path / "fs", "2m") as fs, trio.fail_after(90):
        async with trio.open_nursery() as nursery:
            leader = await start(nursery, node_config(paths[1]))
            await leader_of([leader])
            await leader.append(_topic_records("before"))
            async with open_observer(_bootstrap(leader), data_dir=fs / "copy") as observer:
                before = await observer.catch_up()
                filler = fill(fs)
                # The leader commits on; the observer's copy needs a page it cannot get.
                i = 0
                while observer.storage_error is None:
                    last = await leader.append([_config(i)])
                    i += 1
                    await trio.sleep(0.01)
                await until_async("'cannot be written' in caplog.text",
                                  lambda: "cannot be written" in caplog.text, interval_s=0.05)
                assert "No space left on device" in str(observer.storage_error)
                stuck = observer.published
                assert before.offset <= stuck.offset < last

                # What it has is still served: the image, the stream up to it,
                # and the copy (as the node sees it) is the leader's prefix.
                assert (await observer.wait_for_offset(before.offset)).offset == stuck.offset
                seen = []
                async for change in observer.changes(0):
                    seen.append(change.offset)
                    if change.offset == stuck.offset:
                        break
                assert seen == list(range(stuck.offset + 1))
                theirs, _ = await _leader_log(leader)
                assert observer.node.log is not None
                async with observer.node.raft_driver.log_lock:
                    ours = _batches(observer.node.log)
                assert ours and all(theirs[o] == data for o, data in ours.items())
                assert observer.published.offset == stuck.offset  # nothing moved meanwhile
                said = [r for r in caplog.records if r.name == "kraft.observer" and "cannot be written" in r.getMessage()]
                assert len(said) == 1, said  # once, however many fetches failed

                # Space returns: it catches up and says so.
                filler.unlink()
                last = await leader.append([_config(i + 1)])
                image = await observer.wait_for_offset(last)
                await until_async("the observer writing again",
                                  lambda: observer.storage_error is None and "is written again" in caplog.text,
                                  interval_s=0.05)
                assert image == image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir),
                                                     up_to=image.offset)
            theirs, snapshots = await _leader_log(leader)
            nursery.cancel_scope.cancel()
        assert_valid_prefix(fs / "copy", theirs, snapshots).close()



@pytest.mark.slow
async def test_kraft_observe_on_a_full_disk_exits_with_a_message_and_resumes_later(tmp_path: Path) -> None:
    """``kraft observe`` whose --data-dir is full: a copy that cannot grow
    prints the image it has, says why it is not caught up and exits 1; a
    directory that cannot even be formatted is a one-line error, exit 1;
    with space back the same directory resumes. No traceback anywhere."""
    paths = fast_configs(tmp_path, [1])
    with small_filesystem(tmp_path / "fs", "2m") as fs, trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            leader = await start(nursery, node_config(paths[1]))
            await leader_of([leader])
            first = await leader.append(_topic_records("before"))
            copy = str(fs / "copy")
            ok = await cli.run_async("observe", "--bootstrap-controller", _bootstrap(leader),
                                     "--data-dir", copy, "--format", "json", "--timeout", "60", cwd=REPO)
            assert ok.returncode == 0, ok.stderr.decode()

            filler = fill(fs)
            for i in range(20):
                last = await leader.append([_config(i)])
            full = await cli.run_async("observe", "--bootstrap-controller", _bootstrap(leader),
                                       "--data-dir", copy, "--format", "json", "--timeout", "3", cwd=REPO)
            err = full.stderr.decode()
            assert full.returncode == 1, err
            assert "No space left on device" in err and "Traceback" not in err
            # Which write meets the full disk first decides how it ends: a segment
            # append the log cut back (a known outcome) keeps the image it has and
            # times out; a segment creation or an epoch checkpoint has an unknown
            # outcome, and the observer stops at once (fail-stop, as the node does).
            assert "not caught up after 3 s" in err or "the observer stopped" in err, err
            if "not caught up after 3 s" in err:
                held = json.loads(full.stdout)  # the image it has, at or past what the first run saw
                assert first <= held["provenance"]["lastContainedOffset"] < last

            fresh = await cli.run_async("observe", "--bootstrap-controller", _bootstrap(leader), "--data-dir",
                                        str(fs / "fresh"), "--timeout", "3", cwd=REPO)
            err = fresh.stderr.decode()
            assert fresh.returncode == 1 and "Traceback" not in err
            assert [line for line in err.splitlines() if line.startswith("Error: ")] == [
                next(line for line in err.splitlines() if "No space left on device" in line)]

            filler.unlink()
            back = await cli.run_async("observe", "--bootstrap-controller", _bootstrap(leader),
                                       "--data-dir", copy, "--format", "json", "--timeout", "60", cwd=REPO)
            assert back.returncode == 0, back.stderr.decode()
            image = json.loads(back.stdout)
            assert image["provenance"]["lastContainedOffset"] == last
            offline = image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir), up_to=last)
            assert image == {"clusterId": leader.cluster_id, **offline.to_json()}
            theirs, snapshots = await _leader_log(leader)
            nursery.cancel_scope.cancel()
        assert_valid_prefix(fs / "copy", theirs, snapshots).close()


# ---------------------------------------------------------------- snapshots


@pytest.mark.slow
async def test_ctrl_c_in_the_middle_of_a_snapshot_download(tmp_path: Path) -> None:
    """``kraft observe`` catching up through FetchSnapshot (2 KB a request, a
    3 MB snapshot: over a thousand round trips) gets SIGINT half-way: it
    exits 130 without a traceback, leaves no snapshot behind (the partial
    ``.checkpoint.part`` is deleted, none was taken as complete) and a valid
    (empty) copy; the next run downloads the snapshot and reaches the
    leader's image."""
    paths = fast_configs(tmp_path, [1], extra={"metadata.max.retention.bytes": "1"})
    copy = tmp_path / "copy"
    partition_dir = metadata_partition_dir(copy)
    with trio.fail_after(180):
        async with trio.open_nursery() as nursery:
            leader = await start(nursery, node_config(paths[1]))
            await leader_of([leader])
            await leader.append(_topic_records("in-the-log"))
            sid = await _snapshot_past_the_log_start(leader, [_config(i) for i in range(3000)])
            part = partition_dir / (snapshot_file_name(sid) + ".part")

            observe = await trio.lowlevel.open_process(
                [sys.executable, "-m", "kraft.cli", "observe", "--bootstrap-controller", _bootstrap(leader),
                 "--data-dir", str(copy), "--format", "json",
                 "--fetch-snapshot-max-bytes", "2048"],
                cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                def downloading() -> bool:
                    if part.exists() and part.stat().st_size > 0:
                        return True
                    assert observe.poll() is None, "the observer stopped before downloading"
                    return False

                await until_async("the observer to download a snapshot", downloading, interval_s=0.01)
                observe.send_signal(signal.SIGINT)
                assert observe.stderr is not None
                err = b""
                while chunk := await observe.stderr.receive_some(65536):
                    err += chunk
                status = await observe.wait()
            finally:
                if observe.returncode is None:
                    observe.kill()
                    await observe.wait()
            assert status == 130, err.decode()
            assert b"Traceback" not in err
            assert not list(partition_dir.glob("*" + SUFFIX + "*")), list(partition_dir.iterdir())
            theirs, snapshots = await _leader_log(leader)
            interrupted = assert_valid_prefix(copy, theirs, snapshots)
            assert interrupted.latest_snapshot_id() is None and interrupted.end_offset == 0
            interrupted.close()

            again = await cli.run_async("observe", "--bootstrap-controller", _bootstrap(leader),
                                        "--data-dir", str(copy), "--format", "json", "--timeout", "60", cwd=REPO)
            assert again.returncode == 0, again.stderr.decode()
            image = json.loads(again.stdout)
            offline = image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir))
            assert image == {"clusterId": image["clusterId"], **offline.to_json()}
            assert len(image["configs"]) > 0
            theirs, snapshots = await _leader_log(leader)
            nursery.cancel_scope.cancel()
    resumed = assert_valid_prefix(copy, theirs, snapshots)
    assert resumed.latest_snapshot_id() == sid
    resumed.close()


async def test_a_snapshot_deleted_mid_download_restarts_from_fetch(tmp_path: Path) -> None:
    """The leader takes a newer snapshot while the observer downloads the
    older one, and retention deletes it: FetchSnapshot answers
    SNAPSHOT_NOT_FOUND, the observer goes back to Fetch, gets the new
    snapshot id, drops the partial file of the old one and installs the new
    one; its image is the leader's."""
    paths = fast_configs(tmp_path, [1], extra={"metadata.max.retention.bytes": "1"})
    copy = tmp_path / "copy"
    partition_dir = metadata_partition_dir(copy)
    state = [_config(i) for i in range(3000)]  # 3 MB: 3000 requests of 1 KB
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            leader = await start(nursery, node_config(paths[1]))
            await leader_of([leader])
            first = await _snapshot_past_the_log_start(leader, state)
            observer = Observer(_bootstrap(leader), data_dir=copy,
                                quorum={"fetch_snapshot_max_bytes": 1024})
            await nursery.start(observer.run)
            part = partition_dir / (snapshot_file_name(first) + ".part")
            await until_async("part.exists() and part.stat().st_size != 0",
                              lambda: part.exists() and part.stat().st_size != 0, interval_s=0.01)

            offset = await leader.append(_topic_records("after"))
            second = await leader.create_snapshot(offset + 1, state + _topic_records("after"))
            assert leader.log is not None and leader.log.snapshot_ids() == [second]  # the first is gone
            assert observer.node.log.latest_snapshot_id() is None  # it was still downloading it

            image = await observer.wait_for_offset(second.offset - 1)
            assert observer.node.log.snapshot_ids() == [second]
            assert not list(partition_dir.glob("*" + PARTIAL_SUFFIX)), list(partition_dir.iterdir())
            assert image.topic("after") is not None
            assert image == image_from_directory(metadata_partition_dir(leader.config.metadata_log_dir),
                                                 up_to=image.offset)
            await observer.shutdown()
            theirs, snapshots = await _leader_log(leader)
            nursery.cancel_scope.cancel()
    assert_valid_prefix(copy, theirs, snapshots).close()


# ---------------------------------------------------------------- newer Kafka


async def test_records_newer_than_ours_are_shown_raw_and_leave_the_image_alone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A record type id we do not know (250) and a TopicRecord version above
    ours, as a newer Kafka writes them: the stream shows them raw with their
    type id, the image skips them (one warning per type and version, however
    many there are) and the copy holds them as the leader does."""
    caplog.set_level(logging.WARNING, logger="kraft")
    paths = fast_configs(tmp_path, [1])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            leader = await start(nursery, node_config(paths[1]))
            await leader_of([leader])
            await leader.append(_topic_records("known"))
            async with open_observer(_bootstrap(leader), data_dir=tmp_path / "copy") as observer:
                known = await observer.catch_up()
                newer = [raw_record(250, 0, b"\x01\x02"), raw_record(250, 0, b"\x03"), raw_record(2, 99)]
                last = await leader.append(newer)
                await leader.append([raw_record(250, 0)])
                last = await leader.append(_topic_records("later"))
                image = await observer.wait_for_offset(last)
                assert image.topic("later") is not None
                without_later = image_from_directory(
                    metadata_partition_dir(leader.config.metadata_log_dir), up_to=known.offset)
                assert known.content_equals(without_later)
                assert {t.name for t in image.topics.values()} == {"known", "later"}
                assert observer.builder.skipped_newer == {(250, 0): 3, (2, 99): 1}
                warnings = [r.getMessage() for r in caplog.records if "newer Kafka" in r.getMessage()]
                assert len(warnings) == 2, warnings

                raw: list[dict] = []
                async for change in observer.changes(known.offset + 1):
                    assert isinstance(change, Change) and not isinstance(change, SnapshotChange)
                    line = json.loads(format_jsonl(change))
                    if "typeId" in line:
                        raw.append(line)
                    if change.offset == last:
                        break
                assert [(r["typeId"], r["version"]) for r in raw] == [(250, 0), (250, 0), (2, 99), (250, 0)]
                assert all(r["type"].startswith("UNKNOWN_") or r["typeId"] == 2 for r in raw)
            theirs, snapshots = await _leader_log(leader)
            nursery.cancel_scope.cancel()
    assert_valid_prefix(tmp_path / "copy", theirs, snapshots).close()


# ---------------------------------------------------------------- another cluster


def _single_voter(root: Path, port: int, cluster_id: str) -> Path:
    """A one-controller cluster ``cluster_id`` on ``port``, formatted in-process."""
    root.mkdir(parents=True)
    path = write_properties(root / "server.properties", node_properties(
        1, port, static_voters({1: port}, [1]), root / "log", extra=FAST_ELECTION))
    format_in_process(cluster_id, 1, root / "log")
    return path


async def test_a_cluster_replaced_under_the_observer_stops_it_with_a_clear_message(tmp_path: Path) -> None:
    """The observed cluster goes away and another one (another cluster id)
    starts on the same address: its leader answers every Fetch with
    INCONSISTENT_CLUSTER_ID. Once nothing has committed for a while the
    observer asks DescribeCluster again and stops with ClusterIdMismatch
    naming both ids; its copy is still a valid prefix of the first cluster's
    log."""
    from kraft.programs.observer import ClusterIdMismatch
    from tests.harness.configs import CLUSTER_ID
    from tests.ports import free_ports

    other = "OtherClusterIdAAAAAAAA"
    [port] = free_ports(1)
    first = _single_voter(tmp_path / "first", port, CLUSTER_ID)
    second = _single_voter(tmp_path / "second", port, other)
    observer = Observer(f"127.0.0.1:{port}", data_dir=tmp_path / "copy", cluster_check_s=0.5)
    stopped: list[BaseException] = []

    async def observe(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            await observer.run(task_status=task_status)
        except BaseExceptionGroup as e:
            stopped.extend(e.exceptions)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            with trio.CancelScope() as first_cluster:
                async with trio.open_nursery() as inner:
                    leader = await start(inner, node_config(first))
                    await leader_of([leader])
                    last = await leader.append(_topic_records("first"))
                    await nursery.start(observe)
                    await observer.wait_for_offset(last)
                    theirs, snapshots = await _leader_log(leader)
                    first_cluster.cancel()
            assert not stopped  # the cluster being down is no reason to stop

            async with trio.open_nursery() as inner:
                replacement = await start(inner, node_config(second))
                await leader_of([replacement])
                await replacement.append(_topic_records("second"))
                await observer.stopped.wait()
                inner.cancel_scope.cancel()
            nursery.cancel_scope.cancel()
    leaves = [e for e in stopped if isinstance(e, ClusterIdMismatch)]
    assert len(leaves) == 1, stopped
    assert f"now has cluster id {other}, not {CLUSTER_ID}" in str(leaves[0])
    assert observer.image.topic("first") is not None and observer.image.topic("second") is None
    assert_valid_prefix(tmp_path / "copy", theirs, snapshots).close()
