"""quorum-state, meta.properties and partition.metadata: byte-compatible with
the files Kafka writes, durable writes, typed errors on bad files."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraft.records.errors import StateFileError
from kraft.records.state_files import (
    METADATA_TOPIC_ID,
    MetaProperties,
    QuorumStateFile,
    QuorumStateFileData,
    format_partition_metadata,
    parse_java_properties,
    random_cluster_id,
    random_kafka_uuid,
    read_partition_metadata,
    uuid_from_kafka,
    uuid_to_kafka,
    write_partition_metadata,
)
from tests.conftest import fixture_path


def _quorum_state_files() -> list[Path]:
    return sorted(fixture_path().rglob("quorum-state"))


def test_quorum_state_fixtures_round_trip_byte_for_byte() -> None:
    files = _quorum_state_files()
    versions = set()
    for path in files:
        text = path.read_text()
        state = QuorumStateFileData.from_json(text, str(path))
        assert state.to_json() == text, path
        versions.add(state.data_version)
    assert versions == {0, 1}


def test_quorum_state_v0_fields() -> None:
    path = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0", "quorum-state")
    state = QuorumStateFile(path).read()
    assert state == QuorumStateFileData(leader_id=1, leader_epoch=190, voted_id=-1, current_voters=(1, 2, 3),
                                        cluster_id="", applied_offset=0, data_version=0)


def test_quorum_state_v1_layout(tmp_path: Path) -> None:
    directory = uuid.UUID(int=12345)
    store = QuorumStateFile(tmp_path / "quorum-state")
    assert store.read() is None
    store.write(QuorumStateFileData(leader_id=-1, leader_epoch=4, voted_id=2, voted_directory_id=directory))
    assert (tmp_path / "quorum-state").read_text() == (
        f'{{"leaderId":-1,"leaderEpoch":4,"votedId":2,"votedDirectoryId":"{uuid_to_kafka(directory)}","data_version":1}}'
    )
    assert store.read().voted_directory_id == directory
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_quorum_state_write_replaces_atomically(tmp_path: Path) -> None:
    store = QuorumStateFile(tmp_path / "quorum-state")
    for epoch in range(1, 30):
        store.write(QuorumStateFileData(leader_id=1, leader_epoch=epoch))
        assert store.read().leader_epoch == epoch
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quorum-state"]


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "JSON"),
        ("[]", "object"),
        ('{"leaderId":1,"leaderEpoch":1,"votedId":-1}', "data_version"),
        ('{"leaderEpoch":1,"votedId":-1,"data_version":1}', "leaderId"),
        ('{"leaderId":"x","leaderEpoch":1,"votedId":-1,"data_version":1}', "integer"),
        ('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"data_version":7}', "data_version 7"),
        ('{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"nope","data_version":1}', "uuid"),
    ],
)
def test_bad_quorum_state_is_a_typed_error(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "quorum-state"
    path.write_text(text)
    with pytest.raises(StateFileError, match=reason) as info:
        QuorumStateFile(path).read()
    assert str(path) in str(info.value)


def test_meta_properties_fixtures_parse() -> None:
    found = sorted(fixture_path().rglob("meta.properties"))
    assert found
    for path in found:
        props = MetaProperties.read(path)
        assert props.version == 1 and props.node_id in (1, 2, 3, 4) and props.cluster_id
    # The real Kafka 4.0.0 set names each directory after its node (controller1 ... broker4).
    for path in fixture_path("kafka-4.0-real").glob("*[0-9]/meta.properties"):
        assert MetaProperties.read(path).node_id == int(path.parent.name[-1]), path
    quirky = MetaProperties.read(fixture_path("kafka-4.1-standalone-dynamic", "meta.properties"))
    assert quirky.cluster_id == "B2B767AD-5B11-493C-A724-70595A9A0DD9"  # not base64, kept as is
    assert uuid_to_kafka(quirky.directory_id) == "K4WGSctTSGGjZPak68seiQ"
    old = MetaProperties.read(fixture_path("kafka-3.5-three-node", "node1", "meta.properties"))
    assert old.directory_id is None


def test_meta_properties_write_is_java_properties(tmp_path: Path) -> None:
    directory = random_kafka_uuid()
    MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qk", 3, directory).write(tmp_path / "meta.properties")
    lines = (tmp_path / "meta.properties").read_text().splitlines()
    assert lines[0] == "#" and lines[1].startswith("#")
    assert lines[2:] == ["cluster.id=MkU3OEVBNTcwNTJENDM2Qk", f"directory.id={uuid_to_kafka(directory)}",
                         "node.id=3", "version=1"]
    assert MetaProperties.read(tmp_path / "meta.properties").directory_id == directory


def test_java_properties_syntax() -> None:
    props = parse_java_properties("# c\n! c\n a = b \nc:d\ne f\nlong=one\\\n  two\nesc=a\\:b\\u00e9\nempty=\n")
    assert props == {"a": "b ", "c": "d", "e": "f", "long": "onetwo", "esc": "a:bé", "empty": ""}


@pytest.mark.parametrize("text, reason", [("node.id=1\n", "version"), ("version=1\ncluster.id=x\n", "node.id"),
                                          ("version=1\nnode.id=x\ncluster.id=c\n", "node.id"),
                                          ("version=1\nnode.id=1\n", "cluster.id")])
def test_bad_meta_properties(tmp_path: Path, text: str, reason: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(StateFileError, match=reason):
        MetaProperties.read(tmp_path / "meta.properties")


def test_partition_metadata_matches_kafka_bytes(tmp_path: Path) -> None:
    fixture = fixture_path("kafka-3x-single-node", "__cluster_metadata-0", "partition.metadata")
    assert format_partition_metadata(METADATA_TOPIC_ID).encode() == fixture.read_bytes()
    assert read_partition_metadata(fixture) == METADATA_TOPIC_ID
    write_partition_metadata(tmp_path / "partition.metadata")
    assert (tmp_path / "partition.metadata").read_bytes() == fixture.read_bytes()
    (tmp_path / "partition.metadata").write_text("version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    with pytest.raises(StateFileError, match="version"):
        read_partition_metadata(tmp_path / "partition.metadata")


def test_kafka_uuid_strings() -> None:
    assert uuid_to_kafka(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    for _ in range(200):
        u = random_kafka_uuid()
        assert not uuid_to_kafka(u).startswith("-")
        assert uuid_from_kafka(uuid_to_kafka(u)) == u
    with pytest.raises(ValueError):
        uuid_from_kafka("short")


def test_quorum_state_json_is_kafkas_json_converter_form() -> None:
    """Our writer and the generated QuorumStateData's JSON form agree."""
    from kraft.messages.generated.quorum_state_data import QuorumStateData, Voter
    from kraft.messages.json_form import to_json
    import json

    v0 = QuorumStateFileData(leader_id=3, leader_epoch=9, voted_id=2, current_voters=(1, 2, 3), data_version=0)
    generated = QuorumStateData(cluster_id="", leader_id=3, leader_epoch=9, voted_id=2, applied_offset=0,
                                current_voters=[Voter(voter_id=i) for i in (1, 2, 3)])
    assert json.loads(v0.to_json()) == {**to_json(generated, 0), "data_version": 0}
    directory = uuid.UUID(int=77)
    v1 = QuorumStateFileData(leader_id=-1, leader_epoch=4, voted_id=2, voted_directory_id=directory)
    generated = QuorumStateData(leader_id=-1, leader_epoch=4, voted_id=2, voted_directory_id=directory)
    assert json.loads(v1.to_json()) == {**to_json(generated, 1), "data_version": 1}


def test_every_new_cluster_id_is_drawn_as_kafka_draws_one() -> None:
    """A cluster id drawn by hand (base64 of uuid4) starts with '-' once in
    64 draws, and ``kafka-storage format -t -...`` then fails: "argument
    --cluster-id/-t: expected one argument" (a quickstart failed so). Every
    module draws one with :func:`random_cluster_id` (Kafka's
    ``Uuid.randomUuid``, which redraws such an id)."""
    root = Path(__file__).resolve().parents[2]
    by_hand = "urlsafe_b64encode(" + "uuid.uuid4()"  # split, so that this file does not match
    hand_drawn = [str(p.relative_to(root)) for d in ("kraft", "tools", "records", "wire", "messages", "tests")
                  for p in (root / d).rglob("*.py")
                  if by_hand in p.read_text(encoding="utf-8")]
    assert hand_drawn == []
    assert all(not random_cluster_id().startswith("-") and len(random_cluster_id()) == 22 for _ in range(200))


def test_a_drawn_id_starting_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's ``Uuid.randomUuid`` draws again for an id whose string form
    starts with "-": kafka-storage format -t would read it as an option."""
    from kraft.records import state_files

    drawn = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(state_files.uuid, "uuid4", lambda: next(drawn))
    assert random_cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"
