"""A peer of another cluster, named on both sides with both ids.

A node formatted with another cluster id (``kraft storage format -t``) is
refused by the raft core with INCONSISTENT_CLUSTER_ID on every request, in
both directions (Kafka's ``KafkaRaftClient.hasValidClusterId``), so neither
side takes anything from the other. Silently, though: this module turns it
into ONE log line per peer (once a minute, with a count of the repeats):

- the refusing side knows both ids: the request carried the peer's;
- the refused side learns the peer's id by asking it once (DescribeCluster,
  which Kafka controllers and kraft nodes answer with their cluster id).

Depends only on what it is given: this node's cluster id, where that id is
recorded, and a way to ask a peer (a :class:`PeerAsker`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kraft.wire.rate_limited_log import RateLimitedLog

__all__ = ["ClusterIdWatch", "INCONSISTENT_CLUSTER_ID"]

log = logging.getLogger("kraft.node")

INCONSISTENT_CLUSTER_ID = "INCONSISTENT_CLUSTER_ID"

#: Asks the peer at (host, port) for its cluster id (None if it cannot tell).
PeerAsker = Callable[[str, int], Awaitable[str | None]]


class ClusterIdWatch:
    """Names peers whose cluster id is not ours."""

    def __init__(self, cluster_id: str, meta_path: str, ask_cluster_id: PeerAsker, window_s: float = 60.0) -> None:
        self.cluster_id = cluster_id
        self.meta_path = meta_path
        self._ask = ask_cluster_id
        self._limited = RateLimitedLog(log, window_s=window_s)
        self._asking: set[int] = set()
        self._window_s = window_s

    def refused_request(self, source: int, peer: str, their_cluster_id: str | None) -> None:
        """This node refused a request of node ``source`` (from ``peer``)
        with INCONSISTENT_CLUSTER_ID."""
        self._limited.log(
            logging.ERROR, ("peer", source),
            "node %d (%s) is of cluster %s, not of this node's cluster %s (%s): its requests are refused "
            "(INCONSISTENT_CLUSTER_ID) and nothing from it is kept; format node %d's log directory with "
            "--cluster-id %s, or take it out of this quorum's voters",
            source, peer, their_cluster_id if their_cluster_id is not None else "(none sent)", self.cluster_id,
            self.meta_path, source, self.cluster_id)

    async def refused_by(self, destination: int, host: str, port: int) -> None:
        """Node ``destination`` at (host, port) answered one of our requests
        with INCONSISTENT_CLUSTER_ID: ask it for its id (once at a time per
        peer) and name both."""
        if destination in self._asking:
            return
        self._asking.add(destination)
        try:
            theirs: str | None = None
            try:
                theirs = await self._ask(host, port)
            except Exception as e:  # noqa: BLE001 - naming the peer matters more than why it did not say
                log.debug("asking node %d at %s:%d for its cluster id failed: %s", destination, host, port, e)
            self._limited.log(
                logging.ERROR, ("peer", destination),
                "node %d (%s:%d) is of cluster %s, not of this node's cluster %s (%s): it refuses our requests "
                "(INCONSISTENT_CLUSTER_ID) and this node takes nothing from it; if this node belongs to that "
                "cluster, format a fresh log directory for it with --cluster-id %s",
                destination, host, port, theirs or "(unknown)", self.cluster_id, self.meta_path,
                theirs or "THEIR_CLUSTER_ID")
        finally:
            self._asking.discard(destination)


def describe_cluster_asker(client_factory: Callable[[str, int], Any]) -> PeerAsker:
    """A :data:`PeerAsker` sending DescribeCluster (controllers' endpoints)
    with a fresh client from ``client_factory(host, port)``."""

    async def ask(host: str, port: int) -> str | None:
        from kraft.controller.describe_cluster_rpc import ENDPOINT_TYPE_BROKER, ENDPOINT_TYPE_CONTROLLER, describe_cluster_request
        from kraft.wire.apis import ApiKey

        client = client_factory(host, port)
        try:
            _, body = await client.request(
                ApiKey.DESCRIBE_CLUSTER,
                # v0 knows brokers only: the peer's cluster id is all we need.
                lambda v: describe_cluster_request(ENDPOINT_TYPE_CONTROLLER if v >= 1 else ENDPOINT_TYPE_BROKER)(v))
        finally:
            await client.aclose()
        cluster_id = getattr(body, "cluster_id", None)
        return str(cluster_id) if cluster_id else None

    return ask
