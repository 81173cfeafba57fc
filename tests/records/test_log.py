"""MetadataLog: the __cluster_metadata partition directory as Kafka lays it
out, and the LogView the raft core reads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraft.records.batch import Record, iter_batches
from kraft.records.epoch_cache import EpochEntry
from kraft.records.errors import CorruptRecordError, LogOffsetError
from kraft.records.log import MetadataLog
from kraft.records.log_config import LogConfig
from kraft.records.snapshot import list_snapshot_paths
from kraft.records.view import LogView, OffsetAndEpoch
from tests.conftest import fixture_path
from tests.records.helpers import BASE_TS, copy_tree, make_batch, value_for


class Clock:
    def __init__(self, now: int = BASE_TS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _open(tmp_path: Path, clock: Clock | None = None, **config) -> MetadataLog:
    return MetadataLog.open(tmp_path / "__cluster_metadata-0", LogConfig(**config), clock_ms=clock or Clock())


def _fill(log: MetadataLog, epochs: list[tuple[int, int]], per_batch: int = 3) -> None:
    """Append batches of ``per_batch`` records: ``(epoch, number of batches)``."""
    for epoch, batches in epochs:
        for _ in range(batches):
            log.append_as_leader(make_batch(0, per_batch, timestamp=BASE_TS + log.end_offset), epoch)


def _read_all(log: MetadataLog) -> list[Record]:
    return [r for b in log.iter_batches() for r in b.records()]


def _takes_view(view: LogView) -> tuple[int, int, int]:
    return view.start_offset, view.end_offset, view.last_epoch


def test_layout_matches_kafka(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        _fill(log, [(1, 2), (3, 1)])
        assert _takes_view(log) == (0, 9, 3)
    d = tmp_path / "__cluster_metadata-0"
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
        "leader-epoch-checkpoint", "partition.metadata",
    ]
    assert (d / "leader-epoch-checkpoint").read_text() == "0\n2\n1 0\n3 6\n"
    assert (d / "partition.metadata").read_text() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"


def test_leader_append_assigns_offsets_and_epoch(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        info = log.append_as_leader(make_batch(1234, 4) + make_batch(77, 2), 5)
        assert (info.first_offset, info.last_offset) == (0, 5)
        batches = list(iter_batches(log.read(0, 1 << 20)))
        assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in batches] == [(0, 3, 5), (4, 5, 5)]
        assert all(b.is_valid() for b in batches)
        assert [r.offset for r in _read_all(log)] == list(range(6))


def test_follower_append_checks_continuity_epoch_and_crc(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        log.append_as_follower(make_batch(0, 2, epoch=2))
        with pytest.raises(LogOffsetError, match="does not continue"):
            log.append_as_follower(make_batch(5, 1, epoch=2))
        with pytest.raises(LogOffsetError, match="epoch"):
            log.append_as_follower(make_batch(2, 1, epoch=1))
        bad = bytearray(make_batch(2, 1, epoch=2))
        bad[-2] ^= 1
        with pytest.raises(CorruptRecordError, match="CRC"):
            log.append_as_follower(bytes(bad))
        with pytest.raises(ValueError):
            log.append_as_follower(b"")
        assert log.end_offset == 2


def test_read_returns_whole_batches_from_the_containing_batch(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        _fill(log, [(1, 10)])
        one = list(iter_batches(log.read(4, 1)))  # at least one batch even if max_bytes is tiny
        assert [(b.base_offset, b.last_offset) for b in one] == [(3, 5)]
        size = one[0].size_in_bytes
        two = list(iter_batches(log.read(4, 2 * size + 10)))
        assert [b.base_offset for b in two] == [3, 6]
        assert log.read(30, 100) == b""
        with pytest.raises(LogOffsetError):
            log.read(31, 100)


def test_roll_by_size_and_reads_across_segments(tmp_path: Path) -> None:
    with _open(tmp_path, segment_bytes=2000, index_interval_bytes=300) as log:
        _fill(log, [(1, 60)])
        bases = [s.base_offset for s in log.segments]
        assert len(bases) > 3 and bases[0] == 0
        assert all(s.size <= 2000 for s in log.segments)
        # every batch was built at offset 0 and renumbered by the leader append
        assert [r.value for r in _read_all(log)] == [value_for(i % 3) for i in range(180)]
        assert [r.offset for r in _read_all(log)] == list(range(180))
        for base in bases:
            batch = next(iter_batches(log.read(base, 1)))
            assert batch.base_offset == base
        sealed = log.segments[0]
        # every index entry points at the batch with that last offset
        data = sealed.log_path.read_bytes()
        by_pos = {b.position: b.last_offset for b in iter_batches(data)}
        assert sealed.index.entries and all(by_pos[p] == o for o, p in sealed.index.entries)
        # a sealed segment's time index ends with its max timestamp
        assert sealed.time_index.entries[-1][1] == max(by_pos.values())


def test_roll_by_time(tmp_path: Path) -> None:
    clock = Clock()
    with _open(tmp_path, clock, segment_ms=1000) as log:
        log.append_as_leader(make_batch(0, 1, timestamp=BASE_TS), 1)
        log.append_as_leader(make_batch(0, 1, timestamp=BASE_TS + 500), 1)
        assert len(log.segments) == 1
        log.append_as_leader(make_batch(0, 1, timestamp=BASE_TS + 1001), 1)
        assert [s.base_offset for s in log.segments] == [0, 2]


def test_truncate_within_and_across_segments(tmp_path: Path) -> None:
    with _open(tmp_path, segment_bytes=2000) as log:
        _fill(log, [(1, 20), (2, 20), (4, 20)])
        assert log.truncate_to(100) == 99  # the batch holding 100 (99..101) goes whole
        assert log.end_offset == 99 and log.last_epoch == 2
        assert log.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 60)]
        assert log.end_offset_for_epoch(4) == OffsetAndEpoch(99, 2)
        assert log.truncate_to(200) == 99  # past the end: nothing to do
        log.append_as_leader(make_batch(0, 3), 5)
        assert [r.offset for r in _read_all(log)] == list(range(102))
        with pytest.raises(LogOffsetError):
            log.truncate_to(-1)
    with _open(tmp_path, segment_bytes=2000) as log:  # and it is all still there after reopening
        assert log.end_offset == 102 and log.recovery_report.clean, str(log.recovery_report)


def test_end_offset_for_epoch_is_kip101(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        assert log.end_offset_for_epoch(0) == OffsetAndEpoch(-1, -1)  # empty log: no epoch at all
        _fill(log, [(2, 2), (5, 2)])
        assert log.end_offset_for_epoch(2) == OffsetAndEpoch(6, 2)
        assert log.end_offset_for_epoch(3) == OffsetAndEpoch(6, 2)  # largest known epoch <= 3
        assert log.end_offset_for_epoch(5) == OffsetAndEpoch(12, 5)
        assert log.end_offset_for_epoch(9) == OffsetAndEpoch(12, 5)
        assert log.end_offset_for_epoch(1) == OffsetAndEpoch(-1, -1)  # the log starts past it
        log.initialize_leader_epoch(6)  # a new leader: epoch 6 starts at the log end
        assert log.end_offset_for_epoch(5) == OffsetAndEpoch(12, 5)
        assert log.end_offset_for_epoch(6) == OffsetAndEpoch(12, 6)


def _snapshot(log: MetadataLog, offset: int, timestamp: int = BASE_TS) -> OffsetAndEpoch:
    sid = OffsetAndEpoch(offset, log.epoch_for_offset(offset - 1))
    with log.create_snapshot(sid, last_contained_log_timestamp=timestamp) as writer:
        writer.append([b"\x01\x14\x00\x00"] * 5)  # NoOpRecord frames
        writer.freeze()
    return sid


def test_snapshots_move_the_log_start_and_delete_old_segments(tmp_path: Path) -> None:
    with _open(tmp_path, segment_bytes=2000) as log:
        _fill(log, [(1, 40), (2, 40)])
        first = _snapshot(log, 60)
        second = _snapshot(log, 150)
        assert log.latest_snapshot_id() == second and log.snapshot_ids() == [first, second]
        assert log.earliest_snapshot_id() is None  # none sits at the log start (0)
        with pytest.raises(ValueError, match="not greater"):
            log.create_snapshot(OffsetAndEpoch(100, 1), last_contained_log_timestamp=0)
        segments_before = len(log.segments)
        assert log.delete_before_snapshot(second)
        assert log.start_offset == 150
        assert len(log.segments) < segments_before and log.segments[0].base_offset <= 150
        assert [p.snapshot_id for p in list_snapshot_paths(log.directory)] == [second]
        with pytest.raises(LogOffsetError):
            log.read(10, 100)
        assert next(iter_batches(log.read(150, 1))).last_offset >= 150
        assert not log.delete_before_snapshot(second)  # already there
        assert log.earliest_snapshot_id() == second
    with _open(tmp_path, segment_bytes=2000) as log:  # the start survives a restart
        assert log.start_offset == 150 and log.earliest_snapshot_id() == second
        assert log.epoch_entries[0].start_offset == 150


def test_snapshot_lifecycle_files(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        _fill(log, [(1, 4)])
        writer = log.create_snapshot(OffsetAndEpoch(6, 1), last_contained_log_timestamp=BASE_TS)
        part = log.directory / "00000000000000000006-0000000001.checkpoint.part"
        assert part.exists() and log.latest_snapshot_id() is None
        writer.freeze()
        assert not part.exists() and (log.directory / "00000000000000000006-0000000001.checkpoint").exists()
        reader = log.open_snapshot(OffsetAndEpoch(6, 1))
        assert reader is not None
        contents = reader.contents()
        assert contents.header.last_contained_log_timestamp == BASE_TS
        reader.close()
        whole = (log.directory / "00000000000000000006-0000000001.checkpoint").read_bytes()
        assert log.read_snapshot(OffsetAndEpoch(6, 1), 10, 7) == (len(whole), whole[10:17])
        assert log.read_snapshot(OffsetAndEpoch(6, 1), len(whole), 7) == (len(whole), b"")
        assert log.read_snapshot(OffsetAndEpoch(7, 1), 0, 7) is None
        aborted = log.create_snapshot(OffsetAndEpoch(9, 1), last_contained_log_timestamp=BASE_TS)
        aborted.abort()
        assert not (log.directory / "00000000000000000009-0000000001.checkpoint.part").exists()


def test_follower_snapshot_download_then_reopen_truncates_fully(tmp_path: Path) -> None:
    leader_dir = tmp_path / "leader"
    with MetadataLog.open(leader_dir, LogConfig()) as leader:
        _fill(leader, [(3, 10)])
        sid = _snapshot(leader, 30)
        size, first = leader.read_snapshot(sid, 0, 100)
        _, rest = leader.read_snapshot(sid, 100, 1 << 20)
        assert size == len(first) + len(rest)
    follower_dir = tmp_path / "follower"
    with MetadataLog.open(follower_dir, LogConfig()) as follower:
        _fill(follower, [(1, 2)])
        follower.write_snapshot_chunk(sid, 0, first[:50])
        follower.write_snapshot_chunk(sid, 0, first)  # position 0 starts afresh
        with pytest.raises(LogOffsetError, match="does not continue"):
            follower.write_snapshot_chunk(sid, 5000, rest)
        follower.write_snapshot_chunk(sid, 100, rest)
        follower.install_snapshot(sid)
        assert (follower.start_offset, follower.end_offset, follower.last_epoch) == (30, 30, 3)
        assert follower.earliest_snapshot_id() == sid
        assert follower.end_offset_for_epoch(3) == OffsetAndEpoch(-1, -1)  # no epoch written yet
        assert follower.end_offset_for_epoch(2) == OffsetAndEpoch(-1, -1)
        follower.append_as_follower(make_batch(30, 2, epoch=3))
        assert follower.end_offset == 32
    with MetadataLog.open(follower_dir, LogConfig()) as again:
        assert (again.start_offset, again.end_offset, again.latest_snapshot_id()) == (30, 32, sid)


def test_retention_by_size_keeps_at_least_one_snapshot(tmp_path: Path) -> None:
    with _open(tmp_path, segment_bytes=2000, retention_bytes=1) as log:
        _fill(log, [(1, 60)])
        _snapshot(log, 30)
        _snapshot(log, 90)
        s3 = _snapshot(log, 150)
        assert log.maybe_clean()
        assert log.snapshot_ids() == [s3]
        assert log.start_offset == 150
        assert not log.maybe_clean()  # one snapshot left: nothing more to do
        assert log.snapshot_ids() == [s3]


def test_retention_by_time(tmp_path: Path) -> None:
    clock = Clock(BASE_TS)
    with _open(tmp_path, clock, segment_bytes=2000, retention_ms=10_000, retention_bytes=-1) as log:
        _fill(log, [(1, 60)])
        _snapshot(log, 30, timestamp=BASE_TS)
        new = _snapshot(log, 90, timestamp=BASE_TS + 20_000)
        clock.now = BASE_TS + 5_000
        assert not log.maybe_clean()
        clock.now = BASE_TS + 15_000
        assert log.maybe_clean()
        assert log.snapshot_ids() == [new] and log.start_offset == 90
        clock.now = BASE_TS + 100_000  # the last snapshot is old too, but one always stays
        assert not log.maybe_clean() and log.snapshot_ids() == [new]


def test_opens_kafka_written_directories(tmp_path: Path) -> None:
    src = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0")
    d = copy_tree(src, tmp_path / "__cluster_metadata-0")
    with MetadataLog.open(d) as log:
        assert log.recovery_report.clean, str(log.recovery_report)
        assert (log.start_offset, log.end_offset, log.last_epoch) == (0, 30638, 190)
        assert log.latest_snapshot_id() == OffsetAndEpoch(28869, 189)
        assert log.end_offset_for_epoch(189) == OffsetAndEpoch(30637, 189)
        assert log.end_offset_for_epoch(188) == OffsetAndEpoch(27887, 186)
        assert len(log.epoch_entries) == 59
        assert sum(len(b.records()) for b in log.iter_batches()) == 30638


def test_opens_a_kafka_directory_whose_log_starts_later(tmp_path: Path) -> None:
    src = fixture_path("kafka-3.9-single-node", "commit-4bef72a", "data", "__cluster_metadata-0")
    d = copy_tree(src, tmp_path / "__cluster_metadata-0")
    with MetadataLog.open(d) as log:
        # Kafka's recoverSnapshots: snapshots before the first segment and the
        # .deleted leftover go; the log starts at the snapshot that covers it.
        assert log.snapshot_ids() == [OffsetAndEpoch(243115, 30)]
        assert (log.start_offset, log.end_offset, log.last_epoch) == (243115, 245533, 30)
        assert log.earliest_snapshot_id() == OffsetAndEpoch(243115, 30)
        assert log.epoch_entries == [EpochEntry(30, 243115)]
        assert not list(d.glob("*.checkpoint.deleted"))
        # The segment's index was not committed upstream: rebuilt. The orphaned
        # index of a deleted segment: removed.
        actions = {(Path(r.path).name, r.action) for r in log.recovery_report.repairs if not r.path.endswith("checkpoint")}
        assert actions == {
            ("00000000000000232914.index", "rebuilt offset and time indexes"),
            ("00000000000000000000.index", "deleted"),
            ("00000000000000000000.timeindex", "deleted"),
            ("00000000000000007207-0000000001.checkpoint.deleted", "deleted"),
        }, str(log.recovery_report)


def test_partition_metadata_for_another_topic_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAg")
    from kraft.records.errors import StateFileError

    with pytest.raises(StateFileError, match="does not match"):
        MetadataLog.open(d)
    assert os.listdir(d) == ["partition.metadata"]


def test_metadata_log_implements_the_log_view_protocol_exactly() -> None:
    import inspect

    for name, member in vars(LogView).items():
        if name.startswith("_"):
            continue
        ours = inspect.getattr_static(MetadataLog, name)
        if isinstance(member, property):
            assert isinstance(ours, property), name
        else:
            theirs_sig = inspect.signature(member)
            ours_sig = inspect.signature(ours)
            assert list(ours_sig.parameters) == list(theirs_sig.parameters), name


def test_leader_append_in_an_older_epoch_is_refused(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        log.append_as_leader(make_batch(0, 1), 4)
        with pytest.raises(LogOffsetError, match="below the log's latest epoch"):
            log.append_as_leader(make_batch(0, 1), 3)
        assert log.end_offset == 1


def test_truncation_below_the_latest_snapshot_is_refused(tmp_path: Path) -> None:
    with _open(tmp_path) as log:
        _fill(log, [(1, 10)])
        _snapshot(log, 15)
        with pytest.raises(LogOffsetError, match="latest snapshot"):
            log.truncate_to(12)
        assert log.truncate_to(21) == 21 and log.end_offset == 21



def test_disk_errors_name_the_file_and_operation_and_only_an_undone_write_is_known(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail-stop needs to know which failures left the disk in an unknown
    state: every fsync error is one (the kernel may have dropped the dirty
    pages), and so is a full disk refusing the epoch checkpoint written as
    part of an append; only a standalone temporary file (quorum-state) the
    disk refused leaves a known outcome."""
    import errno

    from kraft.records.batch import build_data_batch
    from kraft.records.errors import DiskIOError
    from kraft.records.fileutil import atomic_write

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    def full_write(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    mlog = MetadataLog.open(tmp_path / "__cluster_metadata-0")
    try:
        mlog.append_as_leader(build_data_batch([b"a"], base_offset=0, epoch=1, timestamp=1), 1)
        with monkeypatch.context() as m:
            m.setattr(os, "fsync", failing_fsync)
            with pytest.raises(DiskIOError) as failed:
                mlog.flush()
        assert failed.value.operation == "fsync" and not failed.value.rolled_back
        assert str(failed.value) == f"fsync of {mlog.segments[-1].log_path} failed: EIO (Input/output error)"
    finally:
        mlog.close()

    with monkeypatch.context() as m:
        m.setattr(os, "write", full_write)
        with pytest.raises(DiskIOError) as standalone:
            atomic_write(tmp_path / "state", b"x", standalone=True)
        with pytest.raises(DiskIOError) as part_of_more:
            atomic_write(tmp_path / "checkpoint", b"x")
    assert standalone.value.rolled_back and not part_of_more.value.rolled_back
    assert standalone.value.filename == str(tmp_path / "state.tmp")


def _append_voters(log: MetadataLog, voter_ids: list[int], *, kraft_version: int | None = None) -> int:
    """Append one control batch (a ``KRaftVersionRecord`` first if given,
    then a ``VotersRecord``) in epoch 1; returns the VotersRecord's offset."""
    from kraft.records.control import build_control_batch
    from kraft.records.kraft_control import kraft_version_record_of, voters_record_of
    from kraft.records.view import VoterEntry

    voters = [VoterEntry(i, None, (("CONTROLLER", "127.0.0.1", 9090 + i),), 0, 1) for i in voter_ids]
    messages = ([] if kraft_version is None else [kraft_version_record_of(kraft_version)]) + [voters_record_of(voters)]
    offset = log.end_offset
    log.append_as_leader(
        build_control_batch(messages, base_offset=0, partition_leader_epoch=1, timestamp=BASE_TS), 1
    )
    return offset + len(messages) - 1


def _voter_ids(voters_at: object) -> set[int] | None:
    return None if voters_at is None else {v.voter_id for v in voters_at.voters}  # type: ignore[attr-defined]


def test_retention_past_a_voter_change_drops_the_previous_voter_set(tmp_path: Path) -> None:
    """Log retention trims the control-record history as Kafka's
    ``KRaftControlRecordStateMachine.truncateOldEntries`` (``LogHistory``
    keeps only the latest entry below the new start), and the state the raft
    core reads (``kraft_control_state``) follows: the voter set the change
    replaced is gone with the log start that held it, exactly as after a
    restart, which rebuilds the history from the latest snapshot and the log."""
    with _open(tmp_path, segment_bytes=2000) as log:
        _append_voters(log, [1, 2, 3], kraft_version=1)
        _fill(log, [(1, 5)])
        change = _append_voters(log, [1, 2])
        _fill(log, [(1, 20)])
        before = log.kraft_control_state()
        assert (_voter_ids(before.voters), _voter_ids(before.previous_voters)) == ({1, 2}, {1, 2, 3})
        sid = _snapshot(log, 50)
        assert log.delete_before_snapshot(sid) and log.start_offset == 50 > change
        after = log.kraft_control_state()
        assert after is not before  # the core re-reads on a new object
        assert (_voter_ids(after.voters), _voter_ids(after.previous_voters), after.kraft_version) == ({1, 2}, None, 1)
        assert _voter_ids(log.kraft_control.voters_at(sid.offset - 1)) == {1, 2}
    with _open(tmp_path, segment_bytes=2000) as log:
        reopened = log.kraft_control_state()
        assert (_voter_ids(reopened.voters), _voter_ids(reopened.previous_voters), reopened.kraft_version) == (
            {1, 2}, None, 1)
