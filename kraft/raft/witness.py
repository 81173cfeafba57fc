"""The witness voter: a kraft voter that never takes a Kafka quorum's leadership.

kraft implements Kafka's raft layer, not Kafka's ``QuorumController``
(broker registration and heartbeats, topic creation, the bootstrap
``metadata.version``). A kraft node that leads a quorum serving Kafka brokers
therefore breaks the cluster: brokers cannot register, topics cannot be
created. Beside Kafka controllers a kraft voter is a *witness*: it grants
votes by Raft's rules, fetches, acknowledges, counts towards the majority and
the high watermark, answers DescribeQuorum, takes part in KIP-853 changes --
but it never becomes Prospective, Candidate or Leader. Should it ever lead
such a quorum (an older kraft, detection arriving late) it resigns at once,
naming the Kafka voters as preferred successors.

This module is the pure policy (no I/O, no clock): :class:`WitnessPolicy`
collects the evidence the node gathers (:mod:`kraft.node.witness`: the other
voters' ApiVersions answers on the controller listener, Kafka controller
metadata in the local log) and decides. The raft core consults it through the
narrow :class:`CampaignPolicy` protocol at the two places where it matters:
where an election timeout would start a candidacy, and on a leader's poll.

Deciding before the first candidacy: in ``auto`` mode a voter campaigns only
once it has heard ApiVersions from as many other voters as it needs votes
from (a majority of the voter set, less its own vote) and none of them is a
Kafka controller. It could not win without those votes anyway, and every vote
arrives over a connection that starts with ApiVersions, so a kraft node that
starts first never wins epoch 1 of a Kafka quorum. (Asking for a majority of
the *other* voters instead would stop a 3-voter kraft-only quorum with one
voter down from electing anyone.)
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

from kraft.raft.voters import ReplicaKey

__all__ = [
    "KAFKA_CONTROLLER_APIS",
    "CampaignPolicy",
    "WitnessDecision",
    "WitnessMode",
    "WitnessPolicy",
    "handover_leaders",
    "kafka_controller_apis",
    "votes_needed_from_others",
]

#: Kafka controller APIs that kraft does not serve (api key -> Kafka's name).
#: A peer advertising any of them on its controller listener is a Kafka
#: controller (Kafka 4.0's ``ApiKeys`` with ``ApiMessageType.ListenerType.CONTROLLER``).
KAFKA_CONTROLLER_APIS: dict[int, str] = {
    19: "CreateTopics",
    20: "DeleteTopics",
    37: "CreatePartitions",
    44: "IncrementalAlterConfigs",
    58: "Envelope",
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    67: "AllocateProducerIds",
    70: "ControllerRegistration",
    73: "AssignReplicasToDirs",
}


def kafka_controller_apis(api_keys: Iterable[int]) -> tuple[str, ...]:
    """The Kafka controller APIs (names, in api key order) among ``api_keys``."""
    return tuple(KAFKA_CONTROLLER_APIS[k] for k in sorted(set(api_keys)) if k in KAFKA_CONTROLLER_APIS)


def votes_needed_from_others(voter_count: int) -> int:
    """How many other voters must grant a candidate their vote: a majority of
    ``voter_count`` (the candidate among them) less its own vote."""
    return voter_count // 2


class CampaignPolicy(Protocol):
    """What the raft core asks before a candidacy and on a leader's poll."""

    def may_campaign(self, local_id: int, voter_ids: Collection[int]) -> bool:
        """False: let the election timeout pass without becoming Prospective."""
        ...

    def resign_reason(self, local_id: int, voter_ids: Collection[int]) -> str | None:
        """A reason for a leader to resign at once, or None to keep leading."""
        ...

    def preferred_successors(self, by_fetch_offset: tuple[ReplicaKey, ...]) -> tuple[ReplicaKey, ...]:
        """The EndQuorumEpoch successors of a resigning leader, best first."""
        ...

    def handover_leaders(self, local_id: int, voter_ids: Collection[int]) -> frozenset[int] | None:
        """None unless this replica is a witness; else the other voters that
        may lead, to whom a hand-over epoch gives the log
        (:mod:`kraft.raft.handover`)."""
        ...


