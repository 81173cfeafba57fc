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
collects the evidence the node gathers (:mod:`kraft.node.witness_detector`: the other
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

Remembering across restarts: what each voter answered is kept in kraft's
``voter-api-versions`` file (:mod:`kraft.records.voter_api_versions`) and
seeds the policy at start (:meth:`WitnessPolicy.remember`). A remembered
answer counts as evidence of what that voter is -- a Kafka controller stays
decisive, a kraft node completes a kraft-only quorum whose log holds Kafka-shaped
records even when that voter is dead for good -- but never as a live
answer for the wait before the first candidacy. A live answer replaces it.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kraft.raft.voters import ReplicaKey, voter_ids_text
from kraft.records.voter_api_versions import VOTER_API_VERSIONS_FILE, RememberedAnswer

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
    """What one voter answered: the Kafka controller APIs it advertised (none:
    a kraft node), and its directory id in the voter set then (None: unknown)."""

    kafka_apis: tuple[str, ...]
    directory_id: uuid.UUID | None = None

    def is_of(self, directory_id: uuid.UUID | None) -> bool:
        """Whether this answer is from the voter that now has ``directory_id``
        (an unknown directory id on either side matches)."""
        return self.directory_id is None or directory_id is None or self.directory_id == directory_id


def _before_this_start(ids: Collection[int]) -> str:
    """The note on answers remembered from before this start, not heard since."""
    if not ids:
        return ""
    return f" ({voter_ids_text(ids)} before this start, as remembered in {VOTER_API_VERSIONS_FILE}; not heard since)"


class WitnessPolicy:
    """The witness decision from the evidence; a :class:`CampaignPolicy`.

    Evidence comes in through :meth:`heard` (a voter's ApiVersions answer),
    :meth:`remember` (the answers of an earlier run) and :meth:`found_in_log`
    (Kafka controller metadata in the local log). Log evidence makes a
    witness until *every* other voter has answered as a kraft node, now or
    before this start (a quorum of kraft nodes only has no Kafka controller
    to leave the leadership to, whatever its records say). What a voter
    advertised is kept per node id and replaced by its next answer; only the
    current voters count, and only answers from the directory id the voter
    set now gives them (:meth:`note_voter_directories`).
    """

    def __init__(self, mode: WitnessMode = WitnessMode.AUTO) -> None:
        self.mode = mode
        #: Heard since this start.
        self._peers: dict[int, _Peer] = {}
        #: Heard before this start (:meth:`remember`), until a live answer.
        self._remembered: dict[int, _Peer] = {}
        #: The current voters' directory ids (absent or None: unknown).
        self._directories: dict[int, uuid.UUID | None] = {}
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

    def heard(self, node_id: int, api_keys: Iterable[int], directory_id: uuid.UUID | None = None) -> bool:
        """Node ``node_id`` (with ``directory_id`` in the voter set, when it
        has one) answered ApiVersions advertising ``api_keys``. Returns
        whether that changed what is known about it."""
        peer = _Peer(kafka_controller_apis(api_keys), directory_id)
        if self._peers.get(node_id) == peer:
            return False
        self._peers[node_id] = peer
        self._evidence_version += 1
        return True

    def remember(self, answers: Iterable[RememberedAnswer]) -> None:
        """What the voters answered before this start (kraft's
        ``voter-api-versions`` file); a live answer replaces it."""
        for answer in answers:
            self._remembered[answer.voter_id] = _Peer(answer.kafka_controller_apis, answer.directory_id)
        self._evidence_version += 1

    def note_voter_directories(self, directories: Mapping[int, uuid.UUID | None]) -> bool:
        """The current voter set's directory ids (by node id). Returns whether
        they changed."""
        current = dict(directories)
        if current == self._directories:
            return False
        self._directories = current
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

    def answers(self) -> tuple[RememberedAnswer, ...]:
        """Every voter's latest answer, live or remembered, by node id: what
        the ``voter-api-versions`` file keeps."""
        latest = {**self._remembered, **self._peers}
        return tuple(RememberedAnswer(i, p.directory_id, p.kafka_apis) for i, p in sorted(latest.items()))

    def heard_from(self) -> frozenset[int]:
        """The voters heard since this start."""
        return frozenset(self._peers)

    def heard_directory(self, node_id: int) -> uuid.UUID | None:
        """The directory id ``node_id`` had in the voter set when last heard
        since this start (None: not heard, or unknown)."""
        peer = self._peers.get(node_id)
        return None if peer is None else peer.directory_id

    def _answer(self, node_id: int) -> tuple[_Peer, bool] | None:
        """What ``node_id`` answered and whether live (this start), if from
        the directory the voter set now gives it."""
        directory_id = self._directories.get(node_id)
        live = self._peers.get(node_id)
        if live is not None:
            return (live, True) if live.is_of(directory_id) else None
        old = self._remembered.get(node_id)
        return (old, False) if old is not None and old.is_of(directory_id) else None

    def kafka_voters(self, voter_ids: Collection[int]) -> tuple[int, ...]:
        """The voters among ``voter_ids`` heard (now or before) as Kafka controllers."""
        return tuple(sorted(i for i in voter_ids if (a := self._answer(i)) is not None and a[0].kafka_apis))

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
        answers = {i: a for i in others if (a := self._answer(i)) is not None}
        kafka = sorted(i for i, (peer, _) in answers.items() if peer.kafka_apis)
        # Only live answers count towards a candidacy's votes (each vote
        # arrives on a connection that starts with ApiVersions).
        heard = [i for i, (_, live) in answers.items() if live]
        if self._log_evidence is not None and not kafka and len(answers) < len(others):
            # Until every other voter has answered as a kraft node (now or
            # before this start) -- then no Kafka controller could lead this
            # quorum anyway.
            return WitnessDecision(True, False, f"the metadata log holds Kafka controller metadata ({self._log_evidence})")
        if kafka:
            apis = answers[kafka[0]][0].kafka_apis
            old = [i for i in kafka if not answers[i][1]]
            return WitnessDecision(
                True, False,
                f"{voter_ids_text(kafka)} advertise{'s' if len(kafka) == 1 else ''} Kafka controller APIs kraft lacks "
                f"({', '.join(apis[:3])}, ...) on the controller listener{_before_this_start(old)}",
            )
        needed = votes_needed_from_others(len(others) + (1 if local_id in voter_ids else 0))
        if len(heard) >= needed:
            if not others:
                return WitnessDecision(False, True, "the only voter, no Kafka metadata in the log")
            old = [i for i, (_, live) in answers.items() if not live] if self._log_evidence is not None else []
            as_kraft = "as a kraft node" if len(heard + old) == 1 else "as kraft nodes"
            return WitnessDecision(False, True, f"{voter_ids_text(heard + old)} answered ApiVersions {as_kraft} (no Kafka "
                                                f"controller APIs){_before_this_start(old)}: a kraft quorum")
        return WitnessDecision(
            False, False,
            f"heard ApiVersions from {len(heard)} of the {needed} other voter{'' if needed == 1 else 's'} a "
            "candidacy needs; not campaigning until then",
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
        return frozenset(i for i in others if self._answer(i) is None)

    def preferred_successors(self, by_fetch_offset: tuple[ReplicaKey, ...]) -> tuple[ReplicaKey, ...]:
        """The Kafka voters (most caught up first); all of them when none is known."""
        kafka = tuple(k for k in by_fetch_offset if (a := self._answer(k.id)) is not None and a[0].kafka_apis)
        return kafka or by_fetch_offset
