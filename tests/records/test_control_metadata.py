"""Control record keys/values and the metadata record frame."""

from __future__ import annotations

import pytest

from kraft.records.batch import Record, RecordBatch
from kraft.records.control import (
    ControlRecordError,
    ControlRecordType,
    EndTransactionMarker,
    build_control_batch,
    decode_control_record,
    parse_control_type_id,
)
from kraft.records.metadata import (
    MetadataRecordError,
    decode_metadata_record,
    encode_metadata_record,
    kafka_snake_upper,
    metadata_payload_json,
)


def test_control_types_and_keys() -> None:
    assert [t.value for t in ControlRecordType if t.value >= 0] == [0, 1, 2, 3, 4, 5, 6]
    assert parse_control_type_id(b"\x00\x00\x00\x06") == 6
    assert ControlRecordType.from_type_id(42) is ControlRecordType.UNKNOWN
    with pytest.raises(ControlRecordError, match="key size"):
        parse_control_type_id(b"\x00")
    with pytest.raises(ControlRecordError, match="version"):
        parse_control_type_id(b"\xff\xff\x00\x01")


def test_end_transaction_marker_layout() -> None:
    marker = EndTransactionMarker(ControlRecordType.ABORT, 12)
    assert marker.encode_value() == b"\x00\x00\x00\x00\x00\x0c"
    batch = RecordBatch.parse(build_control_batch([marker], base_offset=3, partition_leader_epoch=2, timestamp=5))
    assert batch.is_control
    [record] = batch.records()
    assert record.key == b"\x00\x00\x00\x00"
    assert decode_control_record(record).message == marker


def test_leader_change_batch_round_trips() -> None:
    from kraft.messages.generated import leader_change_message as lcm

    msg = lcm.LeaderChangeMessage(version=0, leader_id=3, voters=[lcm.Voter(voter_id=3)], granting_voters=[lcm.Voter(voter_id=3)])
    batch = RecordBatch.parse(build_control_batch([msg], base_offset=10, partition_leader_epoch=4, timestamp=7))
    control = decode_control_record(batch.records()[0])
    assert control.type is ControlRecordType.LEADER_CHANGE and control.message == msg


def test_bad_control_values_are_typed_errors() -> None:
    with pytest.raises(ControlRecordError):
        decode_control_record(Record(0, 0, b"\x00\x00\x00\x02", b"\x00"))
    with pytest.raises(ControlRecordError):
        decode_control_record(Record(0, 0, b"\x00\x00\x00\x01", b"\x00"))
    assert decode_control_record(Record(0, 0, b"\x00\x00\x00\x63", b"x")).message is None


def test_metadata_frame() -> None:
    from kraft.messages.generated import topic_record
    import uuid

    msg = topic_record.TopicRecord(name="foo", topic_id=uuid.UUID(int=5))
    value = encode_metadata_record(msg, 0)
    assert value[:3] == b"\x01\x02\x00"  # frame version 1, type 2 (TopicRecord), version 0
    decoded = decode_metadata_record(value)
    assert (decoded.api_key, decoded.version, decoded.message, decoded.type_name) == (2, 0, msg, "TOPIC_RECORD")
    payload = metadata_payload_json(value)
    assert payload == {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "foo", "topicId": "AAAAAAAAAAAAAAAAAAAABQ"}}


@pytest.mark.parametrize("value, reason", [
    (b"\x00\x02\x00", "frame version 0"),
    (b"\x02\x02\x00", "unknown frame version 2"),
    (b"\x01\x7f\x00", "Unknown metadata id 127"),
    (b"\x01\x02\x00\x01", "Failed to deserialize"),
    (b"\x01", "type"),
    (b"\x01\xff\xff\xff\x0f\x00", "too large"),
])
def test_bad_metadata_values(value: bytes, reason: str) -> None:
    with pytest.raises(MetadataRecordError, match=reason):
        decode_metadata_record(value)


def test_kafka_enum_names() -> None:
    assert kafka_snake_upper("TopicRecord") == "TOPIC_RECORD"
    assert kafka_snake_upper("KRaftVersionRecord") == "KRAFT_VERSION_RECORD"
    assert kafka_snake_upper("NoOpRecord") == "NO_OP_RECORD"
    assert kafka_snake_upper("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
