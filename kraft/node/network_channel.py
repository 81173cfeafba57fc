"""The outbound side of a node (Kafka's ``KafkaNetworkChannel``): the raft
core's requests (Fetch, Vote, BeginQuorumEpoch, ...) go out on pooled
connections to the other voters, and each answer, or the failure, goes back
in to the raft driver (:meth:`~kraft.node.raft_driver.RaftDriver.deliver`).

What it needs: where to send (the current voter set's endpoints, the
leader's, the bootstrap servers, the static configuration: an
:class:`AddressBook`), this node's own endpoints (sent with some requests),
the connection pool, and optionally the metrics and the cluster-id watch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

import trio

from kraft.node.cluster_ids import INCONSISTENT_CLUSTER_ID, ClusterIdWatch
from kraft.node.raft_metrics import RaftMetrics
from kraft.raft import events as ev
from kraft.raft import rpcs
from kraft.raft.core import RaftCore
from kraft.raft.errors import Errors
from kraft.raft.voters import Endpoints
from kraft.records.endpoint_overrides import EndpointOverride
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import ClientPool, ConnectionFailed, NoCommonVersion, PeerClient, RequestTimedOut
from kraft.wire.security import ClientSecurity

log = logging.getLogger("kraft.node")

__all__ = ["AddressBook", "NetworkChannel", "bootstrap_nodes"]


class _PreVoteNeedsV2(Exception):
    """The peer cannot take Vote v2, so it cannot take a pre-vote (KIP-996)."""


def bootstrap_nodes(servers: Iterable[tuple[str, int]], own: Collection[tuple[str, int]] = ()
                    ) -> dict[int, tuple[str, int]]:
    """``controller.quorum.bootstrap.servers`` as the node ids a replica
    dials them by: -2, -3, ... in the configured order, as Kafka's
    ``KafkaRaftClient`` constructor numbers them (-1 is "no node" on the wire
    and in ``quorum-state``). Our own addresses (``own``, the listeners) are
    left out -- a node never fetches from itself -- without renumbering the
    others, so an id names the same configured server on every node."""
    return {-(i + 2): address for i, address in enumerate(servers) if address not in own}


class AddressBook:
    """Where a node id is reached on the controller listener: the current
    voter set (KIP-853: it changes with the log), the leader's advertised
    endpoint, a bootstrap server (ids -2, -3, ..., as Kafka's
    ``KafkaRaftClient`` numbers them), the static configuration.

    ``overrides`` (``recover-quorum --endpoints``, hosts that moved) win over
    the voter set while it still records the stale endpoint: they say only
    where to dial, so the voter set, the log and every vote stay Raft's."""

    def __init__(self, listener: str, static: Mapping[int, tuple[str, int]],
                 bootstrap: Mapping[int, tuple[str, int]], overrides: Sequence[EndpointOverride] = ()) -> None:
        self.listener = listener
        self._static = dict(static)
        self.bootstrap = dict(bootstrap)
        self._overrides = {o.voter_id: o for o in overrides if o.listener == listener}
        #: The raft core once it exists (its voter set, the leader's endpoints).
        self.quorum: RaftCore | None = None

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        if node_id < 0:
            return self.bootstrap.get(node_id)
        core = self.quorum
        override = self._overrides.get(node_id)
        if override is not None:
            if core is None:
                return (override.host, override.port)
            key = core.voters.key(node_id)
            recorded = next(((e.host, e.port) for e in core.voters.endpoints(node_id) if e.listener == self.listener),
                            None)
            if override.in_force(key is not None, key.directory_id if key is not None else None, recorded):
                return (override.host, override.port)
        if core is not None:
            e = next((e for e in core.voters.endpoints(node_id) if e.listener == self.listener), None)
            if e is not None:
                return (e.host, e.port)
            quorum = core.quorum
            if quorum.initialized and quorum.leader_id == node_id:
                e = next((e for e in quorum.leader_endpoints if e.listener == self.listener), None)
                if e is not None:
                    return (e.host, e.port)
        return self._static.get(node_id)

    def voter_addresses(self, configured: Sequence[int]) -> dict[int, tuple[str, int] | None]:
        """The current voters' controller endpoints (``configured`` before the core exists)."""
        ids = self.quorum.voters.voter_ids if self.quorum is not None else configured
        return {i: self.address_of(i) for i in ids}


