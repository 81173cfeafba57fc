"""Two processes with one ``node.id``: what only a leader can see.

Each Fetch names its replica by id and log directory id (KIP-853's
``ReplicaDirectoryId``; ``kraft storage format`` gives every directory its
own). One process keeps one directory id: a node re-formatted on a new disk
switches once and never back. So when a replica id's fetches alternate --
directory A, then B, then A again -- two live processes share the id: a
copied config, say. Kafka's leader counts both as the one replica (its
DescribeQuorum shows one row); kraft's leader names both, once in its log
and in every DescribeQuorum answer it gives while both fetch (the
partition's message, which Kafka's tools do not read; ``kraft doctor``
does: ``describe_quorum_rpc.DUPLICATE_NOTE``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kraft.raft.rpcs.describe_quorum_rpc import DUPLICATE_NOTE

__all__ = ["DuplicateNodeIds"]

log = logging.getLogger("kraft.node")

#: Both processes fetched within this long: the duplicate is live.
LIVE_WINDOW_S = 30.0


@dataclass(slots=True)
class _Replica:
    #: The directory id of the last fetch.
    last: uuid.UUID | None = None
    #: directory id -> (the connection's address, when it last fetched).
    seen: dict[uuid.UUID, tuple[str, float]] = field(default_factory=dict)
    #: The pairs of directory ids already logged.
    named: set[frozenset[uuid.UUID]] = field(default_factory=set)
    #: Directory ids caught alternating.
    alternating: set[uuid.UUID] = field(default_factory=set)


class DuplicateNodeIds:
    """Watches the replica keys of the fetches a node answers."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._replicas: dict[int, _Replica] = {}

    def fetched(self, replica_id: int, directory_id: uuid.UUID | None, peer: str) -> None:
        """A Fetch of ``replica_id`` from ``directory_id`` came in from ``peer`` (host:port)."""
        if replica_id < 0 or directory_id is None:
            return
        r = self._replicas.setdefault(replica_id, _Replica())
        now = self._clock()
        back_again = r.last is not None and r.last != directory_id and directory_id in r.seen
        if back_again:
            assert r.last is not None
            other = r.last
            r.alternating |= {other, directory_id}
            pair = frozenset({other, directory_id})
            if pair not in r.named:
                r.named.add(pair)
                log.error("two processes fetch as node %d: log directory %s from %s and log directory %s from %s; "
                          "the quorum counts them as one replica: give one of them another node.id (and format its "
                          "directory for it), or stop it", replica_id, directory_id, peer, other, r.seen[other][0])
        r.seen[directory_id] = (peer, now)
        r.last = directory_id
        if len(r.seen) > 8:  # a node re-formatted again and again: keep the newest
            oldest = min(r.seen, key=lambda d: r.seen[d][1])
            del r.seen[oldest]
            r.alternating.discard(oldest)

    def note(self) -> str | None:
        """The live duplicates, for a DescribeQuorum message (None: none)."""
        now = self._clock()
        parts = []
        for replica_id, r in sorted(self._replicas.items()):
            live = sorted((r.seen[d][0], str(d)) for d in r.alternating
                          if d in r.seen and now - r.seen[d][1] < LIVE_WINDOW_S)
            if len(live) >= 2:
                parts.append(f"{replica_id}: " + ", ".join(f"directory {d} from {peer}" for peer, d in live))
        return DUPLICATE_NOTE + "; ".join(parts) + ")" if parts else None
