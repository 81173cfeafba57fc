"""``kraft dump-log``: Kafka's DumpLogSegments lines, JSON output, damaged files."""

from __future__ import annotations

import io
import subprocess
import sys
import json
import shutil
from pathlib import Path

from kraft.records.batch import Record, build_batch
from kraft.records.compression import Compression
from kraft.records.control import EndTransactionMarker, ControlRecordType, build_control_batch
from kraft.tools.dump_log import run_dump
from tests.conftest import fixture_path
from tests.harness import cli
from tests.records.helpers import make_batch


def _dump(files: list[Path], **kwargs) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(f) for f in files], out=out, err=err, **kwargs)
    return status, out.getvalue().splitlines(), err.getvalue()


def test_kafka_lines_for_a_real_segment() -> None:
    path = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0", "00000000000000000000.log")
    status, lines, _ = _dump([path], metadata_decoder=True)
    assert status == 0
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    # Field order and spelling of DumpLogSegments.printBatchLevel / printRecordMetadata.
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1737526471712 size: 103 magic: 2 "
        "compresscodec: none crc: 3981349700 isvalid: true"
    )
    assert lines[3] == (
        "| offset: 0 CreateTime: 1737526471712 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] "
        'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":11}}'
    )
    # Kafka 4.1's DumpLogSegments.printControlRecord decodes a LeaderChange;
    # 4.0.0's fell to its `controlType: $type($id)` case.
    assert lines[6] == (
        "| offset: 2 CreateTime: 1737526471169 keySize: 4 valueSize: 34 sequence: -1 headerKeys: [] "
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1},{"voterId":2},{"voterId":3}],'
        '"grantingVoters":[{"voterId":1},{"voterId":3}]}'
    )
    from kraft.kafka_release import RELEASES

    _, lines_40, _ = _dump([path], metadata_decoder=True, release=RELEASES["4.0.0"])
    assert lines_40[6].endswith("headerKeys: [] controlType: LEADER_CHANGE(2)")


def test_snapshot_and_bootstrap_headers() -> None:
    snap = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0",
                       "00000000000000028869-0000000189.checkpoint")
    boot = fixture_path("kafka-3.5-three-node", "node1", "bootstrap.checkpoint")
    status, lines, _ = _dump([snap, boot], deep=True)
    assert status == 0
    assert lines[1] == "Snapshot end offset: 28869, epoch: 189"
    assert lines[3].endswith('SnapshotHeader {"version":0,"lastContainedLogTimestamp":1737559414452}')
    assert "KRaft bootstrap snapshot" in lines
    assert any(line.endswith('SnapshotFooter {"version":0}') for line in lines)


def test_without_deep_iteration_only_batches_are_printed() -> None:
    path = fixture_path("kafka-3x-single-node", "__cluster_metadata-0", "00000000000000000000.log")
    _, lines, _ = _dump([path])
    assert len(lines) == 2 + 4814
    assert all(line.startswith("baseOffset: ") for line in lines[2:])


def test_print_data_log_uses_string_decoder_and_skip_record_metadata(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_batch([Record(0, 5, b"k1", b"v1", [("h1", b"x"), ("h2", None)])], base_offset=0))
    _, lines, _ = _dump([path], print_data=True)
    assert lines[3] == "| offset: 0 CreateTime: 5 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [h1,h2] key: k1 payload: v1"
    _, lines, _ = _dump([path], print_data=True, skip_record_metadata=True)
    assert lines[3] == "| key: k1 payload: v1"


