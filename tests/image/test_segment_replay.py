"""Opening a directory applies each plain data batch straight from its
records section (``replay_segments`` -> ``ImageBuilder.apply_record_section``:
no record objects, NoOp-only sections remembered, PartitionRecords read into
``PartitionRegistration`` directly). It must build exactly what applying
``read_directory``'s :class:`LogBatch` items one by one builds: the same
image, provenance, warnings and counts, at the end and cut at any offset."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from kraft.image.builder import ImageBuilder
from kraft.image.history import DirectoryHistory
from kraft.image.model import PartitionRegistration, new_partition
from kraft.image.metadata_source import image_from_items, replay_directory
from kraft.records.batch import Record, build_batch, build_data_batch
from kraft.records.compression import Compression
from kraft.records.control import leader_change_batch
from kraft.records.errors import CorruptRecordError
from tests.conftest import fixture_path
from tests.image.records import partition, raw_record, rec, topic

T1 = uuid.UUID(int=0x1111)
T2 = uuid.UUID(int=0x2222)
NOWHERE = uuid.UUID(int=0x9999)
D1, D2, D3 = (uuid.UUID(int=n) for n in (0xD1, 0xD2, 0xD3))
ZERO = uuid.UUID(int=0)
NO_OP = rec("NoOpRecord")


def _batches() -> list[list[bytes] | bytes]:
    """Value lists (one data batch each) and ready-made batch bytes, in log order."""
    p = rec  # the highest version unless asked
    return [
        [rec("FeatureLevelRecord", name="metadata.version", feature_level=21), topic("a", T1), topic("b", T2)],
        [
            # PartitionRecord v0, v1 without/with MIGRATING/with real directories, v2 with ELR (tagged)
            rec_at("PartitionRecord", 0, partition_id=0, topic_id=T1, replicas=[1, 2, 3], isr=[1, 2], leader=1,
                   leader_epoch=4, partition_epoch=5),
            rec_at("PartitionRecord", 1, partition_id=1, topic_id=T1, replicas=[2, 3], isr=[2], leader=2,
                   leader_epoch=0, partition_epoch=0),
            rec_at("PartitionRecord", 1, partition_id=2, topic_id=T1, replicas=[1, 2], isr=[1, 2], leader=1,
                   leader_epoch=0, partition_epoch=0, directories=[ZERO, ZERO]),
            rec_at("PartitionRecord", 1, partition_id=3, topic_id=T1, replicas=[1, 2, 3], isr=[3], leader=3,
                   leader_epoch=0, partition_epoch=0, directories=[D1, ZERO, D3], removing_replicas=[1],
                   adding_replicas=[3]),
            partition(T2, 0, [1, 2, 3], eligible_leader_replicas=[2], last_known_elr=[3]),
            partition(T2, 1, [3, 1], leader_recovery_state=1),
        ],
        [NO_OP], [NO_OP], [NO_OP, NO_OP], [NO_OP], [NO_OP, NO_OP],
        [raw_record(20, 0, b"\x01\x05\x01x")],  # a NoOpRecord with an unknown tagged field
        [
            # problems, each reported once as before: directories that do not
            # match the replicas, an unknown topic, a newer Kafka's records,
            # bytes that do not decode, an empty value
            rec_at("PartitionRecord", 1, partition_id=4, topic_id=T1, replicas=[1, 2, 3], isr=[1], leader=1,
                   leader_epoch=0, partition_epoch=0, directories=[D1, D2]),
            partition(NOWHERE, 0, [1]),
            raw_record(3, 9), raw_record(99, 0), raw_record(3, 1, b"\x00\x00"), b"",
            partition(T1, 5, list(range(1, 131))),  # 130 replicas: a two-byte array length
        ],
        [p("PartitionChangeRecord", topic_id=T1, partition_id=0, isr=[1, 2, 3], leader=2),
         p("PartitionChangeRecord", topic_id=T1, partition_id=3, directories=[D2, D2, D2]),
         p("PartitionChangeRecord", topic_id=NOWHERE, partition_id=0, leader=1)],
        # ISR and leader changes (each alone, both, no leader), at every version,
        # then the other fields; a partition that does not exist
        [rec_at("PartitionChangeRecord", v, topic_id=T1, partition_id=pid, **change)
         for v in (0, 1, 2) for pid in (0, 1, 3)
         for change in ({"isr": [pid + 1]}, {"leader": 3}, {"isr": [1, 3], "leader": -1}, {})],
        [p("PartitionChangeRecord", topic_id=T1, partition_id=1, replicas=[3, 2, 1], isr=[3],
           removing_replicas=[2], adding_replicas=[1], leader_recovery_state=1),
         p("PartitionChangeRecord", topic_id=T2, partition_id=0, eligible_leader_replicas=[], last_known_elr=[1]),
         p("PartitionChangeRecord", topic_id=T2, partition_id=9, isr=[1]),
         p("PartitionChangeRecord", topic_id=T1, partition_id=5, isr=list(range(1, 131)))],
        leader_change_batch(base_offset=0, epoch=3, leader_id=1, voters=[1], granting_voters=[1], timestamp=5),
        # a transaction that commits, one that aborts (KIP-868)
        [rec("BeginTransactionRecord", name="t"), partition(T2, 2, [2])],
        [NO_OP],
        [rec("EndTransactionRecord")],
        [rec("BeginTransactionRecord", name="u"), partition(T2, 3, [3]), rec("AbortTransactionRecord")],
        Compression.GZIP,  # the next batch compressed
        [partition(T2, 4, [1]), rec("ConfigRecord", resource_type=2, resource_name="b", name="x", value="1")],
        # a record with a key and a header (decode_records reads them; nothing else writes them here)
        "keyed",
        [rec("RemoveTopicRecord", topic_id=T2), NO_OP],
    ]


def rec_at(type_name: str, version: int, /, **fields: object) -> bytes:
    from kraft.records.metadata import encode_metadata_record
    from tests.image.records import message

    return encode_metadata_record(message(type_name, **fields), version)


def write_log(directory: Path) -> int:
    """The batches above as one segment; the last offset."""
    pdir = directory / "__cluster_metadata-0"
    pdir.mkdir(parents=True)
    out = bytearray()
    offset = 0
    compression = Compression.NONE
    for i, entry in enumerate(_batches()):
        timestamp = 1_700_000_000_000 + i
        if isinstance(entry, Compression):
            compression = entry
            continue
        if entry == "keyed":
            value = partition(T1, 6, [1])
            out += build_batch([Record(offset, timestamp, b"k", value, [("h", b"v")])], base_offset=offset,
                               partition_leader_epoch=2)
            offset += 1
            continue
        if isinstance(entry, bytes):  # a control batch, moved to this offset
            from kraft.records.batch import RecordBatch

            data = RecordBatch.parse(entry).with_base_offset(offset)
            out += data
            offset += RecordBatch.parse(data).last_offset_delta + 1
            continue
        assert isinstance(entry, list)
        out += build_data_batch(entry, base_offset=offset, epoch=2 + i // 5, timestamp=timestamp,
                                compression=compression)
        compression = Compression.NONE
        offset += len(entry)
    (pdir / "00000000000000000000.log").write_bytes(bytes(out))
    return offset - 1


def both(directory: Path, up_to: int | None) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(what opening the directory builds, what the LogBatch items build)."""
    fast, slow = ImageBuilder(), ImageBuilder()
    fast_image = replay_directory(directory, fast, up_to=up_to)
    slow_image = image_from_items(DirectoryHistory(directory).items(up_to), slow)

    def seen(image: object, b: ImageBuilder) -> tuple[object, ...]:
        return (image.to_json(), b.warnings, b.records_applied, b.skipped_newer,  # type: ignore[attr-defined]
                b.last_offset, b.in_transaction)
    return seen(fast_image, fast), seen(slow_image, slow)


