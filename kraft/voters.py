"""Voter membership: replica keys, endpoints and majority math.

A voter is identified by a :class:`ReplicaKey` — its node id plus, since
KIP-853, the directory id of its metadata log directory, so that a replica
whose disk was reformatted (same id, new directory id) is not mistaken for the
old voter. A statically configured voter (``controller.quorum.voters``) has no
directory id; it matches any directory id with the same node id, as in
Kafka's ``VoterSet.isVoter``.

:class:`VoterSet` is immutable. Today the core is given one at construction
(the static quorum, ``kraft.version`` 0). KIP-853 dynamic membership reads the
voter set from ``VotersRecord`` control records in the log; that will be a
history of voter sets keyed by offset, each of them a ``VoterSet`` — nothing
here assumes the set never changes, the core just asks its current one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

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
        return f"{self.id}:{self.directory_id}"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One advertised listener of a node: the name, host and port."""

    listener: str
    host: str
    port: int


#: A node's listeners, in the order they were configured.
Endpoints = tuple[Endpoint, ...]


@dataclass(frozen=True, slots=True)
class VoterNode:
    """A voter: its key and where to reach it."""

    key: ReplicaKey
    endpoints: Endpoints = ()


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters of the quorum, by node id."""

    nodes: Mapping[int, VoterNode] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node_id, node in self.nodes.items():
            if node.key.id != node_id:
                raise ValueError(f"voter {node.key} is filed under id {node_id}")
            if node_id < 0:
                raise ValueError(f"voter ids must not be negative, got {node_id}")
        if not self.nodes:
            raise ValueError("a voter set needs at least one voter")

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

    @classmethod
    def parse_quorum_voters(cls, value: str, listener: str = DEFAULT_CONTROLLER_LISTENER) -> VoterSet:
        """Parse Kafka's ``controller.quorum.voters``: ``{id}@{host}:{port}``
        entries separated by commas (IPv6 hosts in brackets)."""
        entries = [e.strip() for e in value.split(",") if e.strip()]
        if not entries:
            raise ValueError("controller.quorum.voters is empty")
        nodes = []
        for entry in entries:
            m = re.fullmatch(r"(\d+)@(\[[^\]]+\]|[^:@\[\]]+):(\d+)", entry)
            if m is None:
                raise ValueError(
                    f"invalid controller.quorum.voters entry {entry!r}: expected {{id}}@{{host}}:{{port}}"
                )
            node_id, host, port = int(m.group(1)), m.group(2).strip("[]"), int(m.group(3))
            if not 0 < port < 65536:
                raise ValueError(f"invalid port {port} in controller.quorum.voters entry {entry!r}")
            nodes.append(VoterNode(ReplicaKey(node_id), (Endpoint(listener, host, port),)))
        return cls.of(nodes)

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
