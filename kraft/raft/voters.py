"""Voter membership: replica keys, endpoints and majority math.

A voter is identified by a :class:`ReplicaKey` — its node id plus, since
KIP-853, the directory id of its metadata log directory, so that a replica
whose disk was reformatted (same id, new directory id) is not mistaken for the
old voter. A statically configured voter (``controller.quorum.voters``) has no
directory id; it matches any directory id with the same node id, as in
Kafka's ``VoterSet.isVoter``.

:class:`VoterSet` is immutable. A static quorum (``kraft.version`` 0) has one,
from ``controller.quorum.voters``. A dynamic quorum (KIP-853, ``kraft.version``
1) reads it from ``VotersRecord`` control records in the snapshot and the log
(uncommitted ones included): the log keeps that history keyed by offset and
the core asks for its latest entry. Membership changes produce a new set with
:meth:`VoterSet.add_voter`, :meth:`VoterSet.remove_voter` and
:meth:`VoterSet.update_voter`, one voter at a time, so that a majority of the
old set and a majority of the new one always share a voter
(:meth:`VoterSet.has_overlapping_majority`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kraft.records.state_files import uuid_to_kafka
from kraft.records.view import VoterEntry

#: Kafka's default listener name for controllers.
DEFAULT_CONTROLLER_LISTENER = "CONTROLLER"


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica id and (optionally) its log directory id; Kafka's ``ReplicaKey``."""

    id: int
    directory_id: uuid.UUID | None = None

    def matches(self, other: ReplicaKey) -> bool:
        """Whether ``other`` is this replica: same id, and the same directory
        id when this key has one (a key without a directory id matches any)."""
        if self.id != other.id:
            return False
        return self.directory_id is None or self.directory_id == other.directory_id

    def __str__(self) -> str:
        if self.directory_id is None:
            return str(self.id)
        # Kafka's form of a directory id (base64), as describe prints it.
        return f"{self.id}:{uuid_to_kafka(self.directory_id)}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener of a node: the name, host and port."""

    listener: str
    host: str
    port: int


#: A node's listeners, in the order they were configured.
Endpoints = tuple[Endpoint, ...]


#: The ``kraft.version`` range a replica supports, (min, max).
KRaftVersionRange = tuple[int, int]

#: What a static voter (``controller.quorum.voters``) is assumed to support,
#: as Kafka's ``VoterSet.fromInetSocketAddresses`` does.
STATIC_KRAFT_VERSIONS: KRaftVersionRange = (0, 0)