def test_every_kind_of_batch_builds_the_image_the_log_items_build(tmp_path: Path) -> None:
    last = write_log(tmp_path)
    fast, slow = both(tmp_path, None)
    assert fast == slow
    image = fast[0]
    assert image["provenance"]["lastContainedOffset"] == last  # type: ignore[index]
    warnings = "\n".join(fast[1])  # type: ignore[arg-type]
    for problem in ("2 directories", "no topic with id", "newer than ours", "unknown metadata record type 99",
                    "an undecodable record", "unable to find partition"):
        assert problem in warnings


def test_cut_at_every_offset_builds_what_the_cut_items_build(tmp_path: Path) -> None:
    last = write_log(tmp_path)
    for up_to in range(0, last + 1):
        fast, slow = both(tmp_path, up_to)
        assert fast == slow, up_to


@pytest.mark.parametrize("parts", [
    ("kafka-3x-single-node",),
    ("kafka-3.5-three-node", "node2"),
    ("kafka-3.9-single-node", "commit-4bef72a", "data"),
    ("kafka-4.0-real", "broker4"),
    ("kafka-4.1-standalone-dynamic",),
])
def test_real_kafka_directories_build_the_same_image_both_ways(parts: tuple[str, ...]) -> None:
    directory = fixture_path(*parts)
    fast, slow = both(directory, None)
    assert fast == slow


