"""Kafka error codes the raft core answers with, and the core's own exceptions.

Two kinds of trouble, kept apart as in h11:

* a *peer* breaks the protocol (a stale epoch, a bogus fetch offset, a vote
  from a non-voter): the core never raises, it answers with one of Kafka's
  error codes (:class:`Errors`) or, for a response it cannot accept, records a
  :class:`RemoteProtocolViolation` in the ``Ready`` and carries on;
* *we* break the protocol (the shell asks for an illegal transition, appends
  on a follower, snapshots an uncommitted offset): the core raises a
  :class:`LocalRaftError` subclass and leaves its state unchanged.

The numeric values are Kafka's (``org.apache.kafka.common.protocol.Errors``);
they go on the wire unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from kraft.wire.errors import ErrorCode


#: Kafka's error codes (``org.apache.kafka.common.protocol.Errors``); one
#: table for the whole project, defined beside the wire codecs.
Errors = ErrorCode


class RaftError(Exception):
    """Base of every exception the raft core raises."""


class LocalRaftError(RaftError):
    """The caller (the shell, the state machine, or the core itself) broke a
    rule. The core's state is unchanged when this is raised."""


class IllegalTransitionError(LocalRaftError):
    """A ``QuorumState.transition_to_*`` call that Kafka's state machine does
    not allow from the current role."""


class NotLeaderError(LocalRaftError):
    """An append (or resign) on a replica that is not the leader of the given
    epoch; Kafka's ``NotLeaderException``."""


class RecordBatchTooLargeError(LocalRaftError):
    """One append whose records together exceed the maximum batch size:
    Kafka's ``RecordBatchTooLargeException`` from ``BatchAccumulator.append``
    (the records of one append always go into one batch)."""


class AccumulatorFullError(LocalRaftError):
    """An append while the leader already holds the maximum number of
    completed batches not yet written: Kafka's ``IllegalStateException``
    from ``BatchAccumulator.append`` ("the number of batches ... reached").
    The caller slows down: wait for earlier appends to commit."""


class InvalidSnapshotIdError(LocalRaftError):
    """A snapshot id that is not a committed (offset, epoch) of the log."""


@dataclass(frozen=True, slots=True)
class RemoteProtocolViolation:
    """A peer sent something a correct KRaft replica never sends (for example a
    leader asking us to truncate below our high watermark, or a second leader
    for an epoch). The core refuses it and reports it here instead of raising;
    the shell logs it, the simulation treats it as a failure."""

    source: int
    description: str
