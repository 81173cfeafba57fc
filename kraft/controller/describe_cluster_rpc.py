"""DescribeCluster (api key 60, v0-v2) as a client of a quorum sends it:
the request every client sends (the admin session, the observer's
discovery, ``kraft doctor``, the witness detector) to learn the cluster id
and the leader (``controllerId``), and the one model of its answer,
:class:`ClusterView` (Kafka's ``KafkaAdminClient.describeCluster`` result).
Its versions and Kafka's ``EndpointType`` codes are stated here, once: the
node answers it with them (Kafka's ``ControllerApis.handleDescribeCluster``:
:func:`kraft.node.admin_apis.describe_cluster_response`, from the raft's
voter set). Who sends it, how often and what an error means is the
caller's business (:mod:`kraft.admin_client.admin`); the bytes and their reading
are here. Adding a field to the view touches this module and its test.

Sans-IO, as the rest of the controller package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kraft.messages.generated import describe_cluster_request as dc_req
from kraft.messages.generated import describe_cluster_response as dc_resp

__all__ = [
    "ENDPOINT_TYPE_BROKER",
    "ENDPOINT_TYPE_CONTROLLER",
    "ENDPOINT_TYPE_NAMES",
    "VERSIONS",
    "VersionTooOld",
    "describe_cluster_request",
    "ClusterView",
    "cluster_view",
]

#: Kafka's ``EndpointType`` (KIP-919): which nodes DescribeCluster lists.
ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2
ENDPOINT_TYPE_NAMES = {ENDPOINT_TYPE_BROKER: "BROKER", ENDPOINT_TYPE_CONTROLLER: "CONTROLLER"}

#: The versions a kraft node answers and a client asks for (v1: the endpoint type, KIP-919).
VERSIONS = (0, 2)


class VersionTooOld(Exception):
    """The peer's highest common version cannot express the request."""


def describe_cluster_request(endpoint_type: int) -> Callable[[int], dc_req.DescribeClusterRequest]:
    """The DescribeCluster request for the version the connection agreed on;
    v0 cannot ask for controllers (:class:`VersionTooOld`)."""

    def build(version: int) -> dc_req.DescribeClusterRequest:
        if version < 1 and endpoint_type != ENDPOINT_TYPE_BROKER:
            raise VersionTooOld("DescribeCluster v0 cannot ask for controllers")
        return dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=endpoint_type)

    return build


# ---------------------------------------------------------------- what the cluster said


@dataclass(frozen=True, slots=True)
class ClusterView:
    """A DescribeCluster answer: the cluster id, the leader (``controllerId``,
    -1 if none) and where each listed node is."""

    cluster_id: str
    controller_id: int
    nodes: dict[int, tuple[str, int]]

    @property
    def leader_address(self) -> tuple[str, int] | None:
        return self.nodes.get(self.controller_id) if self.controller_id >= 0 else None


def cluster_view(body: dc_resp.DescribeClusterResponse) -> ClusterView:
    """A successful DescribeCluster answer as the one cluster view (Kafka's
    ``KafkaAdminClient.describeCluster`` result: cluster id, controller, nodes)."""
    return ClusterView(body.cluster_id, body.controller_id, {b.broker_id: (b.host, b.port) for b in body.brokers})
