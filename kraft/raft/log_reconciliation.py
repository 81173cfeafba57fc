"""Log reconciliation rules shared by leader and follower (KIP-101, KIP-595).

Pure functions over a :class:`~kraft.records.view.LogView`:

* the leader validates a fetch's (offset, last fetched epoch) against its
  leader-epoch cache and snapshots — Kafka's ``ReplicatedLog.validateOffsetAndEpoch``;
* the follower computes where to truncate after a diverging epoch — Kafka's
  ``ReplicatedLog.truncateToEndOffset``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kraft.records.view import LogView, OffsetAndEpoch

#: Kafka's BOOTSTRAP_SNAPSHOT_ID: the synthetic (0, 0) snapshot, never replicated.
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


class FetchValidity(Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    kind: FetchValidity
    offset_and_epoch: OffsetAndEpoch


def validate_offset_and_epoch(log: LogView, offset: int, epoch: int) -> ValidOffsetAndEpoch:
    """Is (``offset``, ``epoch``) — a fetcher's log end offset and the epoch of
    its last record — a prefix of this log?

    * ``SNAPSHOT`` (latest snapshot id): the fetcher is behind the log start,
      or at the log start with an epoch other than the snapshot's, or has an
      epoch older than the snapshot's;
    * ``DIVERGING`` (end offset of the largest epoch <= ``epoch``): the epoch is
      unknown here or ends before ``offset``; the fetcher truncates to it;
    * ``VALID`` otherwise.
    """
    start = log.start_offset
    if start == 0 and offset == 0:
        return ValidOffsetAndEpoch(FetchValidity.VALID, OffsetAndEpoch(0, 0))
    earliest = log.earliest_snapshot_id()
    if earliest is not None and (
        offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch
    ):
        latest = log.latest_snapshot_id() or earliest
        return ValidOffsetAndEpoch(FetchValidity.SNAPSHOT, latest)
    end = log.end_offset_for_epoch(epoch)
    if end.epoch < 0:
        # No epoch <= ``epoch`` in the log: everything the fetcher has is
        # unknown here, so it reconciles from our start.
        end = OffsetAndEpoch(start, earliest.epoch if earliest is not None else 0)
    if end.epoch != epoch or end.offset < offset:
        return ValidOffsetAndEpoch(FetchValidity.DIVERGING, end)
    return ValidOffsetAndEpoch(FetchValidity.VALID, OffsetAndEpoch(offset, epoch))


def truncation_offset(log: LogView, diverging: OffsetAndEpoch) -> int:
    """Where a follower truncates after the leader answered with ``diverging``:
    the end of the same epoch in both logs, whichever is smaller; or the end
    of our largest epoch below it."""
    if diverging.epoch == 0:
        offset = min(diverging.offset, log.end_offset)
    else:
        local = log.end_offset_for_epoch(diverging.epoch)
        if local.epoch < 0:
            offset = log.start_offset
        elif local.epoch == diverging.epoch:
            offset = min(local.offset, diverging.offset)
        else:
            offset = local.offset
    # Never below the log start: offsets there are in a snapshot, which only
    # ever holds committed records.
    return max(offset, log.start_offset)
