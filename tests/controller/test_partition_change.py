"""Kafka's PartitionChangeBuilder (Kafka 4.4)."""

from __future__ import annotations

import uuid

from kraft.controller.metadata_version import by_name
from kraft.controller.partition_change import Election, PartitionChangeBuilder
from kraft.image.model import PartitionRegistration

TOPIC = uuid.UUID(int=77)
DIR = uuid.UUID(int=0)


def _partition(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, *, elr: tuple[int, ...] = (),
               last_known_elr: tuple[int, ...] = (), adding: tuple[int, ...] = (),
               removing: tuple[int, ...] = (), recovery: int = 0) -> PartitionRegistration:
    return PartitionRegistration(replicas=replicas, directories=(DIR,) * len(replicas), isr=isr,
                                 removing_replicas=removing, adding_replicas=adding, leader=leader,
                                 leader_recovery_state=recovery, leader_epoch=3, partition_epoch=5,
                                 elr=elr, last_known_elr=last_known_elr)


def _builder(p: PartitionRegistration, alive: set[int], *, mv: str = "4.4-IV2", min_isr: int = 1,
             elr: bool = False) -> PartitionChangeBuilder:
    return PartitionChangeBuilder(p, TOPIC, 0, lambda r: r in alive, by_name(mv), min_isr, elr) \
        .set_default_dir_provider(lambda r: DIR)


def test_no_change_is_no_record() -> None:
    """PartitionChangeBuilder.build: changeRecordIsNoOp -> Optional.empty()."""
    assert _builder(_partition((1, 2), (1, 2), 1), {1, 2}).build() is None


def test_isr_shrink_keeps_the_leader_epoch_since_3_6() -> None:
    """PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded: only before 3.6-IV0."""
    record = _builder(_partition((1, 2), (1, 2), 1), {1, 2}).set_target_isr([1]).build()
    assert record is not None and record.message.isr == [1] and record.message.leader == -2
    assert record.version == 2
    old = _builder(_partition((1, 2), (1, 2), 1), {1, 2}, mv="3.5-IV2").set_target_isr([1]).build()
    assert old is not None and old.message.leader == 1 and old.version == 0


def test_a_lost_leader_is_replaced_from_the_isr() -> None:
    """PartitionChangeBuilder.electAnyLeader: the first acceptable ISR member in replica order."""
    record = _builder(_partition((1, 2, 3), (1, 2, 3), 1), {2, 3}).set_target_isr([2, 3]).build()
    assert record is not None and (record.message.leader, record.message.isr) == (2, [2, 3])


def test_preferred_election_prefers_the_first_replica() -> None:
    """PartitionChangeBuilder.electPreferredLeader."""
    record = _builder(_partition((1, 2), (1, 2), 2), {1, 2}).set_election(Election.PREFERRED).build()
    assert record is not None and record.message.leader == 1


def test_unclean_election_only_when_asked() -> None:
    """PartitionChangeBuilder.electAnyLeader: outside the ISR only with Election.UNCLEAN, which sets the
    ISR to the new leader and leader recovery state RECOVERING."""
    p = _partition((1, 2), (1,), 1)
    clean = _builder(p, {2}).build()
    assert clean is not None and clean.message.leader == -1
    unclean = _builder(p, {2}).set_election(Election.UNCLEAN).build()
    assert unclean is not None
    assert (unclean.message.leader, unclean.message.isr, unclean.message.leader_recovery_state) == (2, [2], 1)


def test_elr_holds_replicas_that_left_below_min_isr() -> None:
    """PartitionChangeBuilder.maybePopulateTargetElr (KIP-966): below min ISR the removed ISR members
    become eligible leaders; an empty ISR keeps the last leader in lastKnownElr."""
    p = _partition((1, 2, 3), (1, 2, 3), 1)
    record = _builder(p, {1, 2, 3}, min_isr=2, elr=True).set_target_isr([1]).build()
    assert record is not None and record.message.eligible_leader_replicas == [2, 3]
    without = _builder(p, {1, 2, 3}, min_isr=2).set_target_isr([1]).build()
    assert without is not None and without.message.eligible_leader_replicas is None


def test_elr_member_leads_when_the_isr_is_empty() -> None:
    """PartitionChangeBuilder.tryElection: a leader from the ELR becomes the whole ISR."""
    p = _partition((1, 2, 3), (), -1, elr=(2, 3))
    record = _builder(p, {2, 3}, min_isr=2, elr=True).build()
    assert record is not None
    assert (record.message.leader, record.message.isr, record.message.eligible_leader_replicas) == (2, [2], [3])


