"""Fold committed metadata records into :class:`~kraft.image.model.MetadataImage`.

Replay rules follow Kafka's ``MetadataDelta`` and the per-area deltas
(``FeaturesDelta``, ``ClusterDelta``, ``TopicsDelta``/``TopicDelta``,
``ConfigurationsDelta``, ``ClientQuotasDelta``, ``ScramDelta``,
``AclsDelta``, ``ProducerIdsDelta``, ``DelegationTokenDelta``):

* ``PartitionChangeRecord`` merges into the partition as
  ``PartitionRegistration.merge`` does: a null list leaves the field alone;
  ``leader == -2`` leaves the leader (and epoch) alone, any other value sets
  it and bumps the leader epoch; ``leaderRecoveryState == -1`` leaves it
  alone; the partition epoch always goes up by one; replicas given without
  directories (or with only MIGRATING ones) get ``DirectoryId.MIGRATING``.
* ``RemoveTopicRecord`` removes the topic and its topic configs.
* ``ClearElrRecord`` empties ELR and last-known ELR of a topic's partitions
  (all topics when the name is empty), as a partition change.
* ``ConfigRecord`` with a null value deletes the key; a resource left with no
  keys disappears. ``ClientQuotaRecord`` with ``remove`` likewise.
* ``FeatureLevelRecord`` level 0 removes a feature (``metadata.version``
  excepted, which is kept apart).
* ``BeginTransactionRecord`` .. ``EndTransactionRecord``: the records in
  between are applied together at the end; ``AbortTransactionRecord`` drops
  them (KIP-868). While a transaction is open, the image stays at the
  offset before it began.

A record that cannot be applied (a change to a partition that does not
exist, say) is logged and skipped; the image is left as it was. Records of
a type or version newer than ours are skipped with one warning per
(type, version).

Images are snapshot-consistent: :attr:`ImageBuilder.image` is the state as
of :attr:`MetadataImage.offset`, and never changes afterwards (sections are
copied on the first write after an image was handed out).
"""

from __future__ import annotations

import logging
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from kraft.image.decode import UnknownRecord, decode_metadata_value
from kraft.image.model import (
    METADATA_VERSION,
    BrokerRegistration,
    ClientQuotaEntity,
    ConfigResource,
    ConfigResourceType,
    ControllerRegistration,
    DelegationToken,
    FeaturesImage,
    Listener,
    MetadataImage,
    PartitionRegistration,
    ProducerIdsImage,
    Provenance,
    ScramCredential,
    StandardAcl,
    TopicImage,
    VersionRange,
    frozen_mapping,
    new_partition,
)
from kraft.messages.runtime import UUID_CACHE, uuid_from_bytes
from kraft.records.batch import record_value_spans
from kraft.records.metadata import MetadataRecord, metadata_type_name
from kraft.records.view import OffsetAndEpoch

log = logging.getLogger("kraft.image")

__all__ = ["ImageBuilder", "ReplayError", "merge_partition_change", "MIGRATING_DIRECTORY", "UNASSIGNED_DIRECTORY", "LOST_DIRECTORY"]

#: Kafka's ``DirectoryId`` constants.
# (MIGRATING is all zeros since Kafka 3.7, "DirectoryId.MIGRATING should be all zeros".)
MIGRATING_DIRECTORY = uuid.UUID(int=0)
UNASSIGNED_DIRECTORY = uuid.UUID(int=1)
LOST_DIRECTORY = uuid.UUID(int=2)

NO_LEADER_CHANGE = -2
NO_RECOVERY_STATE_CHANGE = -1
_MAX_WARNINGS = 100

# Record type ids (Kafka's MetadataRecordType) the builder names.
PARTITION_RECORD = 3
PARTITION_CHANGE = 5
FENCE_BROKER = 7
NO_OP = 20
BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25
_TRANSACTION_MARKERS = frozenset((BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION))
#: NoOpRecord values up to this size are remembered once decoded (a leader
#: writes the same few bytes every 500 ms: most of a real controller's log)
_NO_OP_MEMO_BYTES = 16
_NO_OP_MEMO_ENTRIES = 64
#: records sections of batches up to this size that held only NoOpRecords
#: are remembered (a leader's NoOp batch is the same 11 bytes every time)
_NO_OP_SECTION_BYTES = 64
#: a PartitionRecord's partition id and topic id; its leader and epochs
_ID_AND_TOPIC = struct.Struct(">i16s")
_THREE_INTS = struct.Struct(">iii")
_INT = struct.Struct(">i")
#: an int32 array of n elements, n < 127 (a one-byte compact length)
_INT_ARRAYS = tuple(struct.Struct(f">{n}i") for n in range(127))
_ZERO_DIRECTORIES = tuple(bytes(16 * n) for n in range(127))
_MIGRATING_DIRECTORIES = tuple((uuid.UUID(int=0),) * n for n in range(127))
_UNSET: Any = object()


class ReplayError(ValueError):
    """A record that does not apply to the current image (Kafka would fault)."""


