"""The inbound side of a node (Kafka's ``ControllerApis``): every request a
controller listener decodes comes here and is answered. ApiVersions and the
admin requests are answered from a read-only view of the raft
(:mod:`kraft.node.admin_apis`); the raft RPCs go to the raft driver, whose
core answers them, and the answer goes back on the same connection. Nothing
here sends requests or holds the node.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from kraft.config import NodeConfig
from kraft.errors import ConfigurationError
from kraft.messages.generated.api_versions_response import ApiVersionsResponse
from kraft.controller import describe_cluster_rpc, update_features_rpc
from kraft.controller.request_handlers import WRITE_APIS
from kraft.controller.result import ApiError
from kraft.node import admin_apis, authorizer, envelope
from kraft.node.controller_server import NotController
from kraft.node.cluster_ids import INCONSISTENT_CLUSTER_ID, ClusterIdWatch
from kraft.node.duplicate_ids import DuplicateNodeIds
from kraft.node.raft_view import InboundRaft
from kraft.node.raft_metrics import RaftMetrics, error_name, request_name, wire_error
from kraft.raft.errors import Errors
from kraft.raft.rpcs import BY_API_KEY, CORE_API_KEYS, FetchRequest, describe_quorum_rpc
from kraft.raft.rpcs.rpc_unit import Reject
from kraft.raft.witness_policy import WitnessDecision
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import CLIENT_SOFTWARE_NAME
from kraft.wire.not_controller import REFUSED_CONTROLLER_APIS
from kraft.wire.errors import ErrorCode
from kraft.wire.not_controller_admin import ADMIN_NOT_CONTROLLER_APIS, admin_not_controller_response, error_response
from kraft.wire.server import CloseConnection, ConnectionInfo, Response

__all__ = ["CONTROLLER_APIS", "ControllerApis", "ControllerRequests", "SUPPORTED_APIS", "advertised_apis",
           "replayed_api_versions"]

log = logging.getLogger("kraft.node")

#: The APIs a kraft controller listener answers, with the versions we speak.
SUPPORTED_APIS: dict[ApiKey | int, tuple[int, int]] = {
    ApiKey.FETCH: BY_API_KEY[ApiKey.FETCH].versions,
    ApiKey.API_VERSIONS: BY_API_KEY[ApiKey.API_VERSIONS].versions,
    # SASL (wire/sasl.py). Advertised from v0 as Kafka does (librdkafka
    # requires it), but only v1 (KIP-152 framing) is served: a v0 handshake
    # is refused. On a listener without SASL both get ILLEGAL_SASL_STATE.
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.VOTE: BY_API_KEY[ApiKey.VOTE].versions,
    ApiKey.BEGIN_QUORUM_EPOCH: BY_API_KEY[ApiKey.BEGIN_QUORUM_EPOCH].versions,
    ApiKey.END_QUORUM_EPOCH: BY_API_KEY[ApiKey.END_QUORUM_EPOCH].versions,
    ApiKey.FETCH_SNAPSHOT: BY_API_KEY[ApiKey.FETCH_SNAPSHOT].versions,
    # The admin surface (kraft/node/admin_apis.py).
    ApiKey.METADATA: (0, 13),
    ApiKey.DESCRIBE_QUORUM: describe_quorum_rpc.VERSIONS,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster_rpc.VERSIONS,
    ApiKey.UPDATE_FEATURES: update_features_rpc.VERSIONS,  # the kraft.version upgrade (kraft/node/update_features.py)
    # KIP-853 voter changes (answered by the raft core of the leader).
    ApiKey.ADD_RAFT_VOTER: BY_API_KEY[ApiKey.ADD_RAFT_VOTER].versions,
    ApiKey.REMOVE_RAFT_VOTER: BY_API_KEY[ApiKey.REMOVE_RAFT_VOTER].versions,
    ApiKey.UPDATE_RAFT_VOTER: BY_API_KEY[ApiKey.UPDATE_RAFT_VOTER].versions,
}


def replayed_api_versions(frame_hex: str) -> dict[int, tuple[int, int]]:
    """The api ranges of an ApiVersions response frame in hex (size,
    correlation id, body; ApiVersions responses keep header v0): for tests,
    ``KraftNode(config, advertised_apis=replayed_api_versions(hex))`` makes a
    kraft node advertise exactly what, e.g., a real Kafka 4.0 controller did."""
    try:
        frame = bytes.fromhex(frame_hex)
        for version in (4, 3, 0):
            try:
                body = ApiVersionsResponse.decode(frame[8:], version=version)
                return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
            except Exception:
                continue
    except ValueError:
        pass
    raise ConfigurationError("not an ApiVersions response frame in hex")


def advertised_apis(own: Mapping[Any, tuple[int, int]], *, leading_handover: bool,
                    client_software_name: str | None,
                    controller_apis: Mapping[Any, tuple[int, int]] | None = None) -> Mapping[Any, tuple[int, int]]:
    """What ApiVersions advertises to a client that names itself
    ``client_software_name`` (ApiVersions v3+; None or "" before).

    A witness leading a hand-over epoch adds the Kafka controller RPCs it
    answers with NOT_CONTROLLER (wire/not_controller.py,
    not_controller_admin.py), so that a Kafka broker or admin client that
    finds it as leader sends them and is told to retry with the next
    controller. Never to a kraft client: a kraft voter's witness detection
    (kraft/node/witness_detector.py) takes a peer that advertises them for a Kafka
    controller, and would then refuse to campaign -- or name the witness as
    a successor -- when the witness resigns in its favour.

    A node that runs Kafka's controller (``controller_apis``) advertises
    the controller RPCs it serves to every other client, active or not, as a
    Kafka controller does: a broker picks the versions it forwards with
    from them. A kraft peer is told only the raft APIs, for the same reason."""
    if client_software_name == CLIENT_SOFTWARE_NAME:
        return own
    if controller_apis is not None:
        return {**own, **controller_apis}
    if not leading_handover:
        return own
    return {**own, **{k: v for k, (_, v) in REFUSED_CONTROLLER_APIS.items()},
            **{k: (ApiKey(k).min_version, ApiKey(k).max_version) for k in ADMIN_NOT_CONTROLLER_APIS}}


#: What a node running Kafka's controller advertises besides :data:`SUPPORTED_APIS`.
CONTROLLER_APIS: dict[ApiKey | int, tuple[int, int]] = {
    ApiKey(k): (ApiKey(k).min_version, ApiKey(k).max_version) for k in sorted(WRITE_APIS | {ApiKey.ENVELOPE})
}


class ControllerRequests(Protocol):
    """The controller as the listeners see it (:class:`kraft.node.controller_server.ControllerServer`)."""

    async def handle(self, api_key: int, body: Any, version: int) -> Any: ...


def _for_controller(key: int, body: Any) -> bool:
    """A request Kafka's controller answers; not an UpdateFeatures naming
    kraft.version, which is the raft leader's upgrade (kraft/node/update_features.py)."""
    return key in WRITE_APIS and not (
        key == ApiKey.UPDATE_FEATURES and any(u.feature == "kraft.version" for u in body.feature_updates))