def may_campaign(policy: CampaignPolicy | None, local: ReplicaKey | None, voter_ids: Collection[int]) -> bool:
    """The core's witness hook before a candidacy: what ``policy`` says
    (Raft's rules alone without one, or for a pure observer)."""
    return policy is None or local is None or policy.may_campaign(local.id, voter_ids)


def resign_reason(policy: CampaignPolicy | None, local_id: int, voter_ids: Collection[int]) -> str | None:
    """The core's witness hook on a leader: why a witness that finds itself
    leading (detection arrived late) hands over at once; None: no reason."""
    return None if policy is None else policy.resign_reason(local_id, voter_ids)


def preferred_successors(policy: CampaignPolicy | None,
                         by_fetch_offset: tuple[ReplicaKey, ...]) -> tuple[ReplicaKey, ...]:
    """A resigning leader's successors, the voters that can lead (Kafka's
    controllers) first when a policy knows them."""
    return by_fetch_offset if policy is None else policy.preferred_successors(by_fetch_offset)


def handover_leaders(policy: CampaignPolicy | None, local: ReplicaKey | None,
                     voter_ids: Collection[int]) -> frozenset[int] | None:
    """The core's hand-over hook: the voters a witness may hand the log to,
    None when this replica is no witness (no policy, or an observer)."""
    return None if policy is None or local is None else policy.handover_leaders(local.id, voter_ids)


class WitnessMode(enum.Enum):
    """``kraft.witness``: ``auto`` detects a Kafka quorum; ``true`` / ``false`` force."""

    AUTO = "auto"
    ALWAYS = "true"
    NEVER = "false"

    @classmethod
    def parse(cls, text: str) -> WitnessMode:
        value = text.strip().lower()
        for mode in cls:
            if mode.value == value:
                return mode
        raise ValueError(f"kraft.witness must be auto, true or false, not {text!r}")


@dataclass(frozen=True, slots=True)
class WitnessDecision:
    """The current decision: ``witness`` (never leads), ``may_campaign``, and
    why, as a phrase for an operator. ``auto`` mode before enough evidence is
    neither a witness nor allowed to campaign (``undecided``)."""

    witness: bool
    may_campaign: bool
    reason: str

    @property
    def state(self) -> str:
        """``witness``, ``voter`` (may lead) or ``undecided``."""
        if self.witness:
            return "witness"
        return "voter" if self.may_campaign else "undecided"

    def describe(self) -> str:
        return f"{self.state}: {self.reason}"


@dataclass(frozen=True, slots=True)
class _Peer:
    kafka_apis: tuple[str, ...]


def _ids(ids: Iterable[int]) -> str:
    ordered = sorted(ids)
    return ("voter " if len(ordered) == 1 else "voters ") + ", ".join(str(i) for i in ordered)