@dataclass(slots=True)
class _Pending:
    offset: int
    epoch: int
    timestamp_ms: int
    record: MetadataRecord


class ImageBuilder:
    """Replays records in offset order. Feed it with :meth:`apply` (one
    record), :meth:`apply_batch` (a committed batch) and :meth:`load_snapshot`
    (reset to a snapshot's records); read :attr:`image`."""

    _recent_topic: tuple[bytes, dict[int, PartitionRegistration]] | None

    def __init__(self, image: MetadataImage | None = None) -> None:
        self._image = image or MetadataImage()
        self._reset_working()
        self._provenance_now = self._image.provenance
        #: (offset, epoch, time) the provenance moves to when next read: a
        #: log replays one batch after another, and most batches' Provenance
        #: would be replaced unread by the next one's
        self._provenance_next: tuple[int, int, int] | None = None
        self._last_offset = self._provenance_now.offset
        self._transaction: list[_Pending] | None = None
        self._transaction_start = -1
        self._warned: set[tuple[int | None, int | None]] = set()
        #: The most recent problems (skipped records), newest last.
        self.warnings: list[str] = []
        #: Records skipped because a newer Kafka wrote them (type, version) -> count.
        self.skipped_newer: dict[tuple[int | None, int | None], int] = {}
        self.records_applied = 0
        #: How many records were skipped or could not be applied (each
        #: counted, though a repeated kind is warned about once), and the
        #: last one's words: a controller, unlike a tool, stops at the first.
        self.problems = 0
        self.last_problem = ""
        #: a value's first three bytes -> (type id, version, the generated
        #: class's ``read``), or ``None`` where the generic path must decide
        self._kinds: dict[bytes, tuple[int, int, Any] | None] = {}
        self._no_ops: set[bytes] = set()
        self._no_op_sections: dict[bytes, int] = {}

    # ------------------------------------------------------------ reading

    @property
    def _provenance(self) -> Provenance:
        if self._provenance_next is not None:
            self._provenance_now = Provenance(*self._provenance_next)
            self._provenance_next = None
        return self._provenance_now

    @_provenance.setter
    def _provenance(self, provenance: Provenance) -> None:
        self._provenance_now = provenance
        self._provenance_next = None

    @property
    def image(self) -> MetadataImage:
        """The image as of the last applied record outside a transaction."""
        if self._owned or self._owned_topics or self._features is not None or self._producer_ids is not None \
                or self._provenance != self._image.provenance:
            self._publish()
        return self._image

    @property
    def offset(self) -> int:
        """The offset :attr:`image` is at."""
        return self._provenance.offset

    @property
    def last_offset(self) -> int:
        """The last offset fed, inside a transaction or not (the image may be
        behind it while a transaction is open)."""
        return self._last_offset

    @property
    def in_transaction(self) -> bool:
        return self._transaction is not None

    # ------------------------------------------------------------ feeding

    def reset(self) -> None:
        """Forget everything (a snapshot load starts here)."""
        self._image = MetadataImage()
        self._reset_working()
        self._provenance = Provenance()
        self._last_offset = -1
        self._transaction = None

    def load_snapshot(self, snapshot_id: OffsetAndEpoch, values: Iterable[bytes | MetadataRecord | UnknownRecord],
                      timestamp_ms: int = -1) -> MetadataImage:
        """Replace the state with a snapshot's records (Kafka loads a snapshot
        into an empty image). The image is then at ``snapshot_id.offset - 1``."""
        self.reset()
        kinds = self._kinds
        for value in values:
            if type(value) is bytes and self._transaction is None:
                # A snapshot is mostly PartitionRecords: read straight into
                # the image as apply_record_section reads them.
                kind = kinds.get(value[:3], _UNSET)
                if kind is _UNSET:
                    kind = self._kind(value[:3])
                if kind is not None and kind[0] == PARTITION_RECORD \
                        and self._fast_partition(value, 3, len(value), kind[1]):
                    self.records_applied += 1
                    continue
            self._recent_topic = None
            record = value if isinstance(value, (MetadataRecord, UnknownRecord)) else decode_metadata_value(value)
            self._apply_one(snapshot_id.offset - 1, snapshot_id.epoch, timestamp_ms, record, advance=False)
        if self._transaction is not None:
            self._warn(None, f"snapshot {snapshot_id} ends inside a metadata transaction; dropping it")
            self._transaction = None
        self._provenance = Provenance(snapshot_id.offset - 1, snapshot_id.epoch, timestamp_ms)
        self._last_offset = snapshot_id.offset - 1
        return self.image

    def apply(self, offset: int, record: bytes | MetadataRecord | UnknownRecord, *, epoch: int = -1,
              timestamp_ms: int = -1) -> None:
        """Apply one committed record (a raw value or a decoded record)."""
        if not isinstance(record, (MetadataRecord, UnknownRecord)):
            record = decode_metadata_value(record)
        self._apply_one(offset, epoch, timestamp_ms, record, advance=True)

    def apply_batch(self, base_offset: int, epoch: int, timestamp_ms: int, values: Iterable[bytes],
                    *, is_control: bool = False, last_offset: int | None = None) -> None:
        """Apply one committed batch. Control batches change no metadata but
        move the image's offset past them."""
        if is_control:
            values = list(values)
            end = last_offset if last_offset is not None else base_offset + max(len(values), 1) - 1
            self._last_offset = max(self._last_offset, end)
            if self._transaction is None:
                self._provenance = Provenance(end, epoch, timestamp_ms)
            return
        self._apply_values(base_offset, epoch, timestamp_ms, values)

    def _apply_values(self, base_offset: int, epoch: int, timestamp_ms: int, values: Iterable[bytes]) -> None:
        """The hot loop of opening a log: a record in the common shape (one-byte
        frame, type and version ids, a type and version we know, outside a
        transaction) is read straight from its bytes by the generated
        decoder and replayed, with no :class:`MetadataRecord` or
        :class:`Provenance` per record. Anything else takes :meth:`apply`,
        which words every problem as before."""
        kinds = self._kinds
        no_ops = self._no_ops
        replay = self._replay
        applied = 0
        last = -1
        offset = base_offset - 1
        for value in values:
            offset += 1
            message = None
            # One lookup by the first three bytes (frame version, type id,
            # version): a known (type, version) outside a transaction, or None.
            prefix = value[:3] if type(value) is bytes else bytes(value[:3])  # a memoryview may be unhashable
            kind = kinds.get(prefix, _UNSET) if self._transaction is None else None
            if kind is _UNSET:
                kind = self._kind(prefix)
            if kind is not None:
                api_key, version, reader = kind
                if api_key == NO_OP and type(value) is bytes and value in no_ops:
                    applied += 1
                    last = offset
                    continue
                try:
                    message, end = reader(value, 3, version)
                    if end != len(value):
                        message = None
                except Exception:  # noqa: BLE001 - apply() below says what is wrong
                    message = None
            if message is None:
                if last >= 0:
                    self._advance(last, epoch, timestamp_ms)
                    last = -1
                self.apply(offset, value, epoch=epoch, timestamp_ms=timestamp_ms)
                continue
            try:
                replay(api_key, message)
                applied += 1
            except ReplayError as e:
                self._warn(None, f"cannot apply {metadata_type_name(api_key)} at offset {offset}: {e}; skipped")
            if api_key == NO_OP and type(value) is bytes and len(value) <= _NO_OP_MEMO_BYTES \
                    and len(no_ops) < _NO_OP_MEMO_ENTRIES:
                no_ops.add(value)
            last = offset
        self.records_applied += applied
        if last >= 0:
            self._advance(last, epoch, timestamp_ms)

    def _advance(self, offset: int, epoch: int, timestamp_ms: int) -> None:
        """Records up to ``offset`` were applied outside a transaction."""
        if offset > self._last_offset:
            self._last_offset = offset
        self._provenance_next = (offset, epoch, timestamp_ms)

    def _apply_known_no_ops(self, section: bytes, count: int, base_offset: int, epoch: int,
                            timestamp_ms: int) -> bool:
        """Apply by one lookup a section seen before to hold only NoOpRecords
        (outside a transaction); ``False`` when it is not one."""
        if len(section) > _NO_OP_SECTION_BYTES or self._transaction is not None:
            return False
        if self._no_op_sections.get(section) is None:
            return False
        self.records_applied += count
        self._advance(base_offset + count - 1, epoch, timestamp_ms)
        return True

    def _remember_no_ops(self, section: bytes, count: int) -> None:
        """Remember a small section of ``count`` NoOpRecords, for
        :meth:`_apply_known_no_ops` (a controller writes the same one every
        500 ms), while the memo has room."""
        if len(section) <= _NO_OP_SECTION_BYTES and len(self._no_op_sections) < _NO_OP_MEMO_ENTRIES:
            self._no_op_sections[section] = count

    def apply_record_section(self, section: bytes, count: int, base_offset: int, epoch: int, timestamp_ms: int,
                             limit: int | None = None) -> bool:
        """Apply a committed data batch from its uncompressed records section
        (``count`` records; only the first ``limit`` when given): what
        :meth:`apply_batch` does with the batch's values, without copying
        them out or building a record per value. ``False``, with nothing
        applied, when the records do not frame exactly as Kafka's v2 records
        (the caller then decodes them the slow way, which says what is wrong).

        Beyond :meth:`_apply_values`' fast path: a section seen before to
        hold only NoOpRecords is applied by one lookup; a NoOpRecord without
        tagged fields is not decoded (there is nothing to apply); a
        PartitionRecord goes from its bytes straight into the
        :class:`PartitionRegistration` the image keeps."""
        n = count if limit is None or limit > count else limit
        if n <= 0:
            return True
        if n == count and self._apply_known_no_ops(section, count, base_offset, epoch, timestamp_ms):
            return True
        spans = record_value_spans(section, count, 0, len(section))
        if spans is None:
            return False
        self._recent_topic = None
        kinds = self._kinds
        replay = self._replay
        fast_partition = self._fast_partition
        fast_change = self._fast_partition_change
        applied = 0
        no_ops = 0
        last = -1
        offset = base_offset - 1
        for i in range(0, 2 * n, 2):
            start = spans[i]
            end = spans[i + 1]
            offset += 1
            if self._transaction is None:
                kind = kinds.get(section[start:start + 3], _UNSET)
                if kind is _UNSET:
                    kind = self._kind(section[start:start + 3])
            else:
                kind = None
            if kind is not None:
                api_key, version, reader = kind
                if api_key == NO_OP and end - start == 4 and section[start + 3] == 0:
                    # no fields, no tagged fields: nothing to decode or apply
                    applied += 1
                    no_ops += 1
                    last = offset
                    continue
                if (api_key == PARTITION_RECORD and fast_partition(section, start + 3, end, version)
                        or api_key == PARTITION_CHANGE and fast_change(section, start + 3, end)):
                    applied += 1
                    last = offset
                    continue
                try:
                    # The decoders read the section in place; a value read to
                    # anywhere but its end takes the generic path below.
                    message, stop = reader(section, start + 3, version)
                except Exception:  # noqa: BLE001 - apply() below says what is wrong
                    stop = -1
                if stop == end:
                    self._recent_topic = None
                    try:
                        replay(api_key, message)
                        applied += 1
                    except ReplayError as e:
                        self._warn(None, f"cannot apply {metadata_type_name(api_key)} at offset {offset}: {e}; skipped")
                    last = offset
                    continue
            if last >= 0:
                self._advance(last, epoch, timestamp_ms)
                last = -1
            self._recent_topic = None
            self.apply(offset, section[start:end], epoch=epoch, timestamp_ms=timestamp_ms)
        self.records_applied += applied
        if last >= 0:
            self._advance(last, epoch, timestamp_ms)
        if no_ops == count:
            self._remember_no_ops(section, count)
        return True

    def _fast_partition(self, buf: bytes, pos: int, end: int, version: int) -> bool:
        """A PartitionRecord (v0-v2) in ``buf[pos:end]`` without tagged fields,
        applied as :meth:`_partition` applies the decoded message, read with
        the generated decoder's layout and checks. ``False``, with nothing
        changed, for anything else (tagged fields, 127 or more replicas, a
        problem to report): the generic path then decides."""
        arrays = _INT_ARRAYS
        try:
            partition_id, raw_id = _ID_AND_TOPIC.unpack_from(buf, pos)
            pos += 20
            n = buf[pos] - 1
            if n < 0 or n > 126:
                return False
            replicas = arrays[n].unpack_from(buf, pos + 1)
            pos += 1 + 4 * n
            n = buf[pos] - 1
            if n < 0 or n > 126:
                return False
            isr = arrays[n].unpack_from(buf, pos + 1)
            pos += 1 + 4 * n
            n = buf[pos] - 1
            if n < 0 or n > 126:
                return False
            removing = arrays[n].unpack_from(buf, pos + 1)
            pos += 1 + 4 * n
            n = buf[pos] - 1
            if n < 0 or n > 126:
                return False
            adding = arrays[n].unpack_from(buf, pos + 1)
            pos += 1 + 4 * n
            leader, leader_epoch, partition_epoch = _THREE_INTS.unpack_from(buf, pos)
            pos += 12
            count = len(replicas)
            directories = _MIGRATING_DIRECTORIES[count]
            if version >= 1:
                n = buf[pos] - 1
                if n < 0 or n > 126 or (n and n != count):
                    return False
                pos += 1
                raw = buf[pos:pos + 16 * n]
                pos += 16 * n
                if raw != _ZERO_DIRECTORIES[n]:  # PartitionRegistration.defaultToMigrating
                    directories = tuple(UUID_CACHE.get(d) or uuid_from_bytes(d)
                                        for d in (raw[i:i + 16] for i in range(0, 16 * n, 16)))
            if pos + 1 != end or buf[pos] != 0:
                return False
            recent = self._recent_topic
            if recent is not None and recent[0] == raw_id:
                parts = recent[1]
            else:
                topic_id = UUID_CACHE.get(raw_id) or uuid_from_bytes(raw_id)
                parts = self._topic_partitions(topic_id)
                self._recent_topic = (raw_id, parts)
        except (IndexError, struct.error, ReplayError):
            return False
        parts[partition_id] = new_partition(replicas, directories, isr, removing, adding, leader, 0,
                                            leader_epoch, partition_epoch)
        return True

    def _fast_partition_change(self, buf: bytes, pos: int, end: int) -> bool:
        """A PartitionChangeRecord (any version) that changes only the ISR
        and/or the leader (tagged fields 0 and 1, each at most once) -- the
        change a controller writes most -- merged as :func:`_merge` merges
        it, read with the generated decoder's layout and checks. ``False``,
        with nothing changed, for anything else."""
        try:
            partition_id, raw_id = _ID_AND_TOPIC.unpack_from(buf, pos)
            pos += 20
            tags = buf[pos]
            if tags > 2:
                return False
            pos += 1
            isr: tuple[int, ...] | None = None
            leader = NO_LEADER_CHANGE
            seen = -1
            for _ in range(tags):
                tag = buf[pos]
                size = buf[pos + 1]
                if tag <= seen or size > 0x7F:
                    return False
                seen = tag
                pos += 2
                field_end = pos + size
                if tag == 0:
                    n = buf[pos] - 1
                    if n > 126:
                        return False
                    if n >= 0:
                        isr = _INT_ARRAYS[n].unpack_from(buf, pos + 1)
                        pos += 1 + 4 * n
                    else:
                        pos += 1  # a null ISR: unchanged
                elif tag == 1:
                    leader, = _INT.unpack_from(buf, pos)
                    pos += 4
                else:
                    return False
                if pos != field_end:
                    return False
            if pos != end:
                return False
            recent = self._recent_topic
            if recent is not None and recent[0] == raw_id:
                parts = recent[1]
            else:
                topic_id = UUID_CACHE.get(raw_id) or uuid_from_bytes(raw_id)
                parts = self._topic_partitions(topic_id)
                self._recent_topic = (raw_id, parts)
        except (IndexError, struct.error, ReplayError):
            return False
        p = parts.get(partition_id)
        if p is None or len(p.directories) != len(p.replicas):
            return False
        if leader == NO_LEADER_CHANGE:
            leader, leader_epoch = p.leader, p.leader_epoch
        else:
            leader_epoch = p.leader_epoch + 1
        parts[partition_id] = new_partition(
            p.replicas, p.directories, p.isr if isr is None else isr, p.removing_replicas, p.adding_replicas,
            leader, p.leader_recovery_state, leader_epoch, p.partition_epoch + 1, p.elr, p.last_known_elr)
        return True

    def _kind(self, key: bytes) -> tuple[int, int, Any] | None:
        """``(type id, version, generated read)`` for a record value starting
        with ``prefix``: frame version 1, one-byte type and version ids of a
        type and version we know, not a transaction marker (those change what
        the image shows); else ``None`` (the generic path)."""
        from kraft.messages import registry

        kind: tuple[int, int, Any] | None = None
        if len(key) == 3 and key[0] == 1 and key[1] < 0x80 and key[2] < 0x80 and key[1] not in _TRANSACTION_MARKERS:
            try:
                cls = registry.metadata_record_class(key[1])
            except KeyError:
                cls = None
            if cls is not None and cls.LOWEST_VERSION <= key[2] <= cls.HIGHEST_VERSION:
                kind = (key[1], key[2], cls.read)
        if len(self._kinds) < 4096:  # bounded: a corrupt log may hold any prefix
            self._kinds[key] = kind
        return kind

    # ------------------------------------------------------------ internals

    def _reset_working(self) -> None:
        self._owned: dict[str, dict[Any, Any]] = {}
        self._owned_topics: dict[uuid.UUID, dict[int, PartitionRegistration]] = {}
        self._features: FeaturesImage | None = None
        self._producer_ids: ProducerIdsImage | None = None
        #: the raw topic id and working partitions of the last PartitionRecord
        #: applied from its bytes, while nothing else was applied since (a
        #: topic's PartitionRecords come one after another)
        self._recent_topic = None

    def _warn(self, key: tuple[int | None, int | None] | None, message: str) -> None:
        self.problems += 1
        self.last_problem = message
        if key is not None:
            if key in self._warned:
                return
            self._warned.add(key)
        log.warning("%s", message)
        self.warnings.append(message)
        del self.warnings[:-_MAX_WARNINGS]

    def _apply_one(self, offset: int, epoch: int, timestamp_ms: int, record: MetadataRecord | UnknownRecord,
                   *, advance: bool) -> None:
        if isinstance(record, UnknownRecord):
            key = (record.api_key, record.version)
            self.skipped_newer[key] = self.skipped_newer.get(key, 0) + 1
            what = "a newer Kafka's record" if record.newer else "an undecodable record"
            self._warn(key, f"skipping {what} at offset {offset}: {record.reason} (shown raw; the image ignores it)")
        else:
            key_type = record.api_key
            if key_type == BEGIN_TRANSACTION:
                if self._transaction is not None:
                    self._warn(None, f"BeginTransactionRecord at offset {offset} inside the transaction begun at "
                                     f"{self._transaction_start}; continuing that transaction")
                else:
                    self._transaction = []
                    self._transaction_start = offset
            elif key_type == END_TRANSACTION:
                if self._transaction is None:
                    self._warn(None, f"EndTransactionRecord at offset {offset} without a transaction; ignored")
                else:
                    pending, self._transaction = self._transaction, None
                    for p in pending:
                        self._replay_logged(p.offset, p.record)
            elif key_type == ABORT_TRANSACTION:
                if self._transaction is None:
                    self._warn(None, f"AbortTransactionRecord at offset {offset} without a transaction; ignored")
                else:
                    log.info("metadata transaction begun at offset %d aborted at %d: %d records dropped",
                             self._transaction_start, offset, len(self._transaction))
                    self._transaction = None
            elif self._transaction is not None:
                self._transaction.append(_Pending(offset, epoch, timestamp_ms, record))
            else:
                self._replay_logged(offset, record)
        if advance:
            self._last_offset = max(self._last_offset, offset)
            if self._transaction is None:
                self._provenance = Provenance(offset, epoch, timestamp_ms)

    def _replay_logged(self, offset: int, record: MetadataRecord) -> None:
        try:
            self._replay(record.api_key, record.message)
            self.records_applied += 1
        except ReplayError as e:
            self._warn(None, f"cannot apply {metadata_type_name(record.api_key)} at offset {offset}: {e}; skipped")

    def _publish(self) -> None:
        image = self._image
        changes: dict[str, Any] = {}
        if self._owned_topics:
            topics = self._section("topics")
            for topic_id, parts in self._owned_topics.items():
                topic = topics.get(topic_id)
                if topic is not None:
                    topics[topic_id] = replace(topic, partitions=frozen_mapping(parts))
        for name, d in self._owned.items():
            changes[name] = frozen_mapping(d)
        if self._features is not None:
            changes["features"] = self._features
        if self._producer_ids is not None:
            changes["producer_ids"] = self._producer_ids
        changes["provenance"] = self._provenance
        self._image = replace(image, **changes)
        self._reset_working()

    def _section(self, name: str) -> dict[Any, Any]:
        """The working copy of a section (copied from the image on first write)."""
        d = self._owned.get(name)
        if d is None:
            d = self._owned[name] = dict(getattr(self._image, name))
        return d

    def _topic_partitions(self, topic_id: uuid.UUID) -> dict[int, PartitionRegistration]:
        parts = self._owned_topics.get(topic_id)
        if parts is None:
            topic = self._section("topics").get(topic_id)
            if topic is None:
                raise ReplayError(f"no topic with id {_kuuid(topic_id)}")
            parts = self._owned_topics[topic_id] = dict(topic.partitions)
        return parts

    @property
    def _cur_features(self) -> FeaturesImage:
        return self._features if self._features is not None else self._image.features

    # ------------------------------------------------------------ replay

    def _replay(self, api_key: int, m: Any) -> None:  # noqa: C901 - one arm per record type
        match api_key:
            # The most frequent types first (the arms are tried in order).
            case 3:  # PartitionRecord
                self._partition(m)
            case 5:  # PartitionChangeRecord
                parts = self._topic_partitions(m.topic_id)
                current = parts.get(m.partition_id)
                if current is None:
                    raise ReplayError(f"unable to find partition {_kuuid(m.topic_id)}:{m.partition_id}")
                parts[m.partition_id] = _merge(current, m)
            case 0:  # RegisterBrokerRecord
                self._register_broker(m)
            case 1:  # UnregisterBrokerRecord
                self._section("brokers").pop(m.broker_id, None)
            case 7 | 8:  # FenceBrokerRecord / UnfenceBrokerRecord
                brokers = self._section("brokers")
                broker = brokers.get(m.id)
                if broker is None:
                    raise ReplayError(f"broker {m.id} is not registered")
                brokers[m.id] = replace(broker, fenced=api_key == FENCE_BROKER)
            case 17:  # BrokerRegistrationChangeRecord
                self._broker_change(m)
            case 27:  # RegisterControllerRecord
                self._register_controller(m)
            case 29:  # UnregisterControllerRecord
                self._section("controllers").pop(m.controller_id, None)
            case 2:  # TopicRecord
                topics = self._section("topics")
                topics[m.topic_id] = TopicImage(m.name, m.topic_id)
                self._owned_topics.pop(m.topic_id, None)
                self._section("topic_ids_by_name")[m.name] = m.topic_id
            case 9:  # RemoveTopicRecord
                self._remove_topic(m)
            case 28:  # ClearElrRecord
                self._clear_elr(m.topic_name)
            case 4:  # ConfigRecord
                self._config(m)
            case 12:  # FeatureLevelRecord
                self._feature_level(m)
            case 21:  # ZkMigrationStateRecord
                self._features = replace(self._cur_features, zk_migration_state=m.zk_migration_state)
            case 14:  # ClientQuotaRecord
                self._client_quota(m)
            case 11 | 22:  # UserScramCredentialRecord / RemoveUserScramCredentialRecord
                self._scram_credential(m, remove=api_key == 22)
            case 18:  # AccessControlEntryRecord
                self._section("acls")[m.id] = StandardAcl(
                    m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation,
                    m.permission_type)
            case 19:  # RemoveAccessControlEntryRecord
                if self._section("acls").pop(m.id, None) is None:
                    raise ReplayError(f"no ACL with id {_kuuid(m.id)} to remove")
            case 15:  # ProducerIdsRecord
                self._producer_ids = ProducerIdsImage(m.next_producer_id)
            case 10:  # DelegationTokenRecord
                self._section("delegation_tokens")[m.token_id] = DelegationToken(
                    m.token_id, m.owner, m.requester, tuple(m.renewers), m.issue_timestamp, m.max_timestamp,
                    m.expiration_timestamp)
            case 26:  # RemoveDelegationTokenRecord
                self._section("delegation_tokens").pop(m.token_id, None)
            case 20:  # NoOpRecord
                pass
            case _:
                raise ReplayError(f"record type {api_key} has no replay rule")

    def _register_broker(self, m: Any) -> None:
        self._section("brokers")[m.broker_id] = BrokerRegistration(
            id=m.broker_id, epoch=m.broker_epoch, incarnation_id=m.incarnation_id,
            listeners=tuple(Listener(e.name, e.host, e.port, e.security_protocol) for e in m.end_points),
            supported_features=tuple(VersionRange(f.name, f.min_supported_version, f.max_supported_version)
                                     for f in m.features),
            rack=m.rack, fenced=bool(m.fenced), in_controlled_shutdown=bool(m.in_controlled_shutdown),
            is_migrating_zk_broker=bool(m.is_migrating_zk_broker),
            directories=tuple(m.log_dirs or ()),
            cordoned_directories=None if m.cordoned_log_dirs is None else tuple(m.cordoned_log_dirs),
        )

    def _register_controller(self, m: Any) -> None:
        self._section("controllers")[m.controller_id] = ControllerRegistration(
            id=m.controller_id, incarnation_id=m.incarnation_id, zk_migration_ready=bool(m.zk_migration_ready),
            listeners=tuple(Listener(e.name, e.host, e.port, e.security_protocol) for e in m.end_points),
            supported_features=tuple(VersionRange(f.name, f.min_supported_version, f.max_supported_version)
                                     for f in m.features),
        )

    def _remove_topic(self, m: Any) -> None:
        topic = self._section("topics").pop(m.topic_id, None)
        if topic is None:
            raise ReplayError(f"no topic with id {_kuuid(m.topic_id)} to remove")
        self._owned_topics.pop(m.topic_id, None)
        names = self._section("topic_ids_by_name")
        if names.get(topic.name) == m.topic_id:
            del names[topic.name]
        self._delete_config(ConfigResource(ConfigResourceType.TOPIC, topic.name))

    def _feature_level(self, m: Any) -> None:
        f = self._cur_features
        if m.name == METADATA_VERSION:
            self._features = replace(f, metadata_version=m.feature_level)
            return
        finalized = dict(f.finalized)
        if m.feature_level == 0:
            finalized.pop(m.name, None)
        else:
            finalized[m.name] = m.feature_level
        self._features = replace(f, finalized=frozen_mapping(dict(sorted(finalized.items()))))

    def _client_quota(self, m: Any) -> None:
        entity = ClientQuotaEntity.of([(e.entity_type, e.entity_name) for e in m.entity])
        quotas = self._section("client_quotas")
        values = dict(quotas.get(entity, {}))
        if m.remove:
            values.pop(m.key, None)
        else:
            values[m.key] = m.value
        if values:
            quotas[entity] = frozen_mapping(values)
        else:
            quotas.pop(entity, None)

    def _scram_credential(self, m: Any, *, remove: bool) -> None:
        scram = self._section("scram")
        users = dict(scram.get(m.mechanism, {}))
        if remove:
            users.pop(m.name, None)
            if not users:
                scram.pop(m.mechanism, None)
                return
        else:
            users[m.name] = ScramCredential(m.name, m.mechanism, m.iterations, bytes(m.salt),
                                            bytes(m.stored_key), bytes(m.server_key))
        scram[m.mechanism] = frozen_mapping(users)

    def _broker_change(self, m: Any) -> None:
        brokers = self._section("brokers")
        broker = brokers.get(m.broker_id)
        if broker is None:
            raise ReplayError(f"broker {m.broker_id} is not registered")
        # BrokerRegistrationFencingChange: -1 unfence, 0 none, 1 fence.
        if m.fenced not in (-1, 0, 1):
            raise ReplayError(f"invalid fencing change {m.fenced} for broker {m.broker_id}")
        # BrokerRegistrationInControlledShutdownChange: 0 none, 1 in controlled shutdown.
        if m.in_controlled_shutdown not in (0, 1):
            raise ReplayError(f"invalid controlled shutdown change {m.in_controlled_shutdown} for broker {m.broker_id}")
        changes: dict[str, Any] = {}
        if m.fenced != 0:
            changes["fenced"] = m.fenced == 1
        if m.in_controlled_shutdown == 1:
            changes["in_controlled_shutdown"] = True
        if m.log_dirs:
            changes["directories"] = tuple(m.log_dirs)
        if m.cordoned_log_dirs is not None:
            changes["cordoned_directories"] = tuple(m.cordoned_log_dirs)
        brokers[m.broker_id] = replace(broker, **changes)

    def _partition(self, m: Any) -> None:
        replicas = tuple(m.replicas)
        directories = m.directories
        if directories and len(directories) != len(replicas):
            raise ReplayError(f"partition {_kuuid(m.topic_id)}:{m.partition_id} has {len(replicas)} replicas "
                              f"but {len(directories)} directories")
        parts = self._owned_topics.get(m.topic_id)
        if parts is None:
            parts = self._topic_partitions(m.topic_id)
        # Positional: the hot path of opening a log builds one per PartitionRecord.
        parts[m.partition_id] = new_partition(
            replicas, _default_to_migrating(directories, len(replicas)), tuple(m.isr),
            tuple(m.removing_replicas), tuple(m.adding_replicas), m.leader, m.leader_recovery_state,
            m.leader_epoch, m.partition_epoch, tuple(m.eligible_leader_replicas or ()),
            tuple(m.last_known_elr or ()),
        )

    def _clear_elr(self, topic_name: str) -> None:
        topics = self._section("topics")
        if topic_name:
            topic_id = self._section("topic_ids_by_name").get(topic_name)
            if topic_id is None:
                raise ReplayError(f"unable to clear elr for topic with name {topic_name}: no such topic found")
            targets = [topic_id]
        else:
            targets = list(topics)
        for topic_id in targets:
            parts = self._topic_partitions(topic_id)
            for pid, part in list(parts.items()):
                if part.elr or part.last_known_elr:
                    parts[pid] = replace(part, elr=(), last_known_elr=(), partition_epoch=part.partition_epoch + 1)

    def _config(self, m: Any) -> None:
        resource = ConfigResource(m.resource_type, m.resource_name)
        configs = self._section("configs")
        values = dict(configs.get(resource, {}))
        if m.value is None:
            values.pop(m.name, None)
        else:
            values[m.name] = m.value
        if values:
            configs[resource] = frozen_mapping(values)
        else:
            configs.pop(resource, None)

    def _delete_config(self, resource: ConfigResource) -> None:
        if resource in self._image.configs or resource in self._owned.get("configs", {}):
            self._section("configs").pop(resource, None)