def test_transaction_markers_and_unknown_control_types(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    marker = EndTransactionMarker(ControlRecordType.COMMIT, 7)
    unknown = Record(1, 9, b"\x00\x00\x00\x09", b"")
    path.write_bytes(
        build_control_batch([marker], base_offset=0, partition_leader_epoch=1, timestamp=9)
        + build_batch([unknown], base_offset=1, is_control=True)
    )
    _, lines, _ = _dump([path], deep=True)
    assert lines[3].endswith(" endTxnMarker: COMMIT coordinatorEpoch: 7")
    assert lines[5].endswith(" controlType: UNKNOWN(9)")


def test_json_output_is_one_object_per_record() -> None:
    path = fixture_path("kafka-3.9-single-node", "commit-dcd6e71", "data", "__cluster_metadata-0",
                       "00000000000000000000.log")
    _, lines, _ = _dump([path], metadata_decoder=True, as_json=True)
    objects = [json.loads(line) for line in lines]
    assert len(objects) == 4535
    assert [o["offset"] for o in objects] == list(range(4535))
    first_data = next(o for o in objects if not o["isControl"])
    assert first_data["payload"]["type"].endswith("_RECORD")
    assert first_data["crcValid"] is True
    leader_change = next(o for o in objects if o["isControl"])
    assert leader_change["controlType"] == "LEADER_CHANGE"
    assert leader_change["control"]["leaderId"] == 1


def test_damaged_file_is_reported_not_fatal(tmp_path: Path) -> None:
    good = make_batch(0, 2) + make_batch(2, 2)
    flipped = bytearray(good + make_batch(4, 2))
    flipped[len(good) + 70] ^= 0x01  # inside the third batch's records
    torn = bytes(flipped) + make_batch(6, 3)[:40]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(torn)
    status, lines, err = _dump([path], deep=True)
    batch_lines = [line for line in lines if line.startswith("baseOffset")]
    assert len(batch_lines) == 3
    assert batch_lines[2].endswith("isvalid: false")
    assert lines[-1] == "Found 40 invalid bytes at the end of 00000000000000000000.log"
    assert status == 0


def test_garbage_file_reports_position(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(make_batch(0) + b"\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x02" + b"\xff" * 100)
    status, lines, err = _dump([path], deep=True)
    assert status == 1
    assert f"Corrupt batch in {path} at position {len(make_batch(0))}" in err


def test_cli_accepts_comma_separated_and_repeated_files(tmp_path: Path) -> None:
    a = tmp_path / "00000000000000000000.log"
    b = tmp_path / "00000000000000000005.log"
    a.write_bytes(make_batch(0, 5, compression=Compression.LZ4))
    b.write_bytes(make_batch(5, 5))
    result = cli.invoke(["dump-log", "--files", f"{a},{b}", "--print-data-log"])
    assert result.exit_code == 0, result.output
    assert result.output.count("Dumping ") == 2
    assert "compresscodec: lz4" in result.output
    result = cli.invoke(["dump-log", "--files", str(a), str(b), "--json"])
    assert result.exit_code == 0
    assert len([line for line in result.output.splitlines() if line.startswith("{")]) == 10


def test_index_files_are_dumped_like_kafka(tmp_path: Path) -> None:
    src = fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0")
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.log"):
        shutil.copy(src / name, tmp_path / name)
    _, lines, _ = _dump([tmp_path / "00000000000000000000.index", tmp_path / "00000000000000000000.timeindex"])
    assert lines[1] == "offset: 56 position: 4145"
    assert "timestamp: 1737526496265 offset: 56" in lines


def _segment_copy(tmp_path: Path) -> Path:
    src = fixture_path("kafka-4.0-real", "controller1", "__cluster_metadata-0")
    for name in ("00000000000000000000.index", "00000000000000000000.timeindex", "00000000000000000000.log"):
        shutil.copy(src / name, tmp_path / name)
    return tmp_path / "00000000000000000000.index"


def test_verify_index_only_prints_no_entries_and_reports_mismatches(tmp_path: Path) -> None:
    """DumpLogSegments.dumpIndex with verifyOnly: entries are checked against
    the first batch at their position, only mismatches are printed (stderr)."""
    index = _segment_copy(tmp_path)
    status, lines, err = _dump([index], verify_index_only=True)
    assert (status, lines, err) == (0, [f"Dumping {index}"], "")
    status, full, _ = _dump([index])
    entries = [line for line in full if line.startswith("offset: ")]
    assert entries
    # Point the first entry at the wrong offset: Kafka's "Mismatches in :" block.
    data = bytearray(index.read_bytes())
    rel = int.from_bytes(data[0:4], "big")
    data[0:4] = (rel + 1).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    status, lines, err = _dump([index], verify_index_only=True)
    assert status == 0 and lines == [f"Dumping {index}"]
    assert err == f"Mismatches in :{index.absolute()}\n  Index offset: {rel + 1}, log offset: {rel}\n"


def test_index_sanity_check(tmp_path: Path) -> None:
    """OffsetIndex/TimeIndex.sanityCheck: what decides a rebuild at start-up."""
    index = _segment_copy(tmp_path)
    timeindex = index.with_suffix(".timeindex")
    status, lines, err = _dump([index, timeindex], index_sanity_check=True)
    assert status == 0, err
    assert lines == [f"Dumping {index}", f"{index} passed sanity check.",
                     f"Dumping {timeindex}", f"{timeindex} passed sanity check."]
    index.write_bytes(index.read_bytes() + b"\x00\x00\x00")
    status, lines, err = _dump([index], index_sanity_check=True)
    assert status == 1
    assert err == (f"Index file {index.absolute()} is corrupt, found {index.stat().st_size} bytes which is "
                   "neither positive nor a multiple of 8\n")


def test_index_without_its_log_is_one_line(tmp_path: Path) -> None:
    index = _segment_copy(tmp_path)
    index.with_suffix(".log").unlink()
    status, lines, err = _dump([index, index.with_suffix(".timeindex")])
    assert status == 1
    assert lines == [f"Dumping {index}"]  # Kafka's tool stops at the first failure too
    assert len(err.splitlines()) == 1 and "00000000000000000000.log cannot be read" in err


def test_segment_not_starting_at_zero_has_no_non_consecutive_noise_before_43(tmp_path: Path) -> None:
    """4.0 and 4.1 (Scala ``DumpLogSegments.dumpLog``): the first record
    starts the sequence; gaps are listed last first. 4.4 (ported to Java in
    4.3, run live on this file): the sequence starts at -1, gaps in file order."""
    from kraft.kafka_release import RELEASES

    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(make_batch(100, 3) + make_batch(103, 2) + make_batch(110, 1) + make_batch(120, 1))
    for name in ("4.0.0", "4.1.0", "4.2.2"):
        status, lines, err = _dump([path], deep=True, release=RELEASES[name])
        assert status == 0
        assert err == f"Non-consecutive offsets in {path.absolute()}\n  110 is followed by 120\n  104 is followed by 110\n"
    status, lines, err = _dump([path], deep=True)
    assert err == (f"Non-consecutive offsets in {path.absolute()}\n  -1 is followed by 100\n  104 is followed by 110\n"
                   "  110 is followed by 120\n")


def _many_segments(tmp_path: Path) -> list[str]:
    files = []
    for i in range(3):
        p = tmp_path / f"{i * 10:020d}.log"
        p.write_bytes(make_batch(i * 10, 10))
        files.append(str(p))
    return files


def test_no_progress_bar_when_piped(tmp_path: Path) -> None:
    import subprocess
    import sys

    files = _many_segments(tmp_path)
    done = cli.run("dump-log", "--kafka-version", "4.1", "--deep-iteration", "--files", ",".join(files))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("Dumping ") == 3


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """stderr on a pseudo-terminal: tqdm draws its bar there (and stdout is untouched)."""
    import os
    import pty
    import subprocess
    import sys

    files = _many_segments(tmp_path)
    import select

    import fcntl
    import struct
    import termios

    primary, secondary = pty.openpty()
    # an 80x24 terminal (a fresh pty is 0x0, where tqdm draws nothing)
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    drawn = b""
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kraft.cli", "dump-log", "--kafka-version", "4.1", "--deep-iteration", "--files",
         ",".join(files)],
            stdout=subprocess.PIPE, stderr=secondary,
        )
        os.close(secondary)
        secondary = -1
        # Read while it runs: Linux drops what is unread once the child's side closes.
        for _ in range(1200):  # bounded: at most ~120 s
            ready, _, _ = select.select([primary], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        stdout, _ = proc.communicate(timeout=120)
    finally:
        if secondary != -1:
            os.close(secondary)
        os.close(primary)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout)
    assert done.returncode == 0
    assert b"dump-log" in drawn and b"%" in drawn
    assert b"dump-log:" not in done.stdout


