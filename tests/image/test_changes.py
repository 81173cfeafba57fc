"""The change stream (``kraft observe --follow``) and the offline sources."""

from __future__ import annotations

import base64
import json
import shutil
import uuid
from pathlib import Path

from kraft.image.builder import ImageBuilder
from kraft.image.changes import (
    Change,
    LogBatch,
    LogSnapshot,
    SnapshotChange,
    apply_item,
    changes_of,
    format_jsonl,
    format_table,
)
from kraft.messages.json_form import uuid_to_kafka
from kraft.records.control import ControlRecordType, encode_control_value
from kraft.records.view import OffsetAndEpoch
from kraft.image.metadata_source import image_from_directory, partition_dir, read_directory
from tests.conftest import fixture_path
from tests.image.records import message, partition, raw_record, sub, topic

T1 = uuid.UUID(int=0x1111)


def test_one_line_per_record_in_kafkas_json_form() -> None:
    batch = LogBatch(10, 11, 3, 1700000000000, False, (topic("foo", T1), partition(T1, 0, [1])))
    first, second = changes_of(batch)
    assert json.loads(format_jsonl(first)) == {
        "offset": 10, "epoch": 3, "timestamp": 1700000000000, "type": "TOPIC_RECORD", "version": 0,
        "data": {"name": "foo", "topicId": uuid_to_kafka(T1)}}
    assert isinstance(second, Change) and second.data is not None
    assert second.offset == 11 and second.type == "PARTITION_RECORD" and second.data["replicas"] == [1]


def test_a_newer_record_is_shown_raw_with_its_type_id() -> None:
    value = raw_record(250, 3, b"\x01\x02")
    [change] = changes_of(LogBatch(5, 5, 1, 0, False, (value,)))
    line = json.loads(format_jsonl(change))
    assert line["type"] == "UNKNOWN_METADATA_RECORD_TYPE_250" and line["typeId"] == 250 and line["version"] == 3
    assert base64.b64decode(line["raw"]) == value and "data" not in line


def test_control_records_are_decoded_when_their_type_is_known() -> None:
    lcm = message("LeaderChangeMessage", version=0, leader_id=2, voters=[sub("LeaderChangeMessage", "Voter", voter_id=2)])
    value = encode_control_value(lcm)
    [known] = changes_of(LogBatch(0, 0, 1, 0, True, (value,), (int(ControlRecordType.LEADER_CHANGE),)))
    assert isinstance(known, Change) and known.data is not None
    assert known.control and known.type == "LEADER_CHANGE" and known.data["leaderId"] == 2
    [unknown] = changes_of(LogBatch(0, 0, 1, 0, True, (value,)))
    assert isinstance(unknown, Change)
    assert unknown.type == "CONTROL" and unknown.data is None


def test_a_snapshot_is_one_marker_and_resets_the_image() -> None:
    snap = LogSnapshot(OffsetAndEpoch(100, 4), (topic("foo", T1),), 123)
    [marker] = changes_of(snap)
    assert isinstance(marker, SnapshotChange)
    assert json.loads(format_jsonl(marker)) == {"snapshot": {"endOffset": 100, "epoch": 4}, "records": 1,
                                                "timestamp": 123, "type": "SNAPSHOT"}
    b = ImageBuilder()
    apply_item(b, LogBatch(0, 0, 1, 0, False, (topic("old", uuid.UUID(int=5)),)))
    apply_item(b, snap)
    assert [t.name for t in b.image.topics.values()] == ["foo"] and b.image.offset == 99


def test_table_lines_fit_and_say_what_happened() -> None:
    [change] = changes_of(LogBatch(7, 7, 2, 1700000000000, False, (topic("foo", T1),)))
    line = format_table(change, width=80)
    assert len(line) <= 80 and "TOPIC_RECORD" in line and line.lstrip().startswith("7")


# ----------------------------------------------------------------- offline sources


def _copy_fixture(tmp_path: Path) -> Path:
    src = partition_dir(fixture_path("kafka-3x-single-node"))
    dst = tmp_path / "__cluster_metadata-0"
    shutil.copytree(src, dst)
    return dst


def test_a_torn_tail_ends_the_readable_log(tmp_path: Path) -> None:
    pdir = _copy_fixture(tmp_path)
    segment = pdir / "00000000000000000000.log"
    full = image_from_directory(pdir)
    data = segment.read_bytes()
    segment.write_bytes(data[: len(data) - 30])  # cut the last batch short
    torn = image_from_directory(pdir)
    assert 0 < torn.offset < full.offset


def test_a_bad_crc_ends_the_readable_log(tmp_path: Path) -> None:
    pdir = _copy_fixture(tmp_path)
    segment = pdir / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    middle = len(data) // 2
    data[middle] ^= 0xFF
    segment.write_bytes(bytes(data))
    items = list(read_directory(pdir))
    assert items and all(isinstance(i, LogBatch) for i in items)
    last = items[-1]
    assert isinstance(last, LogBatch) and last.last_offset < 4928  # stopped at the damaged batch, everything before it kept
    offsets = [i.base_offset for i in items if isinstance(i, LogBatch)]
    assert offsets == sorted(offsets)


def test_up_to_stops_at_an_offset(tmp_path: Path) -> None:
    pdir = partition_dir(fixture_path("kafka-3x-single-node"))
    image = image_from_directory(pdir, up_to=100)
    assert image.offset == 100
