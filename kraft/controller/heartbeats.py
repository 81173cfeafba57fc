"""Broker sessions on the active controller (Kafka's
``BrokerHeartbeatManager`` and ``BrokerHeartbeatTracker``).

Only the active controller keeps this state, and it is never written to the
log: a newly active controller starts every registered broker with a fresh
session (its last contact is the activation time), so a failover fences no
broker that goes on heartbeating. Time is an input (``now_ms``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum

__all__ = ["BrokerControlState", "BrokerHeartbeatManager", "HeartbeatIntent"]

log = logging.getLogger("kraft.controller")


class BrokerControlState(Enum):
    """Kafka's ``BrokerControlState``: (fenced, in controlled shutdown, should shut down)."""

    FENCED = (True, False, False)
    UNFENCED = (False, False, False)
    CONTROLLED_SHUTDOWN = (False, True, False)
    SHUTDOWN_NOW = (True, False, True)

    @property
    def fenced(self) -> bool:
        return self.value[0]

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.value[1]

    @property
    def should_shut_down(self) -> bool:
        return self.value[2]


@dataclass(frozen=True, slots=True)
class HeartbeatIntent:
    """What a BrokerHeartbeat asks for."""

    want_fence: bool
    want_shut_down: bool
    current_metadata_offset: int


@dataclass(slots=True)
class _BrokerSession:
    broker_id: int
    epoch: int
    fenced: bool
    last_contact_ms: int
    metadata_offset: int = -1
    #: The log offset of the record that put it in controlled shutdown (-1: not shutting down).
    controlled_shutdown_offset: int = -1

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0


class BrokerHeartbeatManager:
    """The sessions of the registered brokers, by id."""

    def __init__(self, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._brokers: dict[int, _BrokerSession] = {}

    def register(self, broker_id: int, epoch: int, fenced: bool, now_ms: int) -> None:
        """``BrokerHeartbeatManager.register``: a (new) registration starts
        or keeps a session; its fencing state follows the registration."""
        session = self._brokers.get(broker_id)
        if session is None or session.epoch != epoch:
            self._brokers[broker_id] = _BrokerSession(broker_id, epoch, fenced, now_ms)
            return
        self.touch(broker_id, fenced, session.metadata_offset, now_ms)

    def remove(self, broker_id: int) -> None:
        self._brokers.pop(broker_id, None)

    def has_valid_session(self, broker_id: int, epoch: int, now_ms: int) -> bool:
        """``BrokerHeartbeatTracker.hasValidSession``: a heartbeat of this
        incarnation within the session timeout."""
        session = self._brokers.get(broker_id)
        return (session is not None and session.epoch == epoch
                and now_ms - session.last_contact_ms < self.session_timeout_ms)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int, now_ms: int) -> None:
        """``BrokerHeartbeatManager.touch``: a heartbeat arrived; a fenced
        broker leaves controlled shutdown (it shuts down at its next one)."""
        session = self._brokers[broker_id]
        session.fenced = fenced
        session.metadata_offset = metadata_offset
        session.last_contact_ms = now_ms
        if fenced:
            session.controlled_shutdown_offset = -1

    def mark_controlled_shutdown(self, broker_id: int, offset: int) -> None:
        """``maybeUpdateControlledShutdownOffset``: only the first time."""
        session = self._brokers.get(broker_id)
        if session is not None and not session.fenced and not session.shutting_down:
            session.controlled_shutdown_offset = offset

    def lowest_active_offset(self) -> int:
        """The lowest metadata offset of the unfenced brokers not shutting
        down (``lowestActiveOffset``): a broker in controlled shutdown may go
        once every active broker has seen the record that moved its leaders."""
        offsets = [s.metadata_offset for s in self._brokers.values() if not s.fenced and not s.shutting_down]
        return min(offsets) if offsets else 2**63 - 1

    def stale_brokers(self, now_ms: int) -> list[int]:
        """Unfenced brokers whose session expired (``findOneStaleBroker``, all of them)."""
        return sorted(s.broker_id for s in self._brokers.values()
                      if not s.fenced and now_ms - s.last_contact_ms >= self.session_timeout_ms)

    def next_expiry_ms(self) -> int | None:
        """When the next unfenced session expires (the fencing check's deadline)."""
        times = [s.last_contact_ms + self.session_timeout_ms for s in self._brokers.values() if not s.fenced]
        return min(times) if times else None

    def next_state(self, broker_id: int, intent: HeartbeatIntent, register_record_offset: int,
                   has_leaderships: bool) -> tuple[BrokerControlState, BrokerControlState]:
        """``calculateNextBrokerState``: (current, next)."""
        session = self._brokers[broker_id]
        S = BrokerControlState
        current = S.CONTROLLED_SHUTDOWN if session.shutting_down else S.FENCED if session.fenced else S.UNFENCED
        if current is S.FENCED:
            if intent.want_shut_down:
                log.info("Fenced broker %d has requested and been granted an immediate shutdown.", broker_id)
                return current, S.SHUTDOWN_NOW
            if not intent.want_fence and intent.current_metadata_offset >= register_record_offset:
                log.info("The request from broker %d to unfence has been granted because it has caught up with "
                         "the offset of its register broker record %d.", broker_id, register_record_offset)
                return current, S.UNFENCED
            return current, S.FENCED
        if current is S.UNFENCED:
            if intent.want_fence:
                if intent.want_shut_down:
                    log.info("Unfenced broker %d has requested and been granted an immediate shutdown.", broker_id)
                    return current, S.SHUTDOWN_NOW
                log.info("Unfenced broker %d has requested and been granted fencing", broker_id)
                return current, S.FENCED
            if intent.want_shut_down:
                if has_leaderships:
                    log.info("Unfenced broker %d has requested and been granted a controlled shutdown.", broker_id)
                    return current, S.CONTROLLED_SHUTDOWN
                log.info("Unfenced broker %d has requested and been granted an immediate shutdown.", broker_id)
                return current, S.SHUTDOWN_NOW
            return current, S.UNFENCED
        # CONTROLLED_SHUTDOWN
        if has_leaderships:
            return current, S.CONTROLLED_SHUTDOWN
        lowest = self.lowest_active_offset()
        if session.controlled_shutdown_offset <= lowest:
            log.info("The request from broker %d to shut down has been granted since the lowest active offset %d "
                     "is now greater than the broker's controlled shutdown offset %d.", broker_id, lowest,
                     session.controlled_shutdown_offset)
            return current, S.SHUTDOWN_NOW
        return current, S.CONTROLLED_SHUTDOWN