class NetworkChannel:
    """Sends the raft core's requests; answers go to ``deliver``."""

    def __init__(self, pool: ClientPool, addresses: AddressBook, *, request_timeout_ms: int,
                 max_versions: Mapping[int, int], local_endpoints: Callable[[], Endpoints],
                 security: ClientSecurity | None, metrics: RaftMetrics | None = None,
                 cluster_ids: ClusterIdWatch | None = None) -> None:
        self.pool = pool
        self.addresses = addresses
        self._timeout_ms = request_timeout_ms
        self._max_versions = max_versions
        self._local_endpoints = local_endpoints
        self._security = security
        self._metrics = metrics
        self._cluster_ids = cluster_ids
        self._nursery: trio.Nursery | None = None
        self._deliver: Callable[[ev.Inbound], None] = lambda _: None

    def start(self, nursery: trio.Nursery, deliver: Callable[[ev.Inbound], None]) -> None:
        """Send from ``nursery``'s tasks, answers to ``deliver``."""
        self._nursery = nursery
        self._deliver = deliver

    def send_all(self, requests: Sequence[ev.OutboundRequest]) -> None:
        assert self._nursery is not None
        for out in requests:
            self._nursery.start_soon(self._request, out)

    async def _request(self, out: ev.OutboundRequest) -> None:
        deliver = self._deliver
        message = out.message
        listener = self.addresses.listener
        if isinstance(message, rpcs.ApiVersionsRequest):
            # A would-be voter, dialled on the endpoint it asked to be added
            # with; not pooled under its id (it may not be reachable there).
            e = next((e for e in message.endpoints if e.listener == listener), None)
            if e is None:
                deliver(ev.RequestFailed(out.destination, out.correlation_id, "no known address"))
            else:
                await self._api_versions(out, (e.host, e.port))
            return
        address = self.addresses.address_of(out.destination)
        if address is None:
            deliver(ev.RequestFailed(out.destination, out.correlation_id, "no known address"))
            return
        raft_rpc = rpcs.BY_REQUEST[type(message)]
        key = ApiKey(raft_rpc.api_key)
        endpoints = self._local_endpoints()

        def build(version: int) -> object:
            if isinstance(message, rpcs.VoteRequest) and message.pre_vote and version < 2:
                raise _PreVoteNeedsV2()
            return raft_rpc.write_request(message, version, endpoints)

        client = self.pool.get(out.destination, *address)
        metrics = self._metrics
        name = raft_rpc.metrics_name if metrics is not None else ""
        if metrics is not None:
            metrics.request_sent(name)
        try:
            version, body = await client.request(key, build,
                                                 timeout_ms=raft_rpc.send_timeout(message, self._timeout_ms),
                                                 max_version=self._max_versions[key])
        except _PreVoteNeedsV2:
            deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                       rpcs.VoteResponse(error=Errors.UNSUPPORTED_VERSION)))
            return
        except NoCommonVersion as e:
            deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        except (ConnectionFailed, RequestTimedOut) as e:
            log.debug("request to node %d failed: %s", out.destination, e)
            if metrics is not None:
                # As Kafka's raft network channel completes them.
                metrics.response_received(
                    name, "REQUEST_TIMED_OUT" if isinstance(e, RequestTimedOut) else "BROKER_NOT_AVAILABLE")
            deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        response = raft_rpc.read_response(version, body, listener)
        error = raft_rpc.error_tag(response)
        if metrics is not None:
            metrics.response_received(name, error)
        if self._cluster_ids is not None and error == INCONSISTENT_CLUSTER_ID:
            assert self._nursery is not None
            self._nursery.start_soon(self._cluster_ids.refused_by, out.destination, *address)
        deliver(ev.InboundResponse(out.destination, out.correlation_id, response))

    async def _api_versions(self, out: ev.OutboundRequest, address: tuple[str, int]) -> None:
        client = PeerClient(address[0], address[1], client_id=self.pool.client_id,
                            request_timeout_ms=self._timeout_ms, security=self._security)
        try:
            version, body = await client.request(
                ApiKey.API_VERSIONS, lambda v: rpcs.api_versions_rpc.RPC.write_request(out.message, v),
                max_version=self._max_versions[ApiKey.API_VERSIONS])
        except (ConnectionFailed, RequestTimedOut, NoCommonVersion) as e:
            self._deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        finally:
            await client.aclose()
        self._deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                         rpcs.api_versions_rpc.RPC.read_response(version, body)))
