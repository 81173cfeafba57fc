"""Knobs of the on-disk metadata log, with Kafka's defaults and config keys."""

from __future__ import annotations

from dataclasses import dataclass

from kraft.records.index import DEFAULT_MAX_INDEX_SIZE

DAY_MS = 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class LogConfig:
    #: ``metadata.log.segment.bytes``: roll the active segment past this size.
    segment_bytes: int = 1024 * 1024 * 1024
    #: ``metadata.log.segment.ms``: roll once the newest batch is this much
    #: newer than the segment's first batch.
    segment_ms: int = 7 * DAY_MS
    #: ``index.interval.bytes``: bytes between two offset-index entries.
    index_interval_bytes: int = 4096
    #: ``segment.index.bytes``: a full index forces a roll.
    max_index_size: int = DEFAULT_MAX_INDEX_SIZE
    #: ``metadata.max.retention.bytes``: snapshots + log beyond this are cleaned
    #: (oldest snapshot first, always keeping one). Negative disables.
    retention_bytes: int = 100 * 1024 * 1024
    #: ``metadata.max.retention.ms``: snapshots older than this are cleaned
    #: (always keeping one). Negative disables.
    retention_ms: int = 7 * DAY_MS
    #: fsync the segment after every append (KafkaRaftClient flushes after each
    #: leader drain and each follower fetch). False: the caller calls flush().
    flush_on_append: bool = True

    def __post_init__(self) -> None:
        if self.segment_bytes < 61:
            raise ValueError(f"segment_bytes {self.segment_bytes} cannot hold a single batch header")
        if self.index_interval_bytes < 0:
            raise ValueError("index_interval_bytes must be >= 0")
        if self.max_index_size < 12:
            raise ValueError("max_index_size must hold at least one entry")