def test_malformed_records_under_a_good_crc_are_the_same_error(tmp_path: Path) -> None:
    """A batch whose CRC matches but whose records do not frame raises what
    decoding its records raises, at the batch's file position."""
    pdir = tmp_path / "__cluster_metadata-0"
    pdir.mkdir()
    import struct

    from crc32c import crc32c

    good = build_data_batch([NO_OP], base_offset=0, epoch=1, timestamp=1)
    bad = bytearray(build_data_batch([NO_OP], base_offset=1, epoch=1, timestamp=1))
    bad[-1] = 0x07  # a header count of -4
    struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))  # under a CRC that matches
    bad = bytes(bad)
    (pdir / "00000000000000000000.log").write_bytes(good + bad)
    with pytest.raises(CorruptRecordError) as slow:
        image_from_items(DirectoryHistory(tmp_path).items(None))
    with pytest.raises(CorruptRecordError) as fast:
        replay_directory(tmp_path, ImageBuilder())
    assert str(fast.value) == str(slow.value) and f"position {len(good)}" in str(fast.value)


def test_a_bad_crc_stops_the_log_there_as_before(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    last = write_log(tmp_path)
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[len(data) - 3] ^= 0xFF  # inside the last batch
    segment.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, "kraft.image")
    fast, slow = both(tmp_path, None)
    assert fast == slow
    assert fast[0]["provenance"]["lastContainedOffset"] < last  # type: ignore[index]
    crc = [r.getMessage() for r in caplog.records if "CRC mismatch" in r.getMessage()]
    assert len(crc) == 2 and crc[0] == crc[1]


def test_new_partition_is_the_constructors_partition() -> None:
    fields = ((1, 2), (D1, D2), (1,), (2,), (), 1, 0, 7, 9, (2,), ())
    made = new_partition(*fields)
    built = PartitionRegistration(*fields)
    assert type(made) is PartitionRegistration
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    from dataclasses import FrozenInstanceError, replace

    with pytest.raises(FrozenInstanceError):
        made.leader = 2  # type: ignore[misc]
    assert replace(made, leader=2) == PartitionRegistration(*fields[:5], 2, *fields[6:])


def _snapshot_both_ways(values: list[bytes]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """load_snapshot of the values (PartitionRecords read from their bytes)
    and of the same values decoded first (the generic replay)."""
    from kraft.image.decode import decode_metadata_value
    from kraft.records.view import OffsetAndEpoch

    sid = OffsetAndEpoch(100, 3)
    fast, slow = ImageBuilder(), ImageBuilder()
    fast.load_snapshot(sid, values, 7)
    slow.load_snapshot(sid, [decode_metadata_value(v) for v in values], 7)
    return ((fast.image.to_json(), fast.warnings, fast.records_applied, fast.skipped_newer),
            (slow.image.to_json(), slow.warnings, slow.records_applied, slow.skipped_newer))


def test_every_real_snapshot_loads_the_same_from_bytes() -> None:
    from kraft.image.metadata_source import read_checkpoint

    checkpoints = sorted(fixture_path().rglob("*.checkpoint"))
    assert checkpoints
    loaded = 0
    for path in checkpoints:
        try:
            values = list(read_checkpoint(path).values)
        except Exception:  # noqa: BLE001 - the fixtures include damaged files on purpose
            continue
        fast, slow = _snapshot_both_ways(values)
        assert fast == slow, path
        loaded += 1
    assert loaded > 10


def test_a_snapshot_of_every_kind_of_partition_record_loads_the_same_from_bytes() -> None:
    values = [v for entry in _batches()[:2] + _batches()[8:9] if isinstance(entry, list) for v in entry]
    values += [rec("BeginTransactionRecord", name="t"), partition(T1, 7, [1])]  # ends inside a transaction
    fast, slow = _snapshot_both_ways(values)
    assert fast == slow
    assert "2 directories" in "\n".join(fast[1])  # type: ignore[arg-type]


@pytest.mark.parametrize("damage", ["torn header", "torn body", "bad magic", "stray bytes", "offset gap"])
def test_damage_is_reported_and_stops_the_log_as_before(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                        damage: str) -> None:
    """A torn tail, a bad magic, stray bytes or a gap in the offsets: the
    same warning, once per path, and the same image up to there."""
    from kraft.records.batch import iter_batches

    write_log(tmp_path)
    segment = tmp_path / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    batches = list(iter_batches(bytes(data)))
    middle = batches[len(batches) // 2].position
    if damage == "torn header":
        data = data[:batches[-1].position + 30]
    elif damage == "torn body":
        data = data[:len(data) - 5]
    elif damage == "bad magic":
        data[middle + 16] = 1
    elif damage == "stray bytes":
        data += bytes(10)
    else:
        data[middle:middle + 8] = (batches[len(batches) // 2].base_offset + 1).to_bytes(8, "big")
    segment.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, "kraft.image")
    fast, slow = both(tmp_path, None)
    assert fast == slow
    said = [r.getMessage() for r in caplog.records if "readable log ends" in r.getMessage()
            or "stray bytes" in r.getMessage() or "does not follow" in r.getMessage()]
    assert len(said) == 2 and said[0] == said[1], said
