"""Kafka's ``StripedReplicaPlacer`` (metadata/placement, Kafka 4.4): where a
new partition's replicas go.

Racks are visited round-robin from a random offset and each rack's brokers
round-robin from their own random offset, so consecutive partitions stripe
across racks and brokers. The first replica (the preferred leader) is always
an unfenced broker; later replicas may be fenced ones when the unfenced run
out. Once as many partitions were placed as there are unfenced brokers, the
racks and brokers are shuffled so the pattern does not repeat. The
randomness comes from the caller's ``random.Random`` (Kafka passes its
controller's ``Random``); ``randrange`` stands in for ``nextInt`` and
``shuffle`` for ``Collections.shuffle``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from kraft.controller.result import ApiError
from kraft.wire.errors import ErrorCode

INVALID_REPLICATION_FACTOR = ErrorCode.INVALID_REPLICATION_FACTOR

__all__ = ["UsableBroker", "StripedReplicaPlacer", "place"]


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """A broker placement may use (Kafka's ``UsableBroker``): registered and
    not shutting down; a fenced one is only ever a follower."""

    id: int
    rack: str | None
    fenced: bool


class _BrokerList:
    """Kafka's ``BrokerList``: sorted ids read round-robin from an offset
    that moves on by one at each new iteration epoch."""

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rng: random.Random) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.randrange(len(self.brokers))

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


class _Rack:
    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def next(self, epoch: int) -> int:
        """An unfenced broker first, a fenced one when those ran out."""
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _rack_order(name: str | None) -> tuple[int, str]:
    # Kafka's OptionalStringComparator: the absent rack sorts first.
    return (0, "") if name is None else (1, name)


def _refuse_non_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise ApiError(INVALID_REPLICATION_FACTOR, f"Invalid replication factor {replication_factor}: "
                       "the replication factor must be positive.")


def _refuse_all_fenced(num_unfenced: int) -> None:
    if num_unfenced == 0:
        raise ApiError(INVALID_REPLICATION_FACTOR,
                       "All brokers are currently fenced, or have all their log directories cordoned.")


def _refuse_too_few(replication_factor: int, num_total: int) -> None:
    if replication_factor > num_total:
        raise ApiError(INVALID_REPLICATION_FACTOR, f"The target replication factor of {replication_factor} "
                       f"cannot be reached because only {num_total} broker(s) are registered or some brokers "
                       "have all their log directories cordoned.")


class StripedReplicaPlacer:
    """Kafka's ``StripedReplicaPlacer.RackList`` over one set of usable
    brokers; :meth:`place` gives one partition's replicas at a time."""

    def __init__(self, rng: random.Random, brokers: Iterable[UsableBroker]) -> None:
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        self.num_total = 0
        self.num_unfenced = 0
        for broker in brokers:
            rack = self.racks.setdefault(broker.rack, _Rack())
            if broker.fenced:
                rack.fenced.brokers.append(broker.id)
            else:
                self.num_unfenced += 1
                rack.unfenced.brokers.append(broker.id)
            self.num_total += 1
        for rack in self.racks.values():  # Kafka initializes racks in HashMap order; each draws its own offsets
            rack.fenced.initialize(rng)
            rack.unfenced.initialize(rng)
        self.rack_names: list[str | None] = sorted(self.racks, key=_rack_order)
        self.epoch = 0
        self.offset = rng.randrange(len(self.rack_names)) if self.rack_names else 0

    def place(self, replication_factor: int) -> list[int]:
        """One partition's replicas, the first an unfenced broker."""
        _refuse_non_positive(replication_factor)
        _refuse_too_few(replication_factor, self.num_total)
        _refuse_all_fenced(self.num_unfenced)
        if self.epoch == self.num_unfenced and self.num_unfenced > 1:
            # As many partitions as unfenced brokers: reshuffle so the
            # assignments do not repeat (not for one broker: it would loop).
            self._shuffle()
            self.epoch = 0
        if self.offset == len(self.rack_names):
            self.offset = 0
        first = self.offset
        brokers: list[int] = []
        while True:
            result = self.racks[self.rack_names[first]].unfenced.next(self.epoch)
            if result >= 0:
                brokers.append(result)
                break
            first = (first + 1) % len(self.rack_names)
        rack_index = self.offset
        for _ in range(1, replication_factor):
            result = -1
            while result < 0:
                if rack_index == first:
                    first = -1  # the first replica's rack is skipped once
                else:
                    result = self.racks[self.rack_names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % len(self.rack_names)
            brokers.append(result)
        self.epoch += 1
        self.offset += 1
        return brokers

    def _shuffle(self) -> None:
        self.rng.shuffle(self.rack_names)
        for rack in self.racks.values():
            self.rng.shuffle(rack.fenced.brokers)
            self.rng.shuffle(rack.unfenced.brokers)


def place(rng: random.Random, brokers: Iterable[UsableBroker], num_partitions: int,
          replication_factor: int) -> list[list[int]]:
    """``StripedReplicaPlacer.place``: every partition's replicas, or an
    :class:`ApiError` INVALID_REPLICATION_FACTOR with Kafka's message."""
    placer = StripedReplicaPlacer(rng, brokers)
    _refuse_non_positive(replication_factor)
    _refuse_all_fenced(placer.num_unfenced)
    _refuse_too_few(replication_factor, placer.num_total)
    return [placer.place(replication_factor) for _ in range(num_partitions)]
