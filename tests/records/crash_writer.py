"""A writer process for the crash tests: appends to a MetadataLog forever,
printing ``acked <log end offset>`` after each durable (fsynced) append, and
now and then truncates, snapshots or cleans. Record values are a function of
their offset, so any surviving log can be checked against what was written.

    python crash_writer.py DIR SEED
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kraft.records.batch import Record, build_batch  # noqa: E402
from kraft.records.compression import Compression  # noqa: E402
from kraft.records.log import MetadataLog  # noqa: E402
from kraft.records.log_config import LogConfig  # noqa: E402
from kraft.records.view import OffsetAndEpoch  # noqa: E402
from tests.records.helpers import BASE_TS, value_for  # noqa: E402

CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512, retention_bytes=48 * 1024, retention_ms=-1)


def epoch_of(offset: int) -> int:
    return 1 + offset // 400


def main() -> None:
    directory, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    log = MetadataLog.open(directory, CONFIG)
    print(f"opened {log.start_offset} {log.end_offset}", flush=True)
    while True:
        action = rng.random()
        latest = log.latest_snapshot_id()
        floor = max(log.start_offset, latest.offset if latest else 0)
        if action < 0.02 and log.end_offset - floor > 10:
            # Like raft, never below committed data (a snapshot covers only committed records).
            target = max(log.end_offset - rng.randint(1, 8), floor)
            # Truncation removes the batch holding the target whole: go to its start.
            target = next(log.iter_batches(target)).base_offset
            if target < floor:
                continue
            # Announced first: a kill during the truncation may or may not have removed them.
            print(f"truncating {target}", flush=True)
            end = log.truncate_to(target)
            print(f"truncated {end}", flush=True)
            continue
        if action < 0.05 and log.end_offset > 0:
            end = log.end_offset
            sid = OffsetAndEpoch(end, epoch_of(end - 1))
            latest = log.latest_snapshot_id()
            if latest is None or latest.offset < end:
                with log.create_snapshot(sid, last_contained_log_timestamp=BASE_TS + end) as writer:
                    writer.append([b"\x01\x14\x00\x00"] * rng.randint(1, 50))
                    writer.freeze()
                log.maybe_clean()
            continue
        offset = log.end_offset
        count = rng.randint(1, 6)
        # Never let one append straddle an epoch boundary.
        count = min(count, 400 - offset % 400)
        records = [Record(offset + i, BASE_TS + offset + i, None, value_for(offset + i)) for i in range(count)]
        codec = rng.choice([Compression.NONE, Compression.NONE, Compression.LZ4, Compression.ZSTD])
        data = build_batch(records, base_offset=offset, compression=codec)
        log.append_as_leader(data, epoch_of(offset))
        print(f"acked {log.end_offset}", flush=True)


if __name__ == "__main__":
    main()
