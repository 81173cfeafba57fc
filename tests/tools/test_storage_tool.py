"""``kraft storage``: format / random-uuid / info, mirroring kafka-storage.sh."""

from __future__ import annotations

from pathlib import Path

import pytest
from kraft.records.bootstrap import bootstrap_metadata_path, read_bootstrap_checkpoint, read_bootstrap_metadata
from kraft.records.log import MetadataLog
from kraft.records.snapshot import validate_snapshot_bytes
from kraft.records.state_files import MetaProperties, uuid_from_kafka, uuid_to_kafka
from kraft.records.view import OffsetAndEpoch
from tests.conftest import fixture_path
from tests.harness import cli

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def _run(*args: str):
    return cli.invoke(["storage", *args])


def _data_values(path: Path) -> list[bytes]:
    return [r.value for r in validate_snapshot_bytes(path.read_bytes()).data_records()]


def test_random_uuid() -> None:
    result = _run("random-uuid")
    assert result.exit_code == 0
    text = result.output.strip()
    assert len(text) == 22 and uuid_to_kafka(uuid_from_kafka(text)) == text


def test_format_static_quorum(tmp_path: Path) -> None:
    meta = tmp_path / "meta"
    result = _run("format", "--kafka-version", "4.1", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(meta))
    assert result.exit_code == 0, result.output
    # Kafka 4.0.0 and 4.1.0 print one line per directory (4.4.0 prints a
    # "Bootstrap metadata:" line first: the test below).
    assert result.output.splitlines() == [f"Formatting metadata directory {meta} with metadata.version 4.1-IV1."]
    props = MetaProperties.read(meta / "meta.properties")
    assert (props.version, props.cluster_id, props.node_id) == (1, CLUSTER, 1) and props.directory_id is not None
    assert sorted(p.name for p in meta.iterdir()) == [".lock", "bootstrap.checkpoint", "meta.properties"]
    names = [m.name for m in read_bootstrap_checkpoint(meta / "bootstrap.checkpoint")]
    # Kafka 4.1's 4.1-IV1 defaults: eligible.leader.replicas.version 1 too (0, not written, in 4.0-IV3).
    assert names == ["metadata.version", "eligible.leader.replicas.version", "group.version", "transaction.version"]


