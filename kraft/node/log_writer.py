"""The log operations of a ``Ready`` carried out on the metadata log: the
one place bytes meet the core's abstractions (batches the core asks to
append become Kafka record batches here; fetched records the log refuses are
dropped, and the core fetches them again). The raft driver runs these; so do
the simulation's disk-backed replicas."""

from __future__ import annotations

import logging

from kraft.node.control_records import encode_control_batch
from kraft.raft.logops import AppendAsFollower, AppendAsLeader, Batch, Flush, InstallSnapshot, LogOp, SnapshotChunk, TruncateTo
from kraft.records.batch import build_data_batch
from kraft.records.errors import CorruptRecordError, CorruptSnapshotError, LogOffsetError
from kraft.records.log import MetadataLog

log = logging.getLogger("kraft.node")

__all__ = ["apply_log_op", "encode_batch"]


def apply_log_op(log_: MetadataLog, op: LogOp) -> bool:
    """Execute one log operation of a ``Ready`` on the metadata log, as the
    node does (the simulation's disk-backed replicas run this same code).
    Returns True if it wrote new data. Fetched records or snapshot chunks the
    log refuses are logged and dropped (the core fetches them again); disk
    errors (``OSError``) propagate."""
    wrote = False
    match op:
        case AppendAsLeader(batch=batch):
            log_.append_as_leader(encode_batch(batch), batch.epoch)
            wrote = True
        case AppendAsFollower(records=records):
            if records:
                try:
                    log_.append_as_follower(records)
                    wrote = True
                except (CorruptRecordError, LogOffsetError) as e:
                    # Kafka's KafkaRaftClient fails the fetch; the next
                    # one starts again from our (unchanged) log end.
                    log.warning("refused fetched records: %s", e)
        case TruncateTo(offset=offset):
            log_.truncate_to(offset)
        case Flush():
            log_.flush()
        case SnapshotChunk(snapshot_id=sid, position=position, data=data):
            try:
                log_.write_snapshot_chunk(sid, position, data)
                wrote = True
            except LogOffsetError as e:
                # An earlier chunk was lost (disk error): the install
                # fails too, and the next Fetch starts the download over.
                log.warning("dropped a snapshot chunk: %s", e)
        case InstallSnapshot(snapshot_id=sid):
            try:
                log_.install_snapshot(sid)
            except (LogOffsetError, CorruptSnapshotError) as e:
                # The log is unchanged; the leader answers our next Fetch
                # (still below its log start) with the snapshot id again.
                log.warning("snapshot %s not installed, it will be fetched again: %s", sid, e)
            else:
                wrote = True
                log.info("installed snapshot %d-%d from the leader: the log restarts at offset %d",
                         sid.offset, sid.epoch, sid.offset)
    return wrote


def encode_batch(batch: Batch) -> bytes:
    """A core ``Batch`` as a Kafka v2 record batch (data or control)."""
    if batch.controls:
        # LeaderChange, KRaftVersion, Voters (KIP-853): kraft/node/control_records.py
        return encode_control_batch(batch)
    return build_data_batch(list(batch.records), base_offset=batch.base_offset, epoch=batch.epoch,
                            timestamp=batch.append_time_ms)
