"""What an operator sees of each ``Ready`` the raft driver executes: one log line
per role change (with its epoch, leader and reason), per vote granted, per
step of a voter change, and the raft metrics (:mod:`kraft.node.raft_metrics`)
when they are on.

Called by the raft driver after it executed a ``Ready`` (so everything logged has
happened: the election state is durable, the records are written); it reads
the core between two calls and never changes it. Nothing here runs per
request at INFO. The metrics are reached through :class:`MetricsHooks`
(``RaftMetrics`` is one), so this module does not import them.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from kraft.raft import events as ev
from kraft.raft import rpcs
from kraft.raft.logops import AppendAsFollower, AppendAsLeader

if TYPE_CHECKING:
    from kraft.raft.core import RaftCore, Ready, RoleChange

log = logging.getLogger("kraft.node")

__all__ = ["MetricsHooks", "Telemetry", "count_records"]

_BATCH_LENGTH = struct.Struct(">i")  # at byte 8 of a v2 batch: bytes after this field
_RECORDS_COUNT_AT = 57  # v2 batch header: records count (int32)


def count_records(data: bytes | memoryview) -> int:
    """Records in a run of v2 record batches (their headers' counts); a
    truncated tail counts nothing."""
    total, pos, size = 0, 0, len(data)
    while pos + 61 <= size:
        length = _BATCH_LENGTH.unpack_from(data, pos + 8)[0]
        if length <= 0 or pos + 12 + length > size:
            break
        total += _BATCH_LENGTH.unpack_from(data, pos + _RECORDS_COUNT_AT)[0]
        pos += 12 + length
    return total


class MetricsHooks(Protocol):
    """What the raft driver and its telemetry report to the raft metrics
    (:class:`kraft.node.raft_metrics.RaftMetrics`)."""

    def idle_start(self) -> None: ...

    def idle_end(self) -> None: ...

    def role_changed(self, change: RoleChange) -> None: ...

    def appended_as_leader(self, records: int, last_offset: int, append_time_ms: int) -> None: ...

    def fetched(self, records: int) -> None: ...

    def committed(self, high_watermark: int, now_wall_ms: int) -> None: ...


class Telemetry:
    """Logs and metrics from the Readys of one raft_driver."""

    def __init__(self, metrics: MetricsHooks | None = None) -> None:
        self.metrics = metrics
        self._voters: object = None
        self._voters_offset: int | None = None
        self._voters_committed = True
        self._voter_change: str | None = None
        self._vote: tuple[int, int] | None = None

    def after_ready(self, ready: Ready, core: RaftCore, clock_ms: Callable[[], int]) -> None:
        for change in ready.role_changes:
            if change.previous is None:
                log.info("raft role %s in epoch %d at start-up, leader %s", change.role, change.epoch,
                         _leader(change.leader_id))
            else:
                log.info("raft role %s -> %s in epoch %d, leader %s: %s", change.previous, change.role,
                         change.epoch, _leader(change.leader_id), change.reason)
        for notice in ready.notices:
            log.info("%s", notice)
        persisted = ready.persist
        if persisted is not None and persisted.voted_key is not None \
                and persisted.voted_key.id != core.local_id:
            vote = (persisted.epoch, persisted.voted_key.id)
            if vote != self._vote:
                # A vote granted is durable now (quorum-state written).
                self._vote = vote
                log.info("voted for candidate %d in epoch %d", vote[1], vote[0])
        self._voter_changes(ready, core)
        metrics = self.metrics
        if metrics is None:
            return
        for change in ready.role_changes:
            metrics.role_changed(change)
        for op in ready.log:
            if type(op) is AppendAsLeader:
                batch = op.batch
                n = len(batch.records) or len(batch.controls)
                metrics.appended_as_leader(n, batch.base_offset + n - 1, batch.append_time_ms)
            elif type(op) is AppendAsFollower and op.records:
                metrics.fetched(count_records(op.records))
        if ready.committed is not None:
            metrics.committed(ready.committed, clock_ms())

    def _voter_changes(self, ready: Ready, core: RaftCore) -> None:
        """KIP-853 steps: a voter change admitted and answered (leader), the
        voter set read from the log changing, and that change committing."""
        pending = core.pending_voter_change
        if pending != self._voter_change:
            if pending is not None:
                log.info("voter change in progress: %s", pending)
            if self._voter_change is not None:
                answer = next((m.message.error.name for m in ready.send if isinstance(m, ev.OutboundResponse)
                               and isinstance(m.message, (rpcs.AddRaftVoterResponse, rpcs.RemoveRaftVoterResponse))),
                              "no answer")
                log.info("voter change finished: %s: %s", self._voter_change, answer)
            self._voter_change = pending
        voters = core.voters
        if voters is not self._voters and not voters.voter_ids and core.voters_offset is None:
            # A dynamic quorum's replica (an observer with
            # controller.quorum.bootstrap.servers) before it has read the
            # voter set from the log: nothing to name yet; the first set it
            # reads is the start-up line.
            pass
        elif voters is not self._voters:
            first = self._voters is None
            if first or voters != self._voters:
                ids = list(voters.voter_ids)
                if first:
                    log.info("voter set %s (%s)", ids, _source(core.voters_offset))
                else:
                    log.info("voter set changed to %s (%s)", ids, _source(core.voters_offset))
                self._voters_offset = core.voters_offset
                self._voters_committed = False
            self._voters = voters
        if not self._voters_committed:
            hwm = core.high_watermark
            offset = self._voters_offset
            if offset is None or offset < 0 or (hwm is not None and hwm > offset):
                self._voters_committed = True
                if offset is not None and offset >= 0:
                    log.info("voter set %s committed (VotersRecord at offset %d)", list(voters.voter_ids), offset)


def _leader(leader_id: int | None) -> str:
    return "unknown" if leader_id is None else str(leader_id)


def _source(offset: int | None) -> str:
    if offset is None:
        return "static controller.quorum.voters"
    if offset < 0:
        return "bootstrap checkpoint"
    return f"VotersRecord at offset {offset}"