class WitnessPolicy:
    """The witness decision from the evidence; a :class:`CampaignPolicy`.

    Evidence comes in through :meth:`heard` (a voter's ApiVersions answer) and
    :meth:`found_in_log` (Kafka controller metadata in the local log). Log
    evidence makes a witness until *every* other voter has answered as a
    kraft node (a quorum of kraft nodes only has no Kafka controller to
    leave the leadership to, whatever its records say). What a voter advertised is kept per
    node id and replaced by its next answer; only the current voters count.
    """

    def __init__(self, mode: WitnessMode = WitnessMode.AUTO) -> None:
        self.mode = mode
        self._peers: dict[int, _Peer] = {}
        self._log_evidence: str | None = None
        #: The last decision and what it was made from: a leader asks on
        #: every poll, and the evidence rarely changes.
        self._cached: tuple[object, WitnessDecision] | None = None
        self._evidence_version = 0

    @classmethod
    def forced(cls) -> WitnessPolicy:
        """A witness whatever it hears (``kraft.witness=true``)."""
        return cls(WitnessMode.ALWAYS)

    # --- evidence -------------------------------------------------------------

    def heard(self, node_id: int, api_keys: Iterable[int]) -> bool:
        """Node ``node_id`` answered ApiVersions advertising ``api_keys``.
        Returns whether that changed what is known about it."""
        peer = _Peer(kafka_controller_apis(api_keys))
        if self._peers.get(node_id) == peer:
            return False
        self._peers[node_id] = peer
        self._evidence_version += 1
        return True

    def found_in_log(self, evidence: str) -> bool:
        """The local log holds Kafka controller metadata (``evidence`` names
        it). Returns whether this is news."""
        if self._log_evidence is not None:
            return False
        self._log_evidence = evidence
        self._evidence_version += 1
        return True

    def heard_from(self) -> frozenset[int]:
        return frozenset(self._peers)

    def kafka_voters(self, voter_ids: Collection[int]) -> tuple[int, ...]:
        return tuple(sorted(i for i in voter_ids if i in self._peers and self._peers[i].kafka_apis))

    # --- the decision ---------------------------------------------------------

    def decide(self, local_id: int, voter_ids: Collection[int]) -> WitnessDecision:
        key = (local_id, voter_ids if isinstance(voter_ids, (tuple, frozenset)) else frozenset(voter_ids),
               self._evidence_version)
        cached = self._cached
        if cached is not None and cached[0] == key:
            return cached[1]
        decision = self._decide(local_id, voter_ids)
        self._cached = (key, decision)
        return decision

    def _decide(self, local_id: int, voter_ids: Collection[int]) -> WitnessDecision:
        if self.mode is WitnessMode.NEVER:
            return WitnessDecision(False, True, "kraft.witness=false")
        if self.mode is WitnessMode.ALWAYS:
            return WitnessDecision(True, False, "kraft.witness=true")
        others = [i for i in voter_ids if i != local_id]
        kafka = self.kafka_voters(others)
        heard = [i for i in others if i in self._peers]
        if self._log_evidence is not None and not kafka and len(heard) < len(others):
            # Until every other voter has answered as a kraft node -- then no
            # Kafka controller could lead this quorum anyway.
            return WitnessDecision(True, False, f"the metadata log holds Kafka controller metadata ({self._log_evidence})")
        if kafka:
            apis = self._peers[kafka[0]].kafka_apis
            return WitnessDecision(
                True, False,
                f"{_ids(kafka)} advertise{'s' if len(kafka) == 1 else ''} Kafka controller APIs kraft lacks "
                f"({', '.join(apis[:3])}, ...) on the controller listener",
            )
        needed = votes_needed_from_others(len(others) + (1 if local_id in voter_ids else 0))
        if len(heard) >= needed:
            if not others:
                return WitnessDecision(False, True, "the only voter, no Kafka metadata in the log")
            return WitnessDecision(False, True, f"{_ids(heard)} answered ApiVersions as kraft nodes (no Kafka "
                                                f"controller APIs): a kraft quorum")
        return WitnessDecision(
            False, False,
            f"heard ApiVersions from {len(heard)} of the {needed} other voters a candidacy needs; "
            f"not campaigning until then",
        )

    # --- CampaignPolicy ---------------------------------------------------------

    def may_campaign(self, local_id: int, voter_ids: Collection[int]) -> bool:
        return self.decide(local_id, voter_ids).may_campaign

    def resign_reason(self, local_id: int, voter_ids: Collection[int]) -> str | None:
        decision = self.decide(local_id, voter_ids)
        return f"witness: {decision.reason}" if decision.witness else None

    def handover_leaders(self, local_id: int, voter_ids: Collection[int]) -> frozenset[int] | None:
        """The Kafka voters when any is known; else (``true``, or Kafka
        metadata in the log) every other voter not heard as a kraft node."""
        if not self.decide(local_id, voter_ids).witness:
            return None
        others = [i for i in voter_ids if i != local_id]
        kafka = self.kafka_voters(others)
        if kafka:
            return frozenset(kafka)
        if self.mode is WitnessMode.ALWAYS:
            return frozenset(others)
        return frozenset(i for i in others if i not in self._peers)

    def preferred_successors(self, by_fetch_offset: tuple[ReplicaKey, ...]) -> tuple[ReplicaKey, ...]:
        """The Kafka voters (most caught up first); all of them when none is known."""
        kafka = tuple(k for k in by_fetch_offset if k.id in self._peers and self._peers[k.id].kafka_apis)
        return kafka or by_fetch_offset
