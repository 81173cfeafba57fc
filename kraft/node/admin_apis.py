"""The admin surface of a kraft controller listener: what tools and admin
clients get from a node, as opposed to the raft RPCs between voters
(:mod:`kraft.raft.rpcs`, answered through :mod:`kraft.node.controller_apis`).

What a Kafka controller answers, and kraft with it:

* **ApiVersions** -- every api the listener serves with its versions, the
  supported ``kraft.version`` range (0-1) and the finalized feature levels
  (a static quorum is ``kraft.version`` 0, which Kafka leaves out, as it
  leaves out every level 0). As in Kafka's ``alterFeatureLevel0``
  (KAFKA-17492), a request below v4 does not see a supported feature whose
  minimum is 0: older clients cannot read one.
  After the upgrade to ``kraft.version`` 1 every node reports level 1 (its
  log's latest, as Kafka's controller reports ``RaftClient.kraftVersion``)
  with the finalized-features epoch = the last committed offset it knows.
* **UpdateFeatures** (the 0 -> 1 ``kraft.version`` upgrade, as
  ``kafka-features.sh --bootstrap-controller ... upgrade --feature
  kraft.version=1`` sends it): :mod:`kraft.node.update_features`.
* **DescribeQuorum** v0-v2 (Kafka's ``KafkaRaftClient.handleDescribeQuorumRequest``):
  on the leader, its view of every voter and of the observers that fetched
  in the last five minutes (log end offset, last fetch and last caught-up
  wall-clock times; the leader reports itself at the time of the request),
  plus in v2 the directory ids and every voter's listeners (observers have
  no known listeners). Not for ``__cluster_metadata``-0:
  UNKNOWN_TOPIC_OR_PARTITION. On any other node: NOT_LEADER_OR_FOLLOWER
  (with Kafka's message for it in v2), where kraft also fills the partition's leader id and epoch (and in v2 the
  leader's listeners) that Kafka leaves at 0 -- clients ignore them on an
  error, a person reading the answer learns where to go.
* **DescribeCluster** with endpoint type 2 (controllers), Kafka's
  ``ControllerApis.handleDescribeCluster``: the cluster id, every voter with
  its endpoint on the listener the request came in on, and ``controllerId``
  = the quorum leader (-1 when none is known). That is how
  ``kafka-metadata-quorum.sh --bootstrap-controller`` finds the leader it
  sends DescribeQuorum to. An unknown endpoint type gets
  UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0).

Where kraft goes beyond a Kafka controller: a Kafka controller listener does
not serve Metadata and answers DescribeCluster for brokers (endpoint type 1,
the only one v0 can express) with MISMATCHED_ENDPOINT_TYPE. Clients that
only know brokers -- kafka-python's ``KafkaAdminClient`` bootstraps with
Metadata and describes the cluster with endpoint type 1; librdkafka's
``kcat -L`` sends Metadata -- would then fail or retry forever against a
kraft quorum, which has no brokers. So kraft answers both with a *broker
view*: the leader alone, as the one broker (its controller endpoint), with
``controllerId`` = the leader and no topics (a requested topic gets
UNKNOWN_TOPIC_OR_PARTITION, or UNKNOWN_TOPIC_ID when asked by id). Listing
only the leader is deliberate: such clients send their next requests
(DescribeQuorum among them) to a broker of the list, and only the leader
answers those. With no leader known the list is empty, which such clients
treat as "not ready yet" and retry.

No authorizer: every operation is allowed, and a request that asks for the
cluster's authorized operations gets every cluster operation, as Kafka
without an authorizer answers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kraft.controller.describe_cluster_rpc import ENDPOINT_TYPE_BROKER, ENDPOINT_TYPE_CONTROLLER, ENDPOINT_TYPE_NAMES
from kraft.raft.rpcs import describe_quorum_rpc
from kraft.messages.generated import (
    describe_cluster_request as dc_req,
    describe_cluster_response as dc_resp,
    metadata_request as md_req,
    metadata_response as md_resp,
)
from kraft.messages.generated.api_versions_request import ApiVersionsRequest
from kraft.raft.voters import Endpoint, Endpoints, VoterSet
from kraft.raft.witness_policy import WitnessDecision
from kraft.wire.api_versions import VersionRange, api_versions_response, response_version
from kraft.wire.apis import ApiKey
from kraft.wire.codec import DecodedRequest
from kraft.wire.errors import ErrorCode
from kraft.wire.server import ConnectionInfo, Response

from kraft.node import update_features as features
from kraft.node.update_features import SUPPORTED_FEATURES

if TYPE_CHECKING:
    from kraft.node.raft_view import RaftView, RaftWriter

__all__ = [
    "ADMIN_API_KEYS",
    "SUPPORTED_FEATURES",
    "ENDPOINT_TYPE_BROKER",
    "ENDPOINT_TYPE_CONTROLLER",
    "CLUSTER_AUTHORIZED_OPERATIONS",
    "handle",
    "api_versions",
    "describe_cluster_response",
    "metadata_response",
]

#: The admin apis :func:`handle` answers (their versions are in node.py's
#: ``SUPPORTED_APIS``). KIP-853's AddRaftVoter/RemoveRaftVoter/UpdateRaftVoter
#: join here as they are implemented.
ADMIN_API_KEYS = frozenset({ApiKey.METADATA, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER,
                            ApiKey.UPDATE_FEATURES})


#: Kafka's ``AclEntry.supportedOperations(CLUSTER)`` as the bit field
#: ``Utils.to32BitField`` makes of it (bit = ``AclOperation`` code): CREATE 5,
#: ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS
#: 11, IDEMPOTENT_WRITE 12 -- what a node without an authorizer grants.
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))

#: The schema default of the authorized-operations fields: "not requested".
_OPERATIONS_NOT_REQUESTED = -(2**31)

# ---------------------------------------------------------------- dispatch


async def handle(raft_driver: RaftWriter, request: DecodedRequest, conn: ConnectionInfo, *,
                 cluster_id: str, node_id: int, witness: WitnessDecision | None = None,
                 duplicates: str | None = None) -> Response:
    """Answer one admin request (an api in :data:`ADMIN_API_KEYS`) on the
    node ``node_id`` of ``cluster_id`` whose raft is ``raft_driver``; ``witness``:
    this voter's witness decision, noted in a DescribeQuorum it cannot answer;
    ``duplicates``: the node ids two processes fetch with, noted in a leader's."""
    core = raft_driver.core
    version = request.api_version
    voters = core.voters
    leader = raft_driver.leader
    match request.api_key:
        case ApiKey.DESCRIBE_QUORUM:
            description = core.describe_quorum(_wall_clock_ms()) if raft_driver.initialized else None
            body: Any = describe_quorum_rpc.response_to_wire(version, request.body, description, leader, voters,
                                                             core.topic_partition)
            if description is None and witness is not None and witness.witness:
                describe_quorum_rpc.note_witness(body, witness.reason)
            elif description is not None and version >= 2 and (lead := core.handover_leadership) is not None:
                # A witness leading a hand-over epoch says so (kraft/raft/handover.py).
                describe_quorum_rpc.note_handover(body, f"leading hand-over epoch {description.leader_epoch} until voter "
                                     f"{' or '.join(str(i) for i in sorted(lead.leaders))} has fetched the log")
            if description is not None and duplicates is not None:
                describe_quorum_rpc.note_leader(body, duplicates)
        case ApiKey.DESCRIBE_CLUSTER:
            body = describe_cluster_response(version, request.body, cluster_id, voters, leader.leader_id,
                                             conn.listener)
        case ApiKey.METADATA:
            body = metadata_response(version, request.body, cluster_id, voters, leader.leader_id,
                                     conn.listener)
        case ApiKey.UPDATE_FEATURES:
            # The kraft.version upgrade (kraft/node/update_features.py).
            body = await features.update_features(raft_driver, node_id, request.body, version)
        case _:
            raise ValueError(f"{request.api_key.name} is not an admin api")
    return Response(body, version)


