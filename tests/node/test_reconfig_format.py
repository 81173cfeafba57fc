"""``kraft storage format --standalone`` / ``--initial-controllers`` write the
bootstrap voter set as Kafka 3.9+ does, and the log reads it back as the
voter set at offset -1 (KIP-853). Compared with what Kafka 4.1 wrote
(fixtures/kafka-4.1-standalone-dynamic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.records.control import decode_control_record
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.snapshot import validate_snapshot_bytes
from kraft.records.state_files import MetaProperties
from tests.conftest import FIXTURES
from tests.harness.configs import format_node, write_configs

FIXTURE = FIXTURES / "kafka-4.1-standalone-dynamic"  # resolved (tests/conftest.py)
BOOTSTRAP = "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"


def shape(path: Path) -> list[tuple[int, bool, int, list[str]]]:
    """(base offset, control, epoch, record types) of each batch."""
    contents = validate_snapshot_bytes(path.read_bytes(), str(path))
    return [
        (b.base_offset, b.is_control, b.partition_leader_epoch,
         [decode_control_record(r).type.name if b.is_control else "DATA" for r in b.records()])
        for b in contents.batches
    ]


def test_standalone_writes_the_bootstrap_voter_set_as_kafka_does(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # As Kafka 4.1, whose file the fixture is (4.4, the default, adds the
    # bootstrap records after the control batch: tests/tools/test_kip1170_layout.py).
    monkeypatch.setenv("KRAFT_KAFKA_VERSION", "4.1")
    paths, ports = write_configs(tmp_path, [1])
    format_node(paths[1], "--standalone")
    ours = tmp_path / "node-1" / BOOTSTRAP
    theirs = FIXTURE / BOOTSTRAP
    assert shape(ours) == shape(theirs) == [
        (0, True, 0, ["SNAPSHOT_HEADER", "KRAFT_VERSION", "KRAFT_VOTERS"]),
        (3, True, 0, ["SNAPSHOT_FOOTER"]),
    ]
    mine = validate_snapshot_bytes(ours.read_bytes())
    kafka = validate_snapshot_bytes(theirs.read_bytes())
    assert mine.kraft_version.k_raft_version == kafka.kraft_version.k_raft_version == 1
    [voter] = mine.voters.voters
    [kafka_voter] = kafka.voters.voters
    meta = MetaProperties.read(tmp_path / "node-1" / "meta.properties")
    assert voter.voter_id == 1 and voter.voter_directory_id == meta.directory_id
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "127.0.0.1", ports[1])]
    feature, kafka_feature = voter.k_raft_version_feature, kafka_voter.k_raft_version_feature
    assert (feature.min_supported_version, feature.max_supported_version) == (
        kafka_feature.min_supported_version, kafka_feature.max_supported_version) == (0, 1)


def test_the_log_reads_the_bootstrap_voters_at_offset_minus_one(tmp_path: Path) -> None:
    paths, ports = write_configs(tmp_path, [1, 2])
    format_node(paths[1], "--initial-controllers",
                f"1@127.0.0.1:{ports[1]}:K4WGSctTSGGjZPak68seiQ,2@127.0.0.1:{ports[2]}:yw4a23iaS5mT66QsYy0a5Q")
    with MetadataLog.open(metadata_partition_dir(tmp_path / "node-1")) as mlog:
        state = mlog.kraft_control_state()
    assert state.kraft_version == 1 and state.voters is not None and state.voters.offset == -1
    assert [(v.voter_id, v.endpoints) for v in state.voters.voters] == [
        (1, (("CONTROLLER", "127.0.0.1", ports[1]),)), (2, (("CONTROLLER", "127.0.0.1", ports[2]),))]


def test_kafkas_own_snapshot_gives_the_voter_set(tmp_path: Path) -> None:
    """A real Kafka 4.1 directory: the latest snapshot's VotersRecord is the
    voter set (at the snapshot's end offset - 1)."""
    import shutil

    copy = tmp_path / "kafka"
    shutil.copytree(FIXTURE, copy)
    with MetadataLog.open(metadata_partition_dir(copy)) as mlog:
        state = mlog.kraft_control_state()
    meta = MetaProperties.read(copy / "meta.properties")
    assert state.kraft_version == 1 and state.voters is not None
    assert state.voters.offset == 7205
    [voter] = state.voters.voters
    assert voter.voter_id == 1 and voter.directory_id == meta.directory_id
    assert voter.endpoints == (("CONTROLLER", "localhost", 9093),)


def test_the_metadata_log_keeps_the_voter_history_through_truncation_snapshots_and_restarts(tmp_path: Path) -> None:
    """KIP-853 on disk: a VotersRecord counts as soon as it is appended,
    truncation reverts it, a snapshot carries the voter set at its end
    offset, and reopening the log reads it all back."""
    import uuid

    from kraft.raft.logops import Batch, KRaftVersionControl, LeaderChangeMessage, VotersControl
    from kraft.node.control_records import encode_control_batch
    from kraft.records.batch import build_data_batch
    from kraft.records.view import OffsetAndEpoch, VoterEntry

    def voters(*ids: int) -> VotersControl:
        return VotersControl(tuple(VoterEntry(i, uuid.UUID(int=i), (("CONTROLLER", "h", 9000 + i),), 0, 1)
                                   for i in ids))

    directory = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(directory) as mlog:
        mlog.append_as_leader(encode_control_batch(Batch(0, 1, controls=(
            LeaderChangeMessage(1, (1,), (1,)), KRaftVersionControl(1), voters(1)), append_time_ms=1)), 1)
        mlog.append_as_leader(build_data_batch([b"a"], base_offset=3, epoch=1, timestamp=1), 1)
        mlog.append_as_leader(encode_control_batch(Batch(4, 1, controls=(voters(1, 2),), append_time_ms=1)), 1)
        state = mlog.kraft_control_state()
        assert state.kraft_version == 1 and state.voters.offset == 4 and len(state.voters.voters) == 2
        assert state.previous_voters is not None and state.previous_voters.offset == 2
        mlog.truncate_to(4)
        assert mlog.kraft_control_state().voters.offset == 2  # reverted
        mlog.append_as_leader(encode_control_batch(Batch(4, 2, controls=(voters(1, 3),), append_time_ms=1)), 2)
        mlog.append_as_leader(build_data_batch([b"b"], base_offset=5, epoch=2, timestamp=1), 2)
        writer = mlog.create_snapshot(OffsetAndEpoch(6, 2), last_contained_log_timestamp=1)
        with writer:
            writer.append([b"state"])
            snapshot = writer.freeze()
    contents = validate_snapshot_bytes(snapshot.read_bytes())
    assert contents.kraft_version.k_raft_version == 1
    assert [v.voter_id for v in contents.voters.voters] == [1, 3]
    with MetadataLog.open(directory) as mlog:
        # Reopened: the latest snapshot's voters (at its end offset - 1), then the log after it.
        state = mlog.kraft_control_state()
        assert state.voters.offset == 5 and [v.voter_id for v in state.voters.voters] == [1, 3]
    # A follower that installs the snapshot learns the voters from it.
    other = tmp_path / "other" / "__cluster_metadata-0"
    with MetadataLog.open(other) as mlog:
        data = snapshot.read_bytes()
        mlog.write_snapshot_chunk(OffsetAndEpoch(6, 2), 0, data)
        mlog.install_snapshot(OffsetAndEpoch(6, 2))
        state = mlog.kraft_control_state()
        assert state.voters.offset == 5 and [v.voter_id for v in state.voters.voters] == [1, 3]
