"""Files we write are read back by kafka-python's record reader with valid
CRCs for every codec, and batches kafka-python writes are read by ours.

kafka-python runs in a subprocess (kafka_python_io.py) with the codec
bindings it uses (python-snappy, lz4, zstandard; in the test extra)."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.records.batch import Record, build_batch, decode_batches
from kraft.records.compression import Compression
from kraft.records.control import build_control_batch

_IO = Path(__file__).with_name("kafka_python_io.py")


def _run(*args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, str(_IO), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def _records(base: int, n: int) -> list[Record]:
    return [
        Record(
            base + i,
            1_700_000_000_000 + 17 * i,
            None if i % 3 == 0 else f"key-{i}".encode(),
            (f"metadata-value-{base + i}|" * (1 + i % 11)).encode(),
            [("trace", b"abc")] if i % 4 == 0 else [],
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("codec", list(Compression))
def test_kafka_python_reads_what_we_write(tmp_path: Path, codec: Compression) -> None:
    path = tmp_path / "00000000000000000000.log"
    written: list[list[Record]] = []
    with open(path, "wb") as f:
        base = 0
        for n in (1, 7, 2000):  # the last one spans several compression blocks
            records = _records(base, n)
            f.write(build_batch(records, base_offset=base, partition_leader_epoch=3, compression=codec))
            written.append(records)
            base += n
    batches = _run("read", str(path))
    assert len(batches) == 3
    for batch, records in zip(batches, written):
        assert batch["crc_valid"] is True
        assert batch["compression"] == int(codec)
        assert batch["leader_epoch"] == 3
        assert batch["records"] == [
            [r.offset, r.timestamp, _b64(r.key), _b64(r.value), [[k, _b64(v)] for k, v in r.headers]] for r in records
        ]


def test_kafka_python_reads_our_control_batches(tmp_path: Path) -> None:
    from kraft.messages.generated import leader_change_message as lcm

    message = lcm.LeaderChangeMessage(version=0, leader_id=2, voters=[lcm.Voter(voter_id=2)], granting_voters=[])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_control_batch([message], base_offset=0, partition_leader_epoch=5, timestamp=42))
    [batch] = _run("read", str(path))
    assert batch["crc_valid"] and batch["is_control"]
    assert base64.b64decode(batch["records"][0][2]) == b"\x00\x00\x00\x02"


@pytest.mark.parametrize("codec", [c.kafka_name for c in Compression])
def test_we_read_what_kafka_python_writes(tmp_path: Path, codec: str) -> None:
    path = tmp_path / "00000000000000000000.log"
    expected = _run("write", str(path), codec)
    ours = list(decode_batches(path.read_bytes()))
    assert len(ours) == len(expected)
    for (batch, records), exp in zip(ours, expected):
        assert batch.is_valid()
        assert batch.base_offset == exp["base_offset"]
        assert [[r.offset, r.timestamp, _b64(r.key), _b64(r.value), [[k, _b64(v)] for k, v in r.headers]]
                for r in records] == exp["records"]
    assert any(b.compression.kafka_name == codec for b, _ in ours)
