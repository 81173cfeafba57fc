"""Read or write v2 record batches with kafka-python, in a subprocess.

    python kafka_python_io.py read FILE          -> one JSON object per batch
    python kafka_python_io.py write FILE CODEC   -> writes batches, prints them as JSON

Run as a separate process, so kafka-python's codec imports (python-snappy,
lz4, zstandard: the bindings it uses, installed by the test extra) stay out of
the test process.
"""

from __future__ import annotations

import base64
import json
import sys

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords  # noqa: E402

_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(bytes(value)).decode("ascii")


def read(path: str) -> None:
    records = MemoryRecords(open(path, "rb").read())
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        assert isinstance(batch, DefaultRecordBatch)
        crc_valid = batch.validate_crc()
        out = {
            "base_offset": batch.base_offset,
            "crc_valid": crc_valid,
            "compression": batch.compression_type,
            "is_control": batch.is_control_batch,
            "leader_epoch": batch.leader_epoch,
            "records": [
                [r.offset, r.timestamp, _b64(r.key), _b64(r.value), [[k, _b64(v)] for k, v in r.headers]]
                for r in batch
            ],
        }
        print(json.dumps(out))


def write(path: str, codec: str) -> None:
    offset = 0
    with open(path, "wb") as f:
        for n in (1, 3, 200):
            builder = DefaultRecordBatchBuilder(
                magic=2, compression_type=_CODECS[codec], is_transactional=False,
                producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
            )
            written = []
            for i in range(n):
                key = None if i % 2 else f"key-{offset + i}".encode()
                value = (f"value-{offset + i}-" * (i % 7 + 1)).encode()
                headers = [("h", b"x")] if i % 5 == 0 else []
                builder.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=headers)
                written.append([offset + i, 1_700_000_000_000 + i, _b64(key), _b64(value), [[k, _b64(v)] for k, v in headers]])
            data = bytearray(builder.build())
            data[0:8] = offset.to_bytes(8, "big")  # kafka-python builds at base offset 0
            f.write(data)
            print(json.dumps({"base_offset": offset, "records": written}))
            offset += n


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "read":
        read(sys.argv[2])
    elif command == "write":
        write(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown command {command}")
