"""Kafka's StripedReplicaPlacer (metadata/placement, Kafka 4.4)."""

from __future__ import annotations

import random

import pytest

from kraft.controller.placement import StripedReplicaPlacer, UsableBroker, place
from kraft.controller.result import ApiError
from kraft.wire.errors import ErrorCode


def _brokers(*specs: tuple[int, str | None, bool]) -> list[UsableBroker]:
    return [UsableBroker(i, rack, fenced) for i, rack, fenced in specs]


def test_every_partition_gets_distinct_replicas_led_by_an_unfenced_broker() -> None:
    """StripedReplicaPlacer.RackList.place: the first replica is unfenced; no broker twice."""
    brokers = _brokers((1, None, False), (2, None, True), (3, None, False), (4, None, False))
    for seed in range(20):
        for replicas in place(random.Random(seed), brokers, 12, 3):
            assert len(set(replicas)) == 3
            assert replicas[0] != 2


def test_replicas_spread_over_racks() -> None:
    """StripedReplicaPlacer.RackList.place: racks are visited round-robin, so
    with as many racks as replicas each replica is on a different rack."""
    brokers = _brokers((1, "a", False), (2, "a", False), (3, "b", False), (4, "b", False),
                       (5, "c", False), (6, "c", False))
    rack = {b.id: b.rack for b in brokers}
    for replicas in place(random.Random(7), brokers, 30, 3):
        assert len({rack[r] for r in replicas}) == 3


def test_leadership_is_striped_across_brokers() -> None:
    """StripedReplicaPlacer: consecutive partitions start at the next broker,
    so n partitions over n unfenced brokers have n distinct leaders."""
    brokers = _brokers(*((i, None, False) for i in range(5)))
    leaders = [r[0] for r in place(random.Random(3), brokers, 5, 2)]
    assert sorted(leaders) == [0, 1, 2, 3, 4]


def test_the_same_seed_places_the_same_way() -> None:
    """StripedReplicaPlacer(Random): all randomness comes from the caller's Random."""
    brokers = _brokers(*((i, f"r{i % 2}", False) for i in range(6)))
    assert place(random.Random(42), brokers, 20, 3) == place(random.Random(42), brokers, 20, 3)


@pytest.mark.parametrize("brokers,factor,message", [
    (_brokers((1, None, False)), 0, "Invalid replication factor 0: the replication factor must be positive."),
    (_brokers((1, None, False), (2, None, True)), 3,
     "The target replication factor of 3 cannot be reached because only 2 broker(s) are registered or some "
     "brokers have all their log directories cordoned."),
    (_brokers((1, None, True)), 1, "All brokers are currently fenced, or have all their log directories cordoned."),
    ([], 1, "All brokers are currently fenced, or have all their log directories cordoned."),
], ids=["non-positive", "too-few", "all-fenced", "none"])
def test_refusals_are_invalid_replication_factor(brokers: list[UsableBroker], factor: int, message: str) -> None:
    """StripedReplicaPlacer.place: throwInvalidReplicationFactorIfNonPositive, IfZero, IfTooFewBrokers."""
    with pytest.raises(ApiError) as e:
        place(random.Random(0), brokers, 1, factor)
    assert e.value.error == ErrorCode.INVALID_REPLICATION_FACTOR
    assert e.value.message == message


def test_a_single_unfenced_broker_does_not_loop() -> None:
    """StripedReplicaPlacer.RackList.place: no reshuffle for one unfenced broker."""
    placer = StripedReplicaPlacer(random.Random(1), _brokers((1, None, False), (2, None, True)))
    assert [placer.place(2) for _ in range(4)] == [[1, 2]] * 4
