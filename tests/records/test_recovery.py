"""Recovery at open: every kind of damage is detected and reported with the
file and position; a torn tail is truncated; damage before valid batches is
refused rather than truncated; indexes and the epoch cache are repaired."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.records.batch import iter_batches
from kraft.records.epoch_cache import EpochEntry
from kraft.records.errors import CorruptLogError, CorruptSnapshotError
from kraft.records.log import MetadataLog
from kraft.records.log_config import LogConfig
from kraft.records.snapshot import validate_snapshot_bytes
from kraft.records.view import OffsetAndEpoch
from tests.records.helpers import make_batch

SEGMENT = "00000000000000000000.log"


def _write_log(tmp_path: Path, batches: int = 20, *, segment_bytes: int = 1 << 30, epochs: int = 2) -> Path:
    d = tmp_path / "__cluster_metadata-0"
    with MetadataLog.open(d, LogConfig(segment_bytes=segment_bytes, index_interval_bytes=200)) as log:
        for i in range(batches):
            log.append_as_leader(make_batch(0, 2), 1 + i * epochs // batches)
    return d


def _batches(path: Path) -> list[bytes]:
    return [bytes(b.data) for b in iter_batches(path.read_bytes())]


def _repairs(log: MetadataLog) -> list[tuple[str, int | None, str, str]]:
    return [(Path(r.path).name, r.position, r.action, r.reason) for r in log.recovery_report.repairs]


def test_clean_directory_reports_clean(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    with MetadataLog.open(d) as log:
        assert log.recovery_report.clean and log.end_offset == 40
        assert "clean" in str(log.recovery_report)


def test_torn_last_batch_is_truncated(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    original = (d / SEGMENT).read_bytes()
    with open(d / SEGMENT, "ab") as f:
        f.write(make_batch(40, 3)[:50])
    with MetadataLog.open(d) as log:
        assert log.end_offset == 40
        [(name, position, action, reason)] = _repairs(log)
        assert (name, position, action) == (SEGMENT, len(original), "truncated 50 bytes")
        assert "runs beyond the end of the file" in reason
    assert (d / SEGMENT).read_bytes() == original


def test_flipped_bit_in_last_batch_is_truncated(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    batches = _batches(d / SEGMENT)
    data = bytearray((d / SEGMENT).read_bytes())
    data[-5] ^= 0x04
    (d / SEGMENT).write_bytes(bytes(data))
    with MetadataLog.open(d) as log:
        assert log.end_offset == 38
        [(name, position, _, reason)] = _repairs(log)
        assert position == len(data) - len(batches[-1]) and reason == "CRC mismatch"


def test_flipped_bit_before_valid_batches_is_refused(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    batches = _batches(d / SEGMENT)
    data = bytearray((d / SEGMENT).read_bytes())
    position = sum(len(b) for b in batches[:5])
    data[position + 40] ^= 0x80  # inside batch 5, which 14 valid batches follow
    (d / SEGMENT).write_bytes(bytes(data))
    with pytest.raises(CorruptLogError) as info:
        MetadataLog.open(d)
    assert info.value.position == position and info.value.path.endswith(SEGMENT)
    assert "CRC mismatch" in str(info.value) and "valid CRC follows" in str(info.value)
    assert (d / SEGMENT).read_bytes() == bytes(data)  # nothing was truncated


def test_batch_length_beyond_the_file(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    batches = _batches(d / SEGMENT)
    data = bytearray((d / SEGMENT).read_bytes())
    last = len(data) - len(batches[-1])
    struct.pack_into(">i", data, last + 8, 10_000)
    (d / SEGMENT).write_bytes(bytes(data))
    with MetadataLog.open(d) as log:
        [(_, position, _, reason)] = _repairs(log)
        assert position == last and "beyond the end of the file" in reason and log.end_offset == 38


def test_zero_filled_tail_after_a_crash(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    size = (d / SEGMENT).stat().st_size
    with open(d / SEGMENT, "ab") as f:
        f.write(bytes(8192))
    with MetadataLog.open(d) as log:
        [(_, position, action, reason)] = _repairs(log)
        assert (position, action, reason) == (size, "truncated 8192 bytes", "zero-filled tail")
        assert log.end_offset == 40


def test_garbage_segment(tmp_path: Path) -> None:
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / SEGMENT).write_bytes(random.Random(5).randbytes(5000))
    with MetadataLog.open(d) as log:
        [(name, position, action, _)] = _repairs(log)
        assert (name, position, action) == (SEGMENT, 0, "truncated 5000 bytes")
        assert log.end_offset == 0


def test_truncated_and_corrupt_indexes(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    index = d / "00000000000000000000.index"
    full = index.read_bytes()
    assert len(full) >= 16
    index.write_bytes(full[:-3])  # cut mid-entry
    with MetadataLog.open(d) as log:
        assert ("00000000000000000000.index", len(full) - 8, "dropped 5 bytes", "partial trailing entry") in _repairs(log)
        assert [r.offset for b in log.iter_batches() for r in b.records()] == list(range(40))
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 4, 7)  # first entry points at a wrong position
    index.write_bytes(bytes(data))
    with MetadataLog.open(d) as log:
        assert any(action == "rebuilt offset and time indexes" for _, _, action, _ in _repairs(log))
    with MetadataLog.open(d) as log:
        assert log.recovery_report.clean  # the rebuilt index is good
    index.unlink()
    with MetadataLog.open(d, LogConfig(index_interval_bytes=200)) as log:
        assert ("00000000000000000000.index", None, "rebuilt offset and time indexes", "missing offset index") in _repairs(log)
    assert index.read_bytes() == full  # the same entries Kafka's append-time rule made


def test_index_entries_past_a_truncated_log_are_dropped(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    batches = _batches(d / SEGMENT)
    keep = sum(len(b) for b in batches[:10])
    with open(d / SEGMENT, "r+b") as f:
        f.truncate(keep)
    with MetadataLog.open(d) as log:
        assert log.end_offset == 20
        assert any("past the end of the log" in reason for _, _, _, reason in _repairs(log))
        assert all(p < keep for _, p in log.segments[-1].index.entries)


def test_epoch_cache_is_reconciled_with_the_log(tmp_path: Path) -> None:
    d = _write_log(tmp_path, epochs=4)
    checkpoint = d / "leader-epoch-checkpoint"
    expected = checkpoint.read_text()
    checkpoint.write_text("0\n1\n1 0\n")  # lost the later epochs
    with MetadataLog.open(d) as log:
        assert any(action == "reconciled with the log" for _, _, action, _ in _repairs(log))
    assert checkpoint.read_text() == expected
    checkpoint.write_text("0\n5\n1 0\n2 10\n3 20\n4 30\n9 400\n")
    with MetadataLog.open(d) as log:  # an epoch starting past the log end
        assert ("leader-epoch-checkpoint", None, "dropped entries", "epochs starting at or after the log end 40") in _repairs(log)
    assert checkpoint.read_text() == expected
    checkpoint.write_text("garbage")
    with MetadataLog.open(d) as log:
        assert log.epoch_entries == [EpochEntry(1, 0), EpochEntry(2, 10), EpochEntry(3, 20), EpochEntry(4, 30)]
    checkpoint.unlink()
    with MetadataLog.open(d) as log:
        assert ("leader-epoch-checkpoint", None, "rebuilt from the log", "missing leader-epoch-checkpoint") in _repairs(log)
    assert checkpoint.read_text() == expected


def test_damage_in_an_older_segment_is_refused_when_verifying(tmp_path: Path) -> None:
    d = _write_log(tmp_path, batches=40, segment_bytes=1500)
    segments = sorted(d.glob("*.log"))
    assert len(segments) > 2
    data = bytearray(segments[0].read_bytes())
    data[-10] ^= 1
    segments[0].write_bytes(bytes(data))
    with MetadataLog.open(d) as log:  # the default open trusts sealed segments
        assert log.end_offset == 80
    with pytest.raises(CorruptLogError, match="later segments"):
        MetadataLog.open(d, verify_all_segments=True)


def test_leftovers_of_interrupted_writes_are_removed(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    for name in ("00000000000000000040-0000000002.checkpoint.part", "00000000000000000010-0000000001.checkpoint.deleted",
                 "00000000000000000005.log.deleted", "quorum-state.tmp", "leader-epoch-checkpoint.tmp"):
        (d / name).write_bytes(b"x")
    with MetadataLog.open(d) as log:
        assert sorted(n for n, _, a, _ in _repairs(log) if a == "deleted") == sorted([
            "00000000000000000040-0000000002.checkpoint.part", "00000000000000000010-0000000001.checkpoint.deleted",
            "00000000000000000005.log.deleted", "quorum-state.tmp", "leader-epoch-checkpoint.tmp"])


def test_a_stray_temp_file_of_krafts_own_state_files_is_removed(tmp_path: Path) -> None:
    """A failed or cut write of ``voter-api-versions`` (the witness's record,
    kraft/node/witness_detector.py) or ``voter-endpoint-overrides`` (recover-quorum
    --endpoints) leaves ``<file>.tmp`` beside ``quorum-state``: removed at
    open as ``quorum-state.tmp`` is; the files themselves stay."""
    d = _write_log(tmp_path)
    for name in ("voter-api-versions.tmp", "voter-endpoint-overrides.tmp", "voter-api-versions"):
        (d / name).write_bytes(b'{"version": 0, "vot')
    with MetadataLog.open(d) as log:
        assert sorted(n for n, _, a, _ in _repairs(log) if a == "deleted") == [
            "voter-api-versions.tmp", "voter-endpoint-overrides.tmp"]
    assert not (d / "voter-api-versions.tmp").exists() and not (d / "voter-endpoint-overrides.tmp").exists()
    assert (d / "voter-api-versions").exists()


def test_snapshot_without_footer_is_detected(tmp_path: Path) -> None:
    d = _write_log(tmp_path)
    with MetadataLog.open(d) as log:
        with log.create_snapshot(OffsetAndEpoch(20, 1), last_contained_log_timestamp=0) as w:
            w.append([b"\x01\x14\x00\x00"])
            w.freeze()
    path = d / "00000000000000000020-0000000001.checkpoint"
    data = path.read_bytes()
    footer_at = [b.position for b in iter_batches(data)][-1]
    path.write_bytes(data[:footer_at])
    with pytest.raises(CorruptSnapshotError) as info:
        validate_snapshot_bytes(path.read_bytes(), str(path))
    assert info.value.position == footer_at and "no SnapshotFooter" in str(info.value)
    with MetadataLog.open(d) as log:
        assert (path.name, footer_at, "ignored corrupt snapshot", "snapshot has no SnapshotFooter") in _repairs(log)
        assert log.latest_snapshot_id() is None
    assert path.exists()  # kept for the operator


def _mutations() -> st.SearchStrategy:
    return st.one_of(
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("flip"), st.floats(0, 1), st.integers(0, 7)),
        st.tuples(st.just("zeros"), st.integers(1, 5000)),
        st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=300)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(_mutations(), min_size=1, max_size=3))
def test_recovery_keeps_a_prefix_and_never_drops_a_valid_batch(tmp_path_factory, mutations) -> None:
    d = _write_log(tmp_path_factory.mktemp("log"), batches=12)
    original = (d / SEGMENT).read_bytes()
    data = bytearray(original)
    first_damage = len(original)
    for m in mutations:
        if m[0] == "truncate":
            cut = int(len(data) * m[1])
            first_damage = min(first_damage, cut)
            del data[cut:]
        elif m[0] == "flip" and data:
            pos = min(int(len(data) * m[1]), len(data) - 1)
            data[pos] ^= 1 << m[2]
            first_damage = min(first_damage, pos)
        elif m[0] == "zeros":
            data += bytes(m[1])
        elif m[0] == "garbage":
            data += m[1]
    (d / SEGMENT).write_bytes(bytes(data))
    intact = [b for b in iter_batches(original) if b.end_position <= first_damage]
    try:
        log = MetadataLog.open(d)
    except CorruptLogError as exc:
        assert exc.position is not None and exc.position <= len(data)
        return
    with log:
        kept = (d / SEGMENT).read_bytes()
        assert original.startswith(kept) or kept == bytes(data[: len(kept)])
        assert len(kept) >= sum(b.size_in_bytes for b in intact)  # no intact batch dropped
        assert all(b.is_valid() for b in iter_batches(kept))
        assert log.end_offset == (list(iter_batches(kept))[-1].next_offset if kept else 0)