def _wall_clock_ms() -> int:
    # DescribeQuorum's timestamps are wall-clock ms, the clock the node's
    # raft driver drives the core with.
    return int(time.time() * 1000)


# ---------------------------------------------------------------- ApiVersions


def api_versions(version: int, request: ApiVersionsRequest | None,
                 supported: Mapping[ApiKey | int, VersionRange],
                 finalized: Mapping[str, int] | None = None, finalized_epoch: int = -1) -> Response:
    """The ApiVersions answer of a controller listener serving ``supported``.
    ``finalized`` maps feature names to finalized levels; levels 0 are left
    out, as Kafka leaves them out. ``finalized_epoch`` is reported only
    while some level is finalized (-1 otherwise)."""
    supported_features = dict(SUPPORTED_FEATURES)
    if version < 4:
        # Kafka's alterFeatureLevel0: clients before v4 fail on a zero minimum.
        supported_features = {name: r for name, r in supported_features.items() if r[0] != 0}
    levels = {name: level for name, level in (finalized or {}).items() if level > 0}
    body = api_versions_response(version, supported, request=request, supported_features=supported_features,
                                 finalized_features=levels,
                                 finalized_features_epoch=finalized_epoch if levels else -1)
    return Response(body, response_version(version))


def node_api_versions(raft_driver: RaftView | None, version: int, request: ApiVersionsRequest | None,
                      supported: Mapping[ApiKey | int, VersionRange]) -> Response:
    """ApiVersions on the node whose raft is ``raft_driver`` (None before it
    starts): the finalized ``kraft.version`` is its log's
    latest (uncommitted included, as Kafka's ``RaftClient.kraftVersion``);
    the finalized-features epoch is the last committed offset it knows, as a
    Kafka controller reports the offset of the metadata image it read its
    features from."""
    if raft_driver is None or not raft_driver.initialized:
        return api_versions(version, request, supported)
    finalized = {"kraft.version": raft_driver.core.kraft_version}
    return api_versions(version, request, supported, finalized, max(raft_driver.high_watermark - 1, -1))


