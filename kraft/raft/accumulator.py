"""The leader's batch accumulator: client appends wait up to the linger time.

Kafka's ``BatchAccumulator``: records handed to the leader are grouped into
batches; a batch is ready to be written when ``append.linger.ms`` has passed
since the first record of the open batch, when it is full
(``max_batch_size_bytes``), or when a control record (LeaderChangeMessage)
closes it. Offsets are assigned here, at append time, from the log end offset
at the start of the epoch, so a client learns its offset immediately.

Appends are bounded as Kafka bounds them: the records of one append always
go into one batch (a full open batch is completed first), so one append
larger than the maximum batch size raises
:class:`~kraft.raft.errors.RecordBatchTooLargeError`; and once
``max_number_of_batches`` completed batches wait to be written (Kafka's
``KafkaRaftClient.MAX_NUMBER_OF_BATCHES``, 10) an append raises
:class:`~kraft.raft.errors.AccumulatorFullError` and changes nothing. A
batch's size here is the sum of its record values (Kafka also counts the
record framing).
"""

from __future__ import annotations

from collections.abc import Sequence

from kraft.raft.errors import AccumulatorFullError, RecordBatchTooLargeError
from kraft.raft.logops import Batch, ControlRecord

_BYTES_LIKE = (bytes, bytearray, memoryview)

#: Kafka's ``KafkaRaftClient.MAX_NUMBER_OF_BATCHES``.
MAX_NUMBER_OF_BATCHES = 10


class BatchAccumulator:
    __slots__ = (
        "epoch",
        "next_offset",
        "_linger_ms",
        "_max_batch_bytes",
        "_max_batches",
        "_open",
        "_open_bytes",
        "_open_base",
        "_open_since_ms",
        "_completed",
    )

    def __init__(
        self,
        epoch: int,
        base_offset: int,
        linger_ms: int,
        max_batch_size_bytes: int,
        max_number_of_batches: int = MAX_NUMBER_OF_BATCHES,
    ) -> None:
        self.epoch = epoch
        self.next_offset = base_offset
        self._linger_ms = linger_ms
        self._max_batch_bytes = max_batch_size_bytes
        self._max_batches = max_number_of_batches
        self._open: list[bytes] = []
        self._open_bytes = 0
        self._open_base = base_offset
        self._open_since_ms = 0
        self._completed: list[Batch] = []

    def is_empty(self) -> bool:
        return not self._open and not self._completed

    def append(self, now_ms: int, records: Sequence[bytes]) -> int:
        """Queue data records, all in one batch; returns the offset of the
        last one. Raises (changing nothing) as Kafka's ``BatchAccumulator.append``
        does: :class:`AccumulatorFullError` when ``max_number_of_batches``
        completed batches wait, :class:`RecordBatchTooLargeError` when the
        records exceed the maximum batch size."""
        if len(self._completed) >= self._max_batches:
            raise AccumulatorFullError(
                f"Attempting to append records when the number of batches {len(self._completed)} "
                f"reached {self._max_batches}"
            )
        if len(records) == 1 and type(records[0]) is bytes:
            # The common case: one record, already bytes.
            values: Sequence[bytes] = records
            total = len(records[0])
        else:
            values, total = _checked(records)
        limit = self._max_batch_bytes
        if total > limit:
            raise RecordBatchTooLargeError(
                f"The total record(s) size of {total} exceeds the maximum allowed batch size of {limit}"
            )
        open_ = self._open
        if open_:
            if self._open_bytes + total > limit:
                self._complete_open(now_ms)
                open_ = self._open
        if not open_:
            self._open_base = self.next_offset
            self._open_since_ms = now_ms
        open_.extend(values)
        self._open_bytes += total
        self.next_offset += len(values)
        return self.next_offset - 1

    def append_control(self, now_ms: int, *controls: ControlRecord) -> int:
        """Close the open batch and queue one control batch holding
        ``controls``; it is written on the next drain, without lingering.
        Returns the offset of the last control record."""
        if not controls:
            raise ValueError("append_control needs at least one control record")
        self._complete_open(now_ms)
        offset = self.next_offset
        self._completed.append(Batch(offset, self.epoch, controls=tuple(controls), append_time_ms=now_ms))
        self.next_offset += len(controls)
        return self.next_offset - 1

    def time_until_drain(self, now_ms: int) -> int | None:
        """0 when a batch is ready; the remaining linger otherwise; ``None``
        when there is nothing to write."""
        if self._completed:
            return 0
        if self._open:
            return max(0, self._open_since_ms + self._linger_ms - now_ms)
        return None

    def drain(self, now_ms: int) -> list[Batch]:
        """Take every ready batch (the open one too once its linger passed)."""
        if self._open and now_ms >= self._open_since_ms + self._linger_ms:
            self._complete_open(now_ms)
        drained, self._completed = self._completed, []
        return drained

    def _complete_open(self, now_ms: int) -> None:
        if self._open:
            self._completed.append(
                Batch(self._open_base, self.epoch, tuple(self._open), append_time_ms=now_ms)
            )
            self._open = []
            self._open_bytes = 0


def _checked(records: Sequence[bytes]) -> tuple[list[bytes], int]:
    """The records as a new list of ``bytes`` (bytes-like values copied) and
    their total size; raises for no records or a value that is not bytes."""
    if not records:
        raise ValueError("append needs at least one record")
    values = list(records)
    total = 0
    for i, value in enumerate(values):
        if type(value) is not bytes:
            if not isinstance(value, _BYTES_LIKE):
                raise TypeError(f"records are bytes, got {type(value).__name__}")
            value = values[i] = bytes(value)
        total += len(value)
    return values, total
