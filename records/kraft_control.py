"""The KRaft control-record history of a log (KIP-853).

Kafka's ``KRaftControlRecordStateMachine`` reads every ``VotersRecord`` and
``KRaftVersionRecord`` of the latest snapshot and of the log up to the log
end -- uncommitted ones included -- and keeps them keyed by offset
(``VoterSetHistory``, ``LogHistory``), so that a truncation of the log
reverts them and a snapshot can be written with the voter set as of its end
offset. :class:`KRaftControlHistory` is that history; the log that owns it
(``MetadataLog``, the simulation's ``MemLog``) feeds it as it appends,
truncates and installs snapshots, and exposes :meth:`KRaftControlHistory.state`
through ``LogView.kraft_control_state``.

A snapshot's control records sit at the snapshot's end offset - 1: -1 for
the bootstrap checkpoint ``00000000000000000000-0000000000.checkpoint`` that
``kafka-storage format --standalone`` / ``--initial-controllers`` writes.

The helpers below convert between the generated ``VotersRecord`` message and
the plain :class:`~kraft.records.view.VoterEntry` tuples the history holds.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kraft.records.control import ControlRecordType, decode_control_record
from kraft.records.view import KRaftControlState, VoterEntry, VotersAt

__all__ = [
    "KRaftControlHistory",
    "control_entries",
    "voter_entries",
    "voters_record_of",
    "kraft_version_record_of",
]

#: Kafka's ``Uuid.ZERO_UUID``: "no directory id".
_ZERO_UUID = uuid.UUID(int=0)


class KRaftControlHistory:
    """Voter sets and ``kraft.version`` levels keyed by the offset of the
    record that set them, in offset order."""

    __slots__ = ("_voters", "_voter_offsets", "_versions", "_version_offsets", "_state")

    def __init__(self) -> None:
        self._voters: list[VotersAt] = []
        self._voter_offsets: list[int] = []
        self._versions: list[int] = []
        self._version_offsets: list[int] = []
        self._state: KRaftControlState | None = None

    # --- reads ------------------------------------------------------------------

    def state(self) -> KRaftControlState:
        """The latest voter set and kraft.version; the same object until the
        history changes (callers compare by identity)."""
        if self._state is None:
            voters = self._voters[-1] if self._voters else None
            previous = self._voters[-2] if len(self._voters) > 1 else None
            version = self._versions[-1] if self._versions else 0
            self._state = KRaftControlState(voters, version, previous)
        return self._state

    def voters_at(self, offset: int) -> VotersAt | None:
        """The voter set in effect at ``offset``: the latest entry at or below it."""
        i = bisect.bisect_right(self._voter_offsets, offset) - 1
        return self._voters[i] if i >= 0 else None

    def voter_history(self) -> tuple[VotersAt, ...]:
        """Every voter set still known, in offset order."""
        return tuple(self._voters)

    def kraft_version_at(self, offset: int) -> int:
        i = bisect.bisect_right(self._version_offsets, offset) - 1
        return self._versions[i] if i >= 0 else 0

    def __len__(self) -> int:
        return len(self._voters) + len(self._versions)

    # --- writes (the owning log calls these) --------------------------------------

    def add_voters(self, offset: int, voters: Sequence[VoterEntry]) -> None:
        if self._voter_offsets and offset <= self._voter_offsets[-1]:
            raise ValueError(f"voter set at offset {offset} is not after the last one at {self._voter_offsets[-1]}")
        self._voters.append(VotersAt(offset, tuple(voters)))
        self._voter_offsets.append(offset)
        self._state = None

    def add_kraft_version(self, offset: int, kraft_version: int) -> None:
        if self._version_offsets and offset <= self._version_offsets[-1]:
            raise ValueError(
                f"kraft.version at offset {offset} is not after the last one at {self._version_offsets[-1]}"
            )
        if self._versions and kraft_version < self._versions[-1]:
            raise ValueError(f"kraft.version cannot go down from {self._versions[-1]} to {kraft_version}")
        self._versions.append(kraft_version)
        self._version_offsets.append(offset)
        self._state = None

    def apply(self, entries: Iterable[tuple[int, Any]]) -> None:
        """Add what :func:`control_entries` found: ``(offset, tuple of
        VoterEntry)`` for a voter set, ``(offset, int)`` for a kraft.version."""
        for offset, value in entries:
            if isinstance(value, int):
                self.add_kraft_version(offset, value)
            else:
                self.add_voters(offset, value)

    def truncate_from(self, offset: int) -> None:
        """Forget every entry at or after ``offset`` (the log was truncated there)."""
        i = bisect.bisect_left(self._voter_offsets, offset)
        j = bisect.bisect_left(self._version_offsets, offset)
        if i < len(self._voters) or j < len(self._versions):
            del self._voters[i:], self._voter_offsets[i:], self._versions[j:], self._version_offsets[j:]
            self._state = None

    def truncate_before(self, offset: int) -> None:
        """Drop entries below ``offset`` except the latest of them, which is
        still in effect there (Kafka's ``LogHistory.truncateOldEntries``; Kafka
        also drops that one when an entry sits exactly at ``offset``, we keep
        it so the voter set at ``offset - 1`` stays known for a snapshot there).

        The cached :meth:`state` goes with them: its ``previous_voters`` may
        be one of the dropped sets, and the raft core must not keep treating
        a removal the log start has moved past as pending."""
        i = bisect.bisect_left(self._voter_offsets, offset) - 1
        j = bisect.bisect_left(self._version_offsets, offset) - 1
        if i > 0:
            del self._voters[:i], self._voter_offsets[:i]
            self._state = None
        if j > 0:
            del self._versions[:j], self._version_offsets[:j]
            self._state = None

    def clear(self) -> None:
        if self._voters or self._versions:
            self._voters.clear()
            self._voter_offsets.clear()
            self._versions.clear()
            self._version_offsets.clear()
            self._state = None


# ---------------------------------------------------------------- Kafka records


def voter_entries(record: Any) -> tuple[VoterEntry, ...]:
    """The voters of a generated ``VotersRecord``."""
    out = []
    for v in record.voters:
        directory = None if v.voter_directory_id == _ZERO_UUID else v.voter_directory_id
        feature = v.k_raft_version_feature
        out.append(
            VoterEntry(
                v.voter_id,
                directory,
                tuple((e.name, e.host, e.port) for e in v.endpoints),
                feature.min_supported_version,
                feature.max_supported_version,
            )
        )
    return tuple(out)


def voters_record_of(voters: Sequence[VoterEntry]) -> Any:
    """The generated ``VotersRecord`` (data version 0) for ``voters``."""
    from kraft.messages.generated import voters_record as vr

    return vr.VotersRecord(
        version=0,
        voters=[
            vr.Voter(
                voter_id=v.voter_id,
                voter_directory_id=_ZERO_UUID if v.directory_id is None else v.directory_id,
                endpoints=[vr.Endpoint(name=name, host=host, port=port) for name, host, port in v.endpoints],
                k_raft_version_feature=vr.KRaftVersionFeature(
                    min_supported_version=v.min_kraft_version, max_supported_version=v.max_kraft_version
                ),
            )
            for v in voters
        ],
    )


def kraft_version_record_of(kraft_version: int) -> Any:
    """The generated ``KRaftVersionRecord`` (data version 0)."""
    from kraft.messages.generated import k_raft_version_record as kv

    return kv.KRaftVersionRecord(version=0, k_raft_version=kraft_version)


def control_entries(batch: Any) -> Iterator[tuple[int, Any]]:
    """The KRaftVersion and Voters records of one control ``RecordBatch``, as
    ``(offset, kraft_version)`` and ``(offset, voters)``. Other control
    records (LeaderChange, snapshot header/footer) are skipped."""
    if not batch.is_control:
        return
    for record in batch.records():
        control = decode_control_record(record)
        if control.type is ControlRecordType.KRAFT_VERSION:
            yield record.offset, int(control.message.k_raft_version)
        elif control.type is ControlRecordType.KRAFT_VOTERS:
            yield record.offset, voter_entries(control.message)