# ---------------------------------------------------------------- DescribeCluster and Metadata


def _endpoint_on(endpoints: Endpoints, listener: str) -> Endpoint | None:
    """The endpoint for ``listener`` (Kafka describes nodes on the listener a
    request came in on); a static voter has only the default controller
    listener's, so fall back to the first."""
    for e in endpoints:
        if e.listener == listener:
            return e
    return endpoints[0] if endpoints else None


def _controller_view(voters: VoterSet, listener: str) -> list[tuple[int, Endpoint]]:
    out = []
    for node_id in voters.voter_ids:
        e = _endpoint_on(voters.endpoints(node_id), listener)
        if e is not None:
            out.append((node_id, e))
    return out


def _broker_view(voters: VoterSet, leader_id: int | None, listener: str) -> list[tuple[int, Endpoint]]:
    """The leader alone (see the module docstring), or nothing."""
    if leader_id is None:
        return []
    e = _endpoint_on(voters.endpoints(leader_id), listener)
    return [] if e is None else [(leader_id, e)]


def describe_cluster_response(
    version: int,
    request: dc_req.DescribeClusterRequest,
    cluster_id: str,
    voters: VoterSet,
    leader_id: int | None,
    listener: str,
) -> dc_resp.DescribeClusterResponse:
    """DescribeCluster's answer (Kafka's ``AuthHelper.computeDescribeClusterResponse``
    for a controller, plus the broker view)."""
    # v0 cannot name an endpoint type: it means brokers.
    endpoint_type = request.endpoint_type if version >= 1 else ENDPOINT_TYPE_BROKER
    if endpoint_type not in ENDPOINT_TYPE_NAMES:
        error = ErrorCode.INVALID_REQUEST if version == 0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        return dc_resp.DescribeClusterResponse(error_code=error,
                                               error_message=f"Unsupported endpoint type {endpoint_type}")
    if endpoint_type == ENDPOINT_TYPE_CONTROLLER:
        nodes = _controller_view(voters, listener)
    else:
        nodes = _broker_view(voters, leader_id, listener)
    # Kafka: a controller id missing from the node list is reported as -1.
    controller_id = leader_id if leader_id is not None and any(i == leader_id for i, _ in nodes) else -1
    operations = _OPERATIONS_NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        operations = CLUSTER_AUTHORIZED_OPERATIONS
    return dc_resp.DescribeClusterResponse(
        error_message=None,
        endpoint_type=endpoint_type,
        cluster_id=cluster_id,
        controller_id=controller_id,
        brokers=[dc_resp.DescribeClusterBroker(broker_id=i, host=e.host, port=e.port, rack=None)
                 for i, e in nodes],
        cluster_authorized_operations=operations,
    )


def metadata_response(
    version: int,
    request: md_req.MetadataRequest,
    cluster_id: str,
    voters: VoterSet,
    leader_id: int | None,
    listener: str,
) -> md_resp.MetadataResponse:
    """Metadata's answer on a controller listener: the broker view (the
    leader as the one broker), no topics (see the module docstring)."""
    nodes = _broker_view(voters, leader_id, listener)
    topics = []
    # v0's empty list and v1+'s null both mean "all topics": there are none.
    for t in request.topics or ():
        if t.name is None and version < 12:
            # A lookup by topic id, which Kafka serves from v12 only.
            topics.append(md_resp.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=""))
        elif t.name is None:
            topics.append(md_resp.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                                                        topic_id=t.topic_id))
        else:
            topics.append(md_resp.MetadataResponseTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                        name=t.name))
    response = md_resp.MetadataResponse(
        brokers=[md_resp.MetadataResponseBroker(node_id=i, host=e.host, port=e.port, rack=None) for i, e in nodes],
        cluster_id=cluster_id,
        controller_id=leader_id if nodes and leader_id is not None else -1,
        topics=topics,
    )
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = CLUSTER_AUTHORIZED_OPERATIONS
    return response