def test_reassignment_completes_once_the_isr_has_the_adding_replicas() -> None:
    """PartitionChangeBuilder.completeReassignmentIfNeeded (PartitionReassignmentReplicas.maybeCompleteReassignment)."""
    p = _partition((1, 3, 2), (1, 2), 1, adding=(3,), removing=(2,))
    record = _builder(p, {1, 2, 3}).set_target_isr([1, 2, 3]).build()
    assert record is not None
    m = record.message
    assert (m.replicas, m.isr, m.adding_replicas, m.removing_replicas) == ([1, 3], [1, 3], [], [])
    assert m.leader == 1  # a removed replica must see a new leader epoch


def test_leader_recovery_state_change() -> None:
    """PartitionChangeBuilder.build: setTargetLeaderRecoveryState writes RECOVERED back."""
    record = _builder(_partition((1,), (1,), 1, recovery=1), {1}).set_target_leader_recovery_state(0).build()
    assert record is not None and record.message.leader_recovery_state == 0


def _plain(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int, **kw: tuple[int, ...]) -> PartitionRegistration:
    return PartitionRegistration(replicas=replicas, directories=(DIR,) * len(replicas), isr=isr,
                                 removing_replicas=kw.get("removing", ()), adding_replicas=kw.get("adding", ()),
                                 leader=leader, leader_recovery_state=0, leader_epoch=100, partition_epoch=200,
                                 elr=kw.get("elr", ()), last_known_elr=kw.get("last_known_elr", ()))


def test_stopped_leader_is_demoted_after_reassignment_completes() -> None:
    """PartitionChangeBuilderTest.testStoppedLeaderIsDemotedAfterReassignmentCompletesEvenIfNoNewEligibleLeaders:
    completing [0, 1] -> [2, 3] with no acceptable leader leaves NO_LEADER, not the removed replica."""
    p = _plain((2, 3, 0, 1), (0, 1), 0, removing=(0, 1), adding=(2, 3))
    builder = PartitionChangeBuilder(p, TOPIC, 0, lambda r: False, by_name("3.3-IV3"), 2, False)
    record = builder.set_target_isr([0, 1, 2, 3]).build()
    assert record is not None and record.version == 0
    m = record.message
    assert (m.replicas, m.isr, m.removing_replicas, m.adding_replicas, m.leader) == ([2, 3], [2, 3], [], [], -1)
    assert m.eligible_leader_replicas is None and m.directories is None


def test_elr_isr_can_shrink_to_zero() -> None:
    """PartitionChangeBuilderTest.testEligibleLeaderReplicas_IsrCanShrinkToZero: all offline, min ISR 3:
    ISR [], ELR [1, 2, 3, 4], leader -1 and lastKnownElr [1] (without it when last-known-leader is off)."""
    for last_known in (True, False):
        p = _plain((1, 2, 3, 4), (1, 2, 3, 4), 1)
        builder = PartitionChangeBuilder(p, TOPIC, 0, lambda r: False, by_name("4.4-IV2"), 3, True) \
            .set_election(Election.PREFERRED).set_default_dir_provider(lambda r: DIR) \
            .set_use_last_known_leader_in_balanced_recovery(last_known).set_target_isr([])
        record = builder.build()
        assert record is not None
        m = record.message
        assert (m.isr, m.leader, m.leader_recovery_state, m.eligible_leader_replicas) == ([], -1, -1, [1, 2, 3, 4])
        assert m.last_known_elr == ([1] if last_known else None)


def test_elr_elects_the_last_known_leader() -> None:
    """PartitionChangeBuilderTest.testEligibleLeaderReplicas_ElectLastKnownLeader: empty ISR and ELR, the
    last known leader alive: it leads uncleanly (RECOVERING) and lastKnownElr is cleared."""
    p = _plain((1, 2, 3, 4), (), -1, last_known_elr=(1,))
    builder = PartitionChangeBuilder(p, TOPIC, 0, lambda r: True, by_name("4.4-IV2"), 3, True) \
        .set_election(Election.PREFERRED).set_default_dir_provider(lambda r: DIR).set_target_isr([])
    record = builder.build()
    assert record is not None
    m = record.message
    assert (m.isr, m.leader, m.leader_recovery_state, m.last_known_elr, m.eligible_leader_replicas) == (
        [1], 1, 1, [], None)