@dataclass(frozen=True, slots=True)
class VoterNode:
    """A voter: its key, where to reach it, and the ``kraft.version`` range it
    supports (``VotersRecord.Voter.KRaftVersionFeature``)."""

    key: ReplicaKey
    endpoints: Endpoints = ()
    supported_kraft_versions: KRaftVersionRange = STATIC_KRAFT_VERSIONS

    def supports(self, kraft_version: int) -> bool:
        low, high = self.supported_kraft_versions
        return low <= kraft_version <= high

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint on ``listener`` (Kafka's ``Endpoints.address``)."""
        for e in self.endpoints:
            if e.listener == listener:
                return e
        return None

    @classmethod
    def from_entry(cls, entry: VoterEntry) -> VoterNode:
        """A voter as the log's ``VotersRecord`` holds it."""
        return cls(
            ReplicaKey(entry.voter_id, entry.directory_id),
            tuple(Endpoint(name, host, port) for name, host, port in entry.endpoints),
            (entry.min_kraft_version, entry.max_kraft_version),
        )

    def to_entry(self) -> VoterEntry:
        return VoterEntry(
            self.key.id,
            self.key.directory_id,
            tuple((e.listener, e.host, e.port) for e in self.endpoints),
            *self.supported_kraft_versions,
        )


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters of the quorum, by node id. Empty only for a replica of a
    dynamic quorum that has not yet read any ``VotersRecord`` (an observer
    formatted without ``--standalone``/``--initial-controllers``)."""

    nodes: Mapping[int, VoterNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node_id, node in self.nodes.items():
            if node.key.id != node_id:
                raise ValueError(f"voter {node.key} is filed under id {node_id}")
            if node_id < 0:
                raise ValueError(f"voter ids must not be negative, got {node_id}")

    @classmethod
    def empty(cls) -> VoterSet:
        return cls({})

    @classmethod
    def from_entries(cls, entries: Iterable[VoterEntry]) -> VoterSet:
        """The voter set of a ``VotersRecord`` read from the log."""
        return cls.of(VoterNode.from_entry(e) for e in entries)

    def to_entries(self) -> tuple[VoterEntry, ...]:
        """What a ``VotersRecord`` of this set holds, in id order."""
        return tuple(node.to_entry() for node in self.voter_nodes)

    @classmethod
    def of(cls, nodes: Iterable[VoterNode]) -> VoterSet:
        by_id: dict[int, VoterNode] = {}
        for node in nodes:
            if node.key.id in by_id:
                raise ValueError(f"duplicate voter id {node.key.id}")
            by_id[node.key.id] = node
        return cls(by_id)

    @classmethod
    def from_ids(cls, ids: Iterable[int], listener: str = DEFAULT_CONTROLLER_LISTENER) -> VoterSet:
        """Voters with placeholder endpoints (``node-<id>:9093``); for tests and
        the simulation, where addresses are never dialled."""
        return cls.of(VoterNode(ReplicaKey(i), (Endpoint(listener, f"node-{i}", 9093),)) for i in ids)

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(sorted(self.nodes))

    @property
    def voter_keys(self) -> tuple[ReplicaKey, ...]:
        return tuple(self.nodes[i].key for i in self.voter_ids)

    @property
    def majority_size(self) -> int:
        """How many voters make a majority: ``n // 2 + 1``."""
        return len(self.nodes) // 2 + 1

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def is_voter(self, key: ReplicaKey) -> bool:
        """Whether ``key`` is a voter; a voter entry without a directory id
        matches any directory id (static quorum)."""
        node = self.nodes.get(key.id)
        return node is not None and node.key.matches(key)

    def is_only_voter(self, key: ReplicaKey) -> bool:
        return len(self.nodes) == 1 and self.is_voter(key)

    def endpoints(self, node_id: int) -> Endpoints:
        node = self.nodes.get(node_id)
        return node.endpoints if node is not None else ()

    def key(self, node_id: int) -> ReplicaKey | None:
        node = self.nodes.get(node_id)
        return node.key if node is not None else None

    def node(self, node_id: int) -> VoterNode | None:
        return self.nodes.get(node_id)

    @property
    def voter_nodes(self) -> tuple[VoterNode, ...]:
        return tuple(self.nodes[i] for i in self.voter_ids)

    def supports_version(self, kraft_version: int) -> bool:
        """Every voter supports ``kraft_version`` (Kafka's ``supportsVersion``)."""
        return all(node.supports(kraft_version) for node in self.nodes.values())

    # --- membership changes (one voter at a time) ----------------------------------

    def add_voter(self, node: VoterNode) -> VoterSet | None:
        """This set plus ``node``; ``None`` if its id is already a voter
        (Kafka's ``VoterSet.addVoter``)."""
        if node.key.id in self.nodes:
            return None
        return VoterSet({**self.nodes, node.key.id: node})

    def remove_voter(self, key: ReplicaKey) -> VoterSet | None:
        """This set without ``key``; ``None`` if ``key`` (id and directory id)
        is not a voter or is the last one (Kafka's ``VoterSet.removeVoter``)."""
        node = self.nodes.get(key.id)
        if node is None or node.key != key or len(self.nodes) == 1:
            return None
        return VoterSet({i: n for i, n in self.nodes.items() if i != key.id})

    def update_voter(self, node: VoterNode) -> VoterSet | None:
        """Replace the endpoints and supported versions of the voter with the
        same key; ``None`` if ``node.key`` is not a voter (Kafka's
        ``VoterSet.updateVoter``)."""
        current = self.nodes.get(node.key.id)
        if current is None or current.key != node.key:
            return None
        return VoterSet({**self.nodes, node.key.id: node})

    def update_voter_ignoring_directory_id(self, node: VoterNode) -> VoterSet | None:
        """Replace the voter with ``node``'s id, taking ``node``'s directory id
        too; ``None`` if the id is not a voter (Kafka's
        ``updateVoterIgnoringDirectoryId``: a kraft.version 0 leader learns the
        directory ids of the static voters this way)."""
        if node.key.id not in self.nodes:
            return None
        return VoterSet({**self.nodes, node.key.id: node})

    def voter_node_needs_update(self, node: VoterNode) -> bool:
        """The voter with ``node``'s key is recorded with other endpoints or
        another supported version range (Kafka's ``voterNodeNeedsUpdate``)."""
        current = self.nodes.get(node.key.id)
        return (
            current is not None
            and current.key.matches(node.key)
            and (
                current.endpoints != node.endpoints
                or current.supported_kraft_versions != node.supported_kraft_versions
            )
        )

    def has_overlapping_majority(self, other: VoterSet) -> bool:
        """Kafka's ``hasOverlappingMajority``: the two sets differ by at most
        one voter each way, so any majority of one meets any majority of the
        other. Every change of a replicated voter set must keep this."""
        mine, theirs = set(self.voter_keys), set(other.voter_keys)
        return len(mine - theirs) <= 1 and len(theirs - mine) <= 1

    def majorities_always_intersect(self, other: VoterSet) -> bool:
        """Whether no majority of this set can be disjoint from a majority of
        ``other`` (exact count: each side fills its majority from the voters
        the other lacks first)."""
        mine, theirs = set(self.voter_keys), set(other.voter_keys)
        if not mine or not theirs:
            return False
        shared = len(mine & theirs)
        need_mine = max(0, self.majority_size - len(mine - theirs))
        need_theirs = max(0, other.majority_size - len(theirs - mine))
        return need_mine + need_theirs > shared

    def __str__(self) -> str:
        return "{" + ", ".join(str(k) for k in self.voter_keys) + "}"


def voter_ids_text(ids: Iterable[int]) -> str:
    """``voter 3`` or ``voters 1, 2``: node ids as log lines and decisions name them."""
    ordered = sorted(ids)
    return ("voter " if len(ordered) == 1 else "voters ") + ", ".join(str(i) for i in ordered)