def _kuuid(u: uuid.UUID) -> str:
    from kraft.messages.json_form import uuid_to_kafka

    return uuid_to_kafka(u)


def _default_to_migrating(directories: list[uuid.UUID] | tuple[uuid.UUID, ...] | None,
                          replicas: int) -> tuple[uuid.UUID, ...]:
    """Kafka's ``PartitionRegistration.defaultToMigrating``: no directories,
    or only MIGRATING ones, mean every replica is MIGRATING (a record written
    before KIP-858, as Kafka 4.0 shows it: ``directories=[AAAAAAAAAAAAAAAAAAAAAA]``)."""
    if directories:
        for d in directories:
            if d.int != 0:  # not MIGRATING (compared by int: UUID.__eq__ is Python code)
                return tuple(directories)
    return (MIGRATING_DIRECTORY,) * replicas


def merge_partition_change(p: PartitionRegistration, m: Any) -> PartitionRegistration:
    """A partition after a PartitionChangeRecord (``PartitionRegistration.merge``),
    for the controller, which answers with the registration its change makes."""
    return _merge(p, m)


def _merge(p: PartitionRegistration, m: Any) -> PartitionRegistration:
    """``PartitionRegistration.merge(PartitionChangeRecord)``."""
    replicas = p.replicas if m.replicas is None else tuple(m.replicas)
    if m.directories is None:
        directories: tuple[uuid.UUID, ...] = p.directories
    else:
        if m.replicas is not None and m.directories and len(m.replicas) != len(m.directories):
            raise ReplayError(f"partition change {_kuuid(m.topic_id)}:{m.partition_id} has {len(m.replicas)} "
                              f"replicas but {len(m.directories)} directories")
        directories = tuple(m.directories)
    directories = _default_to_migrating(directories, len(replicas))
    if len(directories) != len(replicas):
        raise ReplayError(f"partition change {_kuuid(m.topic_id)}:{m.partition_id} leaves {len(replicas)} "
                          f"replicas with {len(directories)} directories")
    if m.leader == NO_LEADER_CHANGE:
        leader, leader_epoch = p.leader, p.leader_epoch
    else:
        leader, leader_epoch = m.leader, p.leader_epoch + 1
    recovery = p.leader_recovery_state if m.leader_recovery_state == NO_RECOVERY_STATE_CHANGE \
        else m.leader_recovery_state
    return new_partition(
        replicas,
        directories,
        p.isr if m.isr is None else tuple(m.isr),
        p.removing_replicas if m.removing_replicas is None else tuple(m.removing_replicas),
        p.adding_replicas if m.adding_replicas is None else tuple(m.adding_replicas),
        leader,
        recovery,
        leader_epoch,
        p.partition_epoch + 1,
        p.elr if m.eligible_leader_replicas is None else tuple(m.eligible_leader_replicas),
        p.last_known_elr if m.last_known_elr is None else tuple(m.last_known_elr),
    )
