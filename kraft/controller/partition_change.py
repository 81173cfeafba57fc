"""Kafka's ``PartitionChangeBuilder`` (Kafka 4.4): from a partition's
registration and the targets a caller sets (ISR, replicas, adding/removing
replicas, leader recovery state, directories, the kind of election), the one
``PartitionChangeRecord`` that gets there -- or none when nothing changes.

The order of :meth:`PartitionChangeBuilder.build` is Kafka's: complete a
reassignment the target ISR allows, fill the ELR (KIP-966) when the ISR
falls below min ISR, elect a leader, bump the leader epoch when replicas
leave, then write the ISR, ELR and last known ELR, the assignment and the
recovery state. Java's ``HashSet`` of small broker ids iterates in
ascending order; the ELR sets are sorted to match.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from enum import Enum

from kraft.controller.metadata_version import MetadataVersion
from kraft.controller.result import RecordAndVersion
from kraft.image.model import PartitionRegistration
from kraft.messages.generated.partition_change_record import PartitionChangeRecord

__all__ = ["Election", "PartitionChangeBuilder", "NO_LEADER", "NO_LEADER_CHANGE", "RECOVERED", "RECOVERING",
           "is_reassignment_in_progress", "change_record_is_no_op"]

#: ``LeaderConstants.NO_LEADER`` / ``NO_LEADER_CHANGE``.
NO_LEADER = -1
NO_LEADER_CHANGE = -2
#: ``LeaderRecoveryState`` values (``NO_CHANGE`` is -1).
RECOVERED = 0
RECOVERING = 1
NO_CHANGE = -1


class Election(Enum):
    """``PartitionChangeBuilder.Election``."""

    #: The preferred (first) replica when it is in the ISR and acceptable.
    PREFERRED = "PREFERRED"
    #: Any acceptable replica of the ISR (or, with an empty ISR, of the ELR).
    ONLINE = "ONLINE"
    #: As ONLINE, then any acceptable replica at all (data may be lost).
    UNCLEAN = "UNCLEAN"


def is_reassignment_in_progress(partition: PartitionRegistration) -> bool:
    """``PartitionReassignmentReplicas.isReassignmentInProgress``."""
    return bool(partition.removing_replicas or partition.adding_replicas)


def change_record_is_no_op(record: PartitionChangeRecord) -> bool:
    """``PartitionChangeBuilder.changeRecordIsNoOp``."""
    return (record.isr is None and record.eligible_leader_replicas is None and record.last_known_elr is None
            and record.leader == NO_LEADER_CHANGE and record.replicas is None and record.removing_replicas is None
            and record.adding_replicas is None and record.leader_recovery_state == NO_CHANGE
            and record.directories is None)


def _complete_reassignment(removing: list[int], adding: list[int], replicas: list[int],
                           target_isr: list[int]) -> tuple[list[int], list[int]] | None:
    """``PartitionReassignmentReplicas.maybeCompleteReassignment``: the
    (replicas, ISR) once the target ISR holds every adding replica."""
    if not removing and not adding:
        return None
    new_isr = list(target_isr)
    new_replicas = replicas
    if removing:
        new_isr = [r for r in target_isr if r not in removing]
        if not new_isr:
            return None
        new_replicas = [r for r in replicas if r not in removing]
        if not new_replicas:
            return None
    if not all(r in new_isr for r in adding):
        return None
    if len(adding) < len(removing) and not all(r in new_isr for r in new_replicas):
        return None
    return new_replicas, new_isr


class PartitionChangeBuilder:
    """One partition's change, built once (Kafka's builder; set targets, then
    :meth:`build`). ``is_acceptable_leader``: may this broker lead (Kafka's
    ``LeaderAcceptor``: active, its directory online)."""

    def __init__(self, partition: PartitionRegistration, topic_id: uuid.UUID, partition_id: int,
                 is_acceptable_leader: Callable[[int], bool], metadata_version: MetadataVersion,
                 min_isr: int, elr_enabled: bool) -> None:
        self.partition = partition
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.is_acceptable_leader = is_acceptable_leader
        self.metadata_version = metadata_version
        self.min_isr = min_isr
        self.elr_enabled = elr_enabled
        self.target_isr = list(partition.isr)
        self.target_replicas = list(partition.replicas)
        self.target_removing = list(partition.removing_replicas)
        self.target_adding = list(partition.adding_replicas)
        self.target_elr = list(partition.elr)
        self.target_last_known_elr = list(partition.last_known_elr)
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.target_directories = dict(zip(partition.replicas, partition.directories))
        self.unclean_shutdown_replicas: list[int] | None = None
        self.election = Election.ONLINE
        self.use_last_known_leader_in_balanced_recovery = True
        self.default_dir: Callable[[int], uuid.UUID] | None = None

    # ---- targets (Kafka's setters; each returns the builder)

    def set_target_isr(self, isr: Sequence[int]) -> PartitionChangeBuilder:
        self.target_isr = list(isr)
        return self

    def set_target_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self.target_replicas = list(replicas)
        return self

    def set_target_removing(self, removing: Sequence[int]) -> PartitionChangeBuilder:
        self.target_removing = list(removing)
        return self

    def set_target_adding(self, adding: Sequence[int]) -> PartitionChangeBuilder:
        self.target_adding = list(adding)
        return self

    def set_unclean_shutdown_replicas(self, replicas: Sequence[int]) -> PartitionChangeBuilder:
        self.unclean_shutdown_replicas = list(replicas)
        return self

    def set_election(self, election: Election) -> PartitionChangeBuilder:
        self.election = election
        return self

    def set_target_leader_recovery_state(self, state: int) -> PartitionChangeBuilder:
        self.target_leader_recovery_state = state
        return self

    def set_use_last_known_leader_in_balanced_recovery(self, use: bool) -> PartitionChangeBuilder:
        self.use_last_known_leader_in_balanced_recovery = use
        return self

    def set_directory(self, broker_id: int, directory: uuid.UUID) -> PartitionChangeBuilder:
        self.target_directories[broker_id] = directory
        return self

    def set_default_dir_provider(self, default_dir: Callable[[int], uuid.UUID]) -> PartitionChangeBuilder:
        self.default_dir = default_dir
        return self

    # ---- election

    def _is_valid_new_leader(self, replica: int) -> bool:
        in_isr = replica in self.target_isr or (not self.target_isr and replica in self.target_elr)
        return in_isr and self.is_acceptable_leader(replica)

    def _can_elect_last_known_leader(self) -> bool:
        if not self.elr_enabled or not self.use_last_known_leader_in_balanced_recovery:
            return False
        if self.target_elr or self.target_isr:
            return False
        last = self.partition.last_known_elr
        return len(last) == 1 and self.is_acceptable_leader(last[0])

    def _elect_leader(self) -> tuple[int, bool]:
        """``electLeader``: (node, unclean)."""
        leader = self.partition.leader
        candidates = self.target_replicas
        if self.election is Election.PREFERRED:
            if self.target_replicas and self._is_valid_new_leader(self.target_replicas[0]):
                return self.target_replicas[0], False
            candidates = self.target_replicas[1:]
        if self._is_valid_new_leader(leader):
            return leader, False
        for replica in candidates:
            if self._is_valid_new_leader(replica):
                return replica, False
        if self._can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
        if self.election is Election.UNCLEAN:
            for replica in self.target_replicas:
                if self.is_acceptable_leader(replica):
                    return replica, True
        return NO_LEADER, False

    def _try_election(self, record: PartitionChangeRecord) -> None:
        node, unclean = self._elect_leader()
        if node == self.partition.leader:
            return
        if node in self.target_elr:
            # Leadership from the ELR: the new leader becomes the whole ISR.
            self.target_isr = [node]
            self.target_elr = [r for r in self.target_elr if r != node]
        record.leader = node
        if unclean:
            record.isr = [node]
            if self.partition.leader_recovery_state != RECOVERING:
                record.leader_recovery_state = RECOVERING

    # ---- the rest of build()

    def _complete_reassignment_if_needed(self) -> None:
        done = _complete_reassignment(self.target_removing, self.target_adding, self.target_replicas,
                                      self.target_isr)
        if done is not None:
            self.target_replicas, self.target_isr = done
            self.target_removing = []
            self.target_adding = []

    def _populate_target_elr(self) -> None:
        """``maybePopulateTargetElr``: below min ISR, the replicas that left
        the ISR cleanly are eligible leaders (KIP-966)."""
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = []
            self.target_last_known_elr = []
            return
        isr = set(self.target_isr)
        candidates = set(self.target_elr) | set(self.partition.isr)
        unclean = self.unclean_shutdown_replicas or []
        self.target_elr = sorted(r for r in candidates if r not in isr and r not in unclean)
        candidates |= set(self.target_last_known_elr)
        self.target_last_known_elr = sorted(r for r in candidates if r not in isr and r not in self.target_elr)

    def _epoch_bump_for_reassignment(self, record: PartitionChangeRecord) -> None:
        """``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``: a replica
        removed from the assignment must see a new leader epoch."""
        if record.leader == NO_LEADER_CHANGE and not all(r in self.target_replicas for r in self.partition.replicas):
            record.leader = self.partition.leader

    def _epoch_bump_for_isr_shrink(self, record: PartitionChangeRecord) -> None:
        """``triggerLeaderEpochBumpForIsrShrinkIfNeeded`` (only before 3.6-IV0)."""
        if not self.metadata_version.is_leader_epoch_bump_required_on_isr_shrink:
            return
        if record.leader != NO_LEADER_CHANGE or record.isr is None:
            return
        if not all(r in record.isr for r in self.partition.isr):
            record.leader = self.partition.leader

    def _update_record_elr(self, record: PartitionChangeRecord) -> None:
        """``maybeUpdateRecordElr``."""
        clean_election = record.isr is None
        if not clean_election or not self.elr_enabled:
            self.target_elr = []
            self.target_last_known_elr = []
        if self.target_elr != list(self.partition.elr):
            record.eligible_leader_replicas = self.target_elr
        use_last_known = self.use_last_known_leader_in_balanced_recovery
        if use_last_known and len(self.partition.last_known_elr) == 1 and (
                record.leader == NO_LEADER
                or (record.leader == NO_LEADER_CHANGE and self.partition.leader == NO_LEADER)):
            self.target_last_known_elr = list(self.partition.last_known_elr)
        if use_last_known:
            return
        if self.target_last_known_elr != list(self.partition.last_known_elr):
            record.last_known_elr = self.target_last_known_elr

    def _update_last_known_leader(self, record: PartitionChangeRecord) -> None:
        """``maybeUpdateLastKnownLeader``: remember the last leader of a
        partition left leaderless, forget it once one is elected."""
        if not self.use_last_known_leader_in_balanced_recovery or not self.elr_enabled:
            return
        if record.leader == NO_LEADER and not self.partition.last_known_elr:
            record.last_known_elr = [self.partition.leader]
        elif record.leader >= 0 and self.partition.last_known_elr:
            record.last_known_elr = []

    def _set_assignment_changes(self, record: PartitionChangeRecord) -> None:
        if self.target_replicas:
            if self.metadata_version.is_directory_assignment_supported:
                directories = [self._directory_of(r) for r in self.target_replicas]
                if directories != list(self.partition.directories):
                    record.directories = directories
            if self.target_replicas != list(self.partition.replicas):
                record.replicas = self.target_replicas
        if self.target_removing != list(self.partition.removing_replicas):
            record.removing_replicas = self.target_removing
        if self.target_adding != list(self.partition.adding_replicas):
            record.adding_replicas = self.target_adding

    def _directory_of(self, replica: int) -> uuid.UUID:
        directory = self.target_directories.get(replica)
        if directory is not None:
            return directory
        if self.default_dir is None:
            raise RuntimeError("DefaultDirProvider is not set")
        return self.default_dir(replica)

    def build(self) -> RecordAndVersion | None:
        """The PartitionChangeRecord at the version the metadata version
        allows, or None when it would change nothing."""
        record = PartitionChangeRecord(topic_id=self.topic_id, partition_id=self.partition_id)
        self._complete_reassignment_if_needed()
        self._populate_target_elr()
        self._try_election(record)
        self._epoch_bump_for_reassignment(record)
        self._update_record_elr(record)
        if record.isr is None and (self.target_isr or self.elr_enabled) \
                and self.target_isr != list(self.partition.isr):
            record.isr = self.target_isr
        self._epoch_bump_for_isr_shrink(record)
        self._update_last_known_leader(record)
        self._set_assignment_changes(record)
        if self.target_leader_recovery_state != self.partition.leader_recovery_state:
            record.leader_recovery_state = self.target_leader_recovery_state
        if change_record_is_no_op(record):
            return None
        return RecordAndVersion(record, self.metadata_version.partition_change_record_version)