def test_a_log_newer_than_the_release_named_is_said_on_a_terminal(tmp_path: Path) -> None:
    """Issue 42 (bad input): a log written at a metadata.version the named
    release does not know gets one line naming the cause and the fix, on a
    terminal; piped, the output stays that release's byte for byte."""
    import os
    import pty

    props = tmp_path / "s.properties"
    props.write_text("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:9999\n"
                     "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@127.0.0.1:9999\n"
                     f"metadata.log.dir={tmp_path / 'd'}\n")
    cli.run("storage", "format", "-c", str(props), "-t", "MkU3OEVBNTcwNTJENDM2Qk", check=True)
    snapshot = tmp_path / "d" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint"
    args = [sys.executable, "-m", "kraft.cli", "dump-log", "--cluster-metadata-decoder", "--kafka-version", "4.1.0",
            "--files", str(snapshot)]
    piped = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=follower, timeout=60)
        os.close(follower)
        text = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end closed
                break
            if not chunk:
                break
            text += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert text.decode().strip() == (
        "Note: this log was written at metadata.version 33 (4.4-IV2), newer than Kafka 4.1.0, which knows up to 29 "
        "(4.2-IV1): records it lacks print as its tool prints them; to decode them, name a newer release with "
        "--kafka-version"), text