async def _controller_answer(controller: ControllerRequests, key: int, version: int, body: Any) -> Any:
    """The controller's answer once committed, or a refusal of the whole
    request on every item (:class:`ApiError`); :class:`NotController`
    propagates, for the caller to say where (the items, or an envelope)."""
    try:
        return await controller.handle(key, body, version)
    except ApiError as e:
        return error_response(key, version, body, e.error, e.message)


class ControllerApis:
    """Answers a controller listener's requests (a ``RequestHandler`` of
    :func:`kraft.wire.server.serve_listener`)."""

    def __init__(self, config: NodeConfig, raft: InboundRaft, *, cluster_id: str,
                 advertised_apis: Mapping[Any, tuple[int, int]], metrics: RaftMetrics | None,
                 cluster_ids: ClusterIdWatch | None,
                 witness_decision: Callable[[], WitnessDecision | None],
                 controller: ControllerRequests | None = None) -> None:
        self._config = config
        self._raft = raft
        self._cluster_id = cluster_id
        self._advertised = advertised_apis
        self._metrics = metrics
        self._cluster_ids = cluster_ids
        self._witness_decision = witness_decision
        #: Kafka's controller, when this node runs it (kraft/node/controller_server.py).
        self.controller = controller
        #: Two processes fetching with one node id (kraft/node/duplicate_ids.py).
        self.duplicates = DuplicateNodeIds()

    def _advertised_now(self, request: Any) -> Mapping[Any, tuple[int, int]]:
        """What ApiVersions advertises to the client of ``request`` now (:func:`advertised_apis`)."""
        raft = self._raft
        return advertised_apis(self._advertised,
                               leading_handover=raft.initialized and raft.core.handover_leadership is not None,
                               client_software_name=getattr(request, "client_software_name", None),
                               controller_apis=CONTROLLER_APIS if self.controller is not None else None)

    async def handle(self, request: Any, conn: ConnectionInfo) -> Response | None:
        metrics = self._metrics
        if metrics is None:
            return await self._dispatch(request, conn)
        # Kafka's RequestMetrics: requests, errors by code, total time.
        start = time.perf_counter()
        response = await self._dispatch(request, conn)
        error = "NONE" if response is None else error_name(wire_error(response.body))
        metrics.request_handled(request_name(ApiKey(request.api_key).name), error,
                                (time.perf_counter() - start) * 1000.0)
        return response

    async def _dispatch(self, request: Any, conn: ConnectionInfo) -> Response | None:
        key = request.api_key
        version = request.api_version
        if key == ApiKey.API_VERSIONS:
            return admin_apis.node_api_versions(self._raft, version, request.body, self._advertised_now(request.body))
        config = self._config
        refused = authorizer.authorize(config.secured, config.super_users, key, version, conn)
        if refused is not None:
            return refused
        if self.controller is not None:
            if key == ApiKey.ENVELOPE:
                return await self._envelope(request, conn)
            if _for_controller(key, request.body):
                try:
                    body = await _controller_answer(self.controller, key, version, request.body)
                except NotController:
                    body = admin_not_controller_response(key, version, request.body)
                return Response(body, version)
        if key in admin_apis.ADMIN_API_KEYS:
            return await admin_apis.handle(self._raft, request, conn, cluster_id=self._cluster_id,
                                           node_id=config.node_id, witness=self._witness_decision(),
                                           duplicates=self.duplicates.note())
        if key in CORE_API_KEYS:
            return await self._handle_raft(key, version, request.body, conn)
        if key in ADMIN_NOT_CONTROLLER_APIS:
            # An admin client's request sent straight to a controller (KIP-919):
            # NOT_CONTROLLER on every item, so it retries against the active
            # Kafka controller (wire/not_controller_admin.py).
            return Response(admin_not_controller_response(key, version, request.body), version)
        raise CloseConnection(f"api {ApiKey(key).name} is not served by a kraft controller")

    async def _envelope(self, request: Any, conn: ConnectionInfo) -> Response:
        """A broker's forwarded request (:mod:`kraft.node.envelope`),
        answered as if its client had sent it here."""
        version = request.api_version
        try:
            forwarded = envelope.unwrap(request.body)
        except envelope.EnvelopeError as e:
            log.info("Envelope from %s refused (%s): %s", conn, error_name(e.error), e)
            return Response(envelope.refusal(e.error), version)
        inner = forwarded.request
        controller = self.controller
        if controller is not None and _for_controller(inner.api_key, inner.body):
            try:
                body = await _controller_answer(controller, inner.api_key, inner.api_version, inner.body)
            except NotController:
                # Kafka's RequestChannel: a NOT_CONTROLLER answer goes on the
                # envelope itself, so the broker looks for the new controller.
                return Response(envelope.refusal(ErrorCode.NOT_CONTROLLER), version)
            return Response(envelope.wrap(inner, body, inner.api_version), version)
        try:
            answer = await self._dispatch(inner, replace(conn, principal=forwarded.principal))
        except CloseConnection as e:
            log.info("Envelope from %s: %s", conn, e)
            return Response(envelope.refusal(ErrorCode.UNSUPPORTED_VERSION), version)
        if answer is None:
            return Response(envelope.refusal(ErrorCode.UNKNOWN_SERVER_ERROR), version)
        return Response(envelope.wrap(inner, answer.body, answer.api_version), version)

    async def _handle_raft(self, key: int, version: int, body: Any, conn: ConnectionInfo) -> Response:
        raft_rpc = BY_API_KEY[key]
        try:
            event = raft_rpc.read_request(version, body)
        except Reject as refused:
            # A request the core must not see: its error answer.
            answer = raft_rpc.error_response(refused.error, refused.partition_level)
            return Response(raft_rpc.write_response(answer, version, conn.listener), version)
        source = raft_rpc.request_source(event)
        if isinstance(event, FetchRequest):
            self.duplicates.fetched(source, event.replica_key.directory_id, f"{conn.peer_host}:{conn.peer_port}")
        response = await self._raft.handle_request(
            source, event, raft_rpc.answer_wait(event, self._config.quorum.request_timeout_ms))
        if response is None:
            response = raft_rpc.error_response(Errors.REQUEST_TIMED_OUT, False)
        elif self._cluster_ids is not None and raft_rpc.error_tag(response) == INCONSISTENT_CLUSTER_ID:
            self._cluster_ids.refused_request(source, f"{conn.peer_host}:{conn.peer_port}",
                                              getattr(event, "cluster_id", None))
        return Response(raft_rpc.write_response(response, version, conn.listener), version)
