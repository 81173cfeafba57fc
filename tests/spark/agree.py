"""The reference: what ``kraft dump-log --json --cluster-metadata-decoder``
prints for a file, reduced to the fields a data source row must match."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kraft.tools.record_format.describe_record import java_json
from kraft.tools.dump_log import run_dump

#: dump-log JSON key -> row column
SAME = {
    "position": "position",
    "baseOffset": "batch_base_offset",
    "lastOffset": "batch_last_offset",
    "partitionLeaderEpoch": "partition_leader_epoch",
    "isControl": "is_control",
    "isTransactional": "is_transactional",
    "compresscodec": "compression",
    "crcValid": "crc_valid",
    "offset": "offset",
    "timestampType": "timestamp_type",
    "timestamp": "timestamp",
}


def dump_log_records(files: Iterable[Path]) -> list[dict[str, Any]]:
    """dump-log's records as comparable dicts (file, fields, type, payload JSON)."""
    out_rows = []
    for path in files:
        out, err = io.StringIO(), io.StringIO()
        run_dump([str(path)], as_json=True, metadata_decoder=True, out=out, err=err)
        for line in out.getvalue().splitlines():
            node = json.loads(line)
            row = {col: node[key] for key, col in SAME.items()}
            row["file"] = str(Path(path).resolve())
            if node["isControl"]:
                row["record_type"] = node.get("controlType")
                payload = node.get("control")
            else:
                payload = node.get("payload")
                row["record_type"] = None if payload is None else payload["type"]
            row["payload"] = None if payload is None else java_json(payload)
            row["key_size"] = node["keySize"]
            row["value_size"] = node["valueSize"]
            out_rows.append(row)
    return out_rows


def row_records(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Data source rows that carry a record, reduced like :func:`dump_log_records`."""
    out = []
    for r in rows:
        if r["offset"] is None:
            continue
        row = {col: r[col] for col in SAME.values()}
        row["file"] = str(Path(r["file"]).resolve())  # as dump_log_records: compared resolved
        # dump-log names a metadata record's type only when it decodes; the
        # row also keeps what could be read of an undecodable one.
        row["record_type"] = r["record_type"] if r["payload"] is not None or r["is_control"] else None
        row["payload"] = r["payload"]
        if "key_size" in r:  # sizes computed by Spark instead of collecting the bytes
            row["key_size"], row["value_size"] = r["key_size"], r["value_size"]
        else:
            row["key_size"] = -1 if r["key"] is None else len(r["key"])
            row["value_size"] = -1 if r["value"] is None else len(r["value"])
        out.append(row)
    return out


def sort_key(r: dict[str, Any]) -> tuple[str, int, int]:
    return (r["file"], r["position"], r["offset"])