def test_format_as_kafka_44_prints_the_bootstrap_metadata_and_names_its_layout(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka 4.4 (the default) prints ``BootstrapMetadata.toString`` first
    and writes the KIP-1170 layout (the bootstrap records in the 0-0
    snapshot, no bootstrap.checkpoint), named or not; 4.3 writes
    bootstrap.checkpoint (live:
    tests/kafka/test_storage_format_live.py)."""
    monkeypatch.delenv("KRAFT_KAFKA_VERSION", raising=False)
    default, named, older = tmp_path / "default", tmp_path / "named", tmp_path / "older"
    first = _run("format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(default))
    second = _run("format", "--kafka-version", "4.4", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(named))
    third = _run("format", "--kafka-version", "4.3", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(older))
    assert first.exit_code == second.exit_code == 0 and third.exit_code == 0, first.output + second.output + third.output
    for result, meta in ((first, default), (second, named)):
        bootstrap, formatting = result.output.splitlines()
        assert bootstrap.startswith("Bootstrap metadata: BootstrapMetadata(records=[ApiMessageAndVersion("
                                    "FeatureLevelRecord(name='metadata.version', featureLevel=33) at version 0), ")
        assert bootstrap.endswith("], metadataVersionLevel=33, source=format command)")
        assert formatting == f"Formatting metadata directory {meta} with metadata.version 4.4-IV2."
        assert sorted(p.name for p in meta.iterdir()) == [".lock", "__cluster_metadata-0", "meta.properties"]
    assert sorted(p.name for p in older.iterdir()) == [".lock", "bootstrap.checkpoint", "meta.properties"]
    snapshot = default / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert _data_values(snapshot) == _data_values(named / "__cluster_metadata-0" / snapshot.name)
    # Either layout reads back as its bootstrap records (the control records left out).
    assert read_bootstrap_metadata(default) == read_bootstrap_checkpoint(snapshot)
    assert [r.name for r in read_bootstrap_metadata(default)][0] == "metadata.version"
    assert read_bootstrap_metadata(older) == read_bootstrap_checkpoint(older / "bootstrap.checkpoint")
    assert bootstrap_metadata_path(default) == snapshot and bootstrap_metadata_path(older) == older / "bootstrap.checkpoint"
    assert bootstrap_metadata_path(tmp_path) is None and read_bootstrap_metadata(tmp_path) == []


def test_bootstrap_records_match_kafkas_for_the_same_release(tmp_path: Path) -> None:
    for release, fixture in (("3.9", ("kafka-3.9-single-node", "commit-4bef72a", "data", "bootstrap.checkpoint")),
                             ("3.5", ("kafka-3.5-three-node", "node1", "bootstrap.checkpoint")),
                             ("4.1-IV1", ("kafka-4.1-standalone-dynamic", "bootstrap.checkpoint"))):
        meta = tmp_path / release
        result = _run("format", "--kafka-version", "4.3", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir",
                      str(meta), "-r", release)
        assert result.exit_code == 0, result.output
        assert _data_values(meta / "bootstrap.checkpoint") == _data_values(fixture_path(*fixture)), release


def test_format_standalone_writes_the_kip853_bootstrap_snapshot(tmp_path: Path) -> None:
    meta = tmp_path / "meta"
    result = _run("format", "--kafka-version", "4.1", "-t", CLUSTER, "--node-id", "3", "--metadata-log-dir",
                  str(meta), "--standalone", "--controller-endpoint", "localhost:9093")
    assert result.exit_code == 0, result.output
    assert f"Formatting dynamic metadata voter directory {meta} with metadata.version 4.1-IV1." in result.output
    snapshot = meta / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    contents = validate_snapshot_bytes(snapshot.read_bytes())
    [voter] = contents.voters.voters
    props = MetaProperties.read(meta / "meta.properties")
    assert voter.voter_id == 3 and voter.voter_directory_id == props.directory_id
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "localhost", 9093)]
    assert contents.kraft_version.k_raft_version == 1
    # Same shape as the file Kafka 4.1 wrote for its --standalone format.
    kafka = validate_snapshot_bytes(fixture_path("kafka-4.1-standalone-dynamic", "__cluster_metadata-0",
                                                "00000000000000000000-0000000000.checkpoint").read_bytes())
    assert [(b.records_count, b.is_control) for b in contents.batches] == [(b.records_count, b.is_control) for b in kafka.batches]
    with MetadataLog.open(meta / "__cluster_metadata-0") as log:
        assert log.latest_snapshot_id() == OffsetAndEpoch(0, 0)
        assert (log.start_offset, log.end_offset, log.last_epoch) == (0, 0, 0)


def test_format_initial_controllers(tmp_path: Path) -> None:
    dirs = ["JEXY6aqzQY-32P5TStzaFg", "MvDxzVmcRsaTz33bUuRU6A", "07R5amHmR32VDA6jHkGbTA"]
    spec = ",".join(f"{i}@localhost:{8082 + i}:{d}" for i, d in enumerate(dirs))
    voter_dir, observer_dir = tmp_path / "voter", tmp_path / "observer"
    assert _run("format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(voter_dir), "-I", spec).exit_code == 0
    assert uuid_to_kafka(MetaProperties.read(voter_dir / "meta.properties").directory_id) == dirs[1]
    result = _run("format", "-t", CLUSTER, "--node-id", "7", "--metadata-log-dir", str(observer_dir), "-I", spec)
    assert "Formatting dynamic metadata directory" in result.output
    snapshot = observer_dir / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    assert [v.voter_id for v in validate_snapshot_bytes(snapshot.read_bytes()).voters.voters] == [0, 1, 2]
    bad = _run("format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(tmp_path / "x"), "-I", "1@host")
    assert bad.exit_code == 1 and "No colon following hostname could be found." in bad.output


def test_already_formatted(tmp_path: Path) -> None:
    meta = tmp_path / "meta"
    args = ["format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(meta)]
    assert _run(*args).exit_code == 0
    again = _run(*args)
    assert again.exit_code == 1
    assert f"Log directory {meta} is already formatted. Use --ignore-formatted" in again.output
    assert _run(*args, "--ignore-formatted").output.strip() == "All of the log directories are already formatted."
    other = _run("format", "-t", "other", "--node-id", "1", "--metadata-log-dir", str(meta), "-g")
    assert other.exit_code == 1 and "Invalid cluster.id" in other.output


def test_format_from_server_properties(tmp_path: Path) -> None:
    data1, data2, meta = tmp_path / "d1", tmp_path / "d2", tmp_path / "meta"
    config = tmp_path / "server.properties"
    config.write_text(
        "process.roles=controller\nnode.id=2\n"
        f"log.dirs={data1},{data2}\nmetadata.log.dir={meta}\n"
        "listeners=CONTROLLER://127.0.0.1:19093\ncontroller.listener.names=CONTROLLER\n"
        "controller.quorum.bootstrap.servers=127.0.0.1:19093\n"
    )
    result = _run("format", "-c", str(config), "-t", CLUSTER, "--standalone")
    assert result.exit_code == 0, result.output
    assert f"Formatting data directory {data1} with metadata.version" in result.output
    assert f"Formatting dynamic metadata voter directory {meta} with metadata.version" in result.output
    ids = {MetaProperties.read(d / "meta.properties").directory_id for d in (data1, data2, meta)}
    assert len(ids) == 3  # every directory gets its own directory.id
    snapshot = meta / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    [voter] = validate_snapshot_bytes(snapshot.read_bytes()).voters.voters
    assert [(e.host, e.port) for e in voter.endpoints] == [("127.0.0.1", 19093)]
    static = tmp_path / "static.properties"
    static.write_text(config.read_text().replace(str(meta), str(tmp_path / "fresh"))
                      + "controller.quorum.voters=2@127.0.0.1:19093\n")
    refused = _run("format", "-c", str(static), "-t", CLUSTER, "--standalone", "-g")
    assert refused.exit_code == 1 and "controller.quorum.voters" in refused.output


def test_info(tmp_path: Path) -> None:
    meta = tmp_path / "meta"
    _run("format", "-t", CLUSTER, "--node-id", "1", "--metadata-log-dir", str(meta))
    props = MetaProperties.read(meta / "meta.properties")
    result = _run("info", "-d", str(meta))
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        "Found log directory:", f"  {meta}", "",
        f"Found metadata: {{cluster.id={CLUSTER}, directory.id={uuid_to_kafka(props.directory_id)}, node.id=1, version=1}}",
        "",
    ]
    missing = tmp_path / "missing"
    result = _run("info", "-d", str(meta), "-d", str(missing))
    assert result.exit_code == 1
    assert result.output.splitlines()[-3:] == ["Found problem:", f"  {missing} does not exist", ""]
