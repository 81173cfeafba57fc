"""KIP-1170 (Kafka 4.4, "Unify cluster metadata bootstrapping"): ``kafka-storage
format`` of a controller writes the bootstrap metadata records (feature levels,
SCRAM credentials) into ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``,
after its KRaft control records, and no ``bootstrap.checkpoint`` (Kafka 4.4's
``Formatter.writeBoostrapSnapshot``: ``RecordsSnapshotWriter`` with the
kraft.version and voter set, then ``bootstrapMetadata.records()``); the
active controller then writes them to the log as before.

No Kafka 4.4 directory is among the shared fixtures, so :func:`write_kip1170_directory`
writes one with our own snapshot writer, and the readers are checked on it:
``kraft dump-log``, ``kraft storage info``, ``kraft shell --snapshot`` and
``--directory``, the records layer the node and the observer open a
directory with, and the Spark data source's planner and feature report.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
from kraft.messages.registry import message_class
from kraft.records.batch import Record, build_batch
from kraft.records.bootstrap import (
    DynamicVoter,
    bootstrap_records,
    default_feature_levels,
    voters_record,
)
from kraft.records.metadata import encode_metadata_record
from kraft.records.snapshot import BOOTSTRAP_SNAPSHOT_ID, SnapshotWriter
from kraft.records.state_files import CLUSTER_METADATA_DIR, MetaProperties, random_kafka_uuid
from kraft.records.view import OffsetAndEpoch
from tests.harness import cli

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
ZERO_CHECKPOINT = "00000000000000000000-0000000000.checkpoint"
TIME = 1_795_000_000_000


def write_kip1170_directory(log_dir: Path, *, node_id: int = 1, release: str = "4.1-IV1",
                            voters: list[DynamicVoter] | None = None, topic: str | None = "kip1170") -> Path:
    """A controller's metadata log directory as Kafka 4.4 formats it, then
    (with ``topic``) the log its first leader writes: the bootstrap records
    again at offset 0 (``QuorumController``'s bootstrap batch), then a topic."""
    pdir = log_dir / CLUSTER_METADATA_DIR
    pdir.mkdir(parents=True)
    voter = next((v for v in voters or [] if v.node_id == node_id), None)
    directory_id = voter.directory_id if voter else random_kafka_uuid()
    MetaProperties(1, CLUSTER, node_id, directory_id).write(log_dir / "meta.properties")
    records = bootstrap_records(release, default_feature_levels(release))
    writer = SnapshotWriter(pdir, BOOTSTRAP_SNAPSHOT_ID, last_contained_log_timestamp=TIME,
                            kraft_version=1 if voters else 0,
                            voters_record=voters_record(voters, "CONTROLLER") if voters else None,
                            clock_ms=lambda: TIME)
    with writer:
        writer.append([encode_metadata_record(r, 0) for r in records])
        writer.freeze()
    if topic is not None:
        topic_id = uuid.UUID(int=0x1170)
        values = [encode_metadata_record(r, 0) for r in records]
        values.append(encode_metadata_record(message_class("TopicRecord")(name=topic, topic_id=topic_id)))
        batch = build_batch([Record(i, TIME + 1, None, v) for i, v in enumerate(values)], base_offset=0,
                            partition_leader_epoch=1)
        (pdir / "00000000000000000000.log").write_bytes(batch)
    return log_dir


def _run(*args: str) -> tuple[str, str, int]:
    result = cli.invoke(list(args))
    return result.stdout, result.stderr, result.exit_code


@pytest.fixture(params=["static", "dynamic"])
def kip1170_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    voters = None
    if request.param == "dynamic":
        voters = [DynamicVoter(1, "localhost", 9093, uuid.UUID("5bd55abf-76d2-47f6-830f-518e560c573e"))]
    return write_kip1170_directory(tmp_path / "meta", voters=voters)


def test_dump_log_prints_the_bootstrap_records_of_the_zero_checkpoint(kip1170_dir: Path) -> None:
    zero = kip1170_dir / CLUSTER_METADATA_DIR / ZERO_CHECKPOINT
    out, err, code = _run("dump-log", "--cluster-metadata-decoder", "--files", str(zero))
    assert (err, code) == ("", 0)
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {zero}", "Snapshot end offset: 0, epoch: 0"]
    payloads = [line.split(" payload: ")[1] for line in lines if " payload: " in line]
    assert payloads[0] == '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":27}}'
    assert len(payloads) == 4  # metadata.version, eligible.leader.replicas.version, group.version, transaction.version
    assert " SnapshotHeader " in out and " SnapshotFooter " in out


def test_storage_info_reads_the_directory(kip1170_dir: Path) -> None:
    out, err, code = _run("storage", "info", "--directory", str(kip1170_dir))
    assert (err, code) == ("", 0), out
    assert out.startswith(f"Found log directory:\n  {kip1170_dir}\n\nFound metadata: {{cluster.id={CLUSTER}, ")


def test_the_shell_opens_the_zero_checkpoint_and_the_directory(kip1170_dir: Path) -> None:
    zero = kip1170_dir / CLUSTER_METADATA_DIR / ZERO_CHECKPOINT
    out, err, code = _run("shell", "--snapshot", str(zero), "cat", "/image/features/metadataVersion",
                          "/image/features/finalized_group.version")
    assert code == 0, err
    assert out == "Optional[4.1-IV1]\n1\n"
    out, err, code = _run("shell", "--directory", str(kip1170_dir), "cat", "/image/features/metadataVersion")
    assert (out, code) == ("Optional[4.1-IV1]\n", 0), err
    out, _, code = _run("shell", "--directory", str(kip1170_dir), "ls", "/image/topics/byName")
    assert (out, code) == ("kip1170\n", 0)


def test_a_freshly_formatted_directory_shows_its_bootstrap_features(tmp_path: Path) -> None:
    """Before the first leader wrote anything: the zero checkpoint alone
    (pre-KIP-1170 it held no metadata, and the image was empty)."""
    log_dir = write_kip1170_directory(tmp_path / "meta", topic=None)
    out, err, code = _run("shell", "--directory", str(log_dir), "cat", "/image/features/metadataVersion")
    assert (out, code) == ("Optional[4.1-IV1]\n", 0), err


def test_the_records_layer_opens_it(kip1170_dir: Path) -> None:
    """What a node and the observer open a directory with (recovery included)."""
    from kraft.records.log import MetadataLog

    with MetadataLog.open(kip1170_dir / CLUSTER_METADATA_DIR) as log:
        assert log.latest_snapshot_id() == OffsetAndEpoch(0, 0)
        assert (log.start_offset, log.end_offset) == (0, 5)


def test_spark_plans_the_zero_checkpoint(kip1170_dir: Path) -> None:
    """A snapshot at (0, 0), of the directory's cluster; its feature levels are
    the bootstrap ones in ``kraft spark report``'s feature_changes (test below)."""
    from kraft.tools.spark.plan import SEGMENT, SNAPSHOT, discover

    files = {Path(f.path).name: f for f in discover([str(kip1170_dir)])}
    assert sorted(files) == [ZERO_CHECKPOINT, "00000000000000000000.log"]
    zero = files[ZERO_CHECKPOINT]
    assert (zero.kind, zero.snapshot_end_offset, zero.snapshot_epoch, zero.cluster_id) == (SNAPSHOT, 0, 0, CLUSTER)
    assert files["00000000000000000000.log"].kind == SEGMENT
