"""A kraft witness registers with Kafka's active controller (KIP-919).

Why: Kafka's QuorumController refuses every feature upgrade (``kafka-features
upgrade``: metadata.version, group.version, kraft.version, ...) while a voter
has not registered -- ``FeatureControlManager.reasonNotSupported`` answers
"controller 3 has not registered, and may not support this feature" for each
id of the voter set without a ControllerRegistrationRecord. A witness that
stayed unregistered would hold back the Kafka controllers' upgrades for good.

What it registers, as Kafka's ``ControllerRegistrationManager`` does: once
per process run (a new incarnation id each start), with its controller
listeners and the feature ranges it supports. A witness never interprets the
controller's metadata records -- it replicates them -- so for every feature
but ``kraft.version`` it supports what the Kafka controller it registers with
supports (that controller's ApiVersions ``SupportedFeatures``): the Kafka
controllers alone bound an upgrade, as they would without a witness. For
``kraft.version``, the raft protocol it does run, it registers the range
kraft implements (intersected with the controller's), so a ``kraft.version``
upgrade is refused by Kafka itself while the witness could not follow it.
When the active controller's supported features change (a rolling upgrade
of the Kafka controllers) the witness registers again.

Registration changes nothing for Kafka's brokers: they find the active
controller from the raft leader (``RaftControllerNodeProvider``), not from
registrations. ``kafka-cluster list-endpoints --bootstrap-controller`` then
lists the witness beside the Kafka controllers.

A node that runs Kafka's controller itself registers too, as every Kafka
controller does: the active one writes its own record
(kraft/node/controller_server.py), and a standby sends its registration --
its own features, not the leader's -- to whichever controller leads, kraft's
or Kafka's, until its metadata image holds it (Kafka's
``ControllerRegistrationManager.maybeSendControllerRegistration`` sends
while ``registeredInLog`` is false). A raft-only kraft quorum has no
QuorumController to register with. The module depends on small callables,
not on the node.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import trio

from kraft.messages.errors import KraftProtocolError
from kraft.messages.generated import api_versions_request as av_req
from kraft.messages.generated import controller_registration_request as cr_req
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, PeerClient, PeerClientError
from kraft.wire.errors import ErrorCode
from kraft.wire.security import SecurityProtocol

log = logging.getLogger("kraft.node")

__all__ = ["ControllerRegistrationManager", "RegisteredListener", "registration_features",
           "SECURITY_PROTOCOL_IDS", "self_registration"]

#: Kafka's ``SecurityProtocol.id``.
SECURITY_PROTOCOL_IDS = {SecurityProtocol.PLAINTEXT: 0, SecurityProtocol.SSL: 1,
                         SecurityProtocol.SASL_PLAINTEXT: 2, SecurityProtocol.SASL_SSL: 3}
KRAFT_VERSION = "kraft.version"
#: How often the registration is checked against the leader's features,
#: and the retry backoff after a failure (doubling, bounded).
CHECK_S = 1.0
REFRESH_S = 30.0
MAX_BACKOFF_S = 10.0

#: ``(min, max)`` feature levels by feature name.
Features = Mapping[str, "tuple[int, int]"]


@dataclass(frozen=True, slots=True)
class RegisteredListener:
    """One controller listener as the registration names it."""

    name: str
    host: str
    port: int
    protocol: SecurityProtocol


def registration_features(leader_supported: Features, kraft_versions: tuple[int, int]) -> dict[str, tuple[int, int]]:
    """The ranges a witness registers: the leader's, but ``kraft.version``
    bounded by what kraft implements (see the module docstring)."""
    out = dict(leader_supported)
    lo, hi = kraft_versions
    theirs = out.get(KRAFT_VERSION, kraft_versions)
    out[KRAFT_VERSION] = (max(lo, theirs[0]), min(hi, theirs[1]))
    return dict(sorted(out.items()))


def self_registration(node_id: int, incarnation_id: uuid.UUID, listeners: Callable[[], Sequence[RegisteredListener]],
                      ) -> cr_req.ControllerRegistrationRequest:
    """The registration of a node that runs Kafka's controller itself
    (kraft/node/controller_server.py): its listeners and :func:`own_features`."""
    return _request(node_id, incarnation_id, listeners(), own_features())


def own_features() -> dict[str, tuple[int, int]]:
    """The features a node running Kafka's controller supports: its
    controller's, and for kraft.version what kraft's raft implements."""
    from kraft.controller.feature_control import controller_supported_features
    from kraft.node.update_features import SUPPORTED_FEATURES

    features = {**controller_supported_features(), KRAFT_VERSION: SUPPORTED_FEATURES[KRAFT_VERSION]}
    return dict(sorted(features.items()))


def _request(node_id: int, incarnation_id: uuid.UUID, listeners: Sequence[RegisteredListener],
             features: Features) -> cr_req.ControllerRegistrationRequest:
    return cr_req.ControllerRegistrationRequest(
        controller_id=node_id, incarnation_id=incarnation_id, zk_migration_ready=False,
        listeners=[cr_req.Listener(name=l.name, host=l.host, port=l.port,
                                   security_protocol=SECURITY_PROTOCOL_IDS[l.protocol]) for l in listeners],
        features=[cr_req.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                  for n, (lo, hi) in features.items()])


class ControllerRegistrationManager:
    """Registers this witness with the active Kafka controller, or this
    standby controller with the active one (see the module docstring).

    ``leader()``: the current leader's id, None when there is none;
    ``kafka_leader(id)``: whether that voter is a Kafka controller heard by
    the witness detection (and this node a witness) -- only then is there a
    QuorumController to register with; ``client(id)``: the raft connection
    to that voter, None when its address is unknown; ``registered_in_log()``:
    None when this node runs no controller of its own, else whether its
    metadata image holds this incarnation's registration."""

    def __init__(self, node_id: int, listeners: Callable[[], Sequence[RegisteredListener]], *,
                 kraft_versions: tuple[int, int], leader: Callable[[], int | None],
                 kafka_leader: Callable[[int], bool], client: Callable[[int], PeerClient | None],
                 registered_in_log: Callable[[], bool | None] = lambda: None,
                 incarnation_id: uuid.UUID | None = None,
                 sleep: Callable[[float], Awaitable[None]] = trio.sleep) -> None:
        self.node_id = node_id
        self.incarnation_id = incarnation_id or uuid.uuid4()
        self._registered_in_log = registered_in_log
        self._listeners = listeners
        self._kraft_versions = kraft_versions
        self._leader = leader
        self._kafka_leader = kafka_leader
        self._client = client
        self._sleep = sleep
        #: What was registered, and with whom (None: not yet).
        self.registered: dict[str, tuple[int, int]] | None = None
        self.registered_with: int | None = None
        self._last_problem: str | None = None

    async def run(self) -> None:
        backoff = CHECK_S
        while True:
            outcome = await self.step()
            if outcome is None:
                backoff = CHECK_S
                await self._sleep(CHECK_S if self.registered is None else REFRESH_S)
            else:
                self._report(outcome)
                await self._sleep(backoff)
                backoff = min(MAX_BACKOFF_S, backoff * 2)

    async def step(self) -> str | None:
        """Register if due; None when nothing failed (registered, or nothing
        to do yet), else the problem in an operator's words."""
        leader = self._leader()
        own = self._registered_in_log()
        if leader is None or leader == self.node_id or own is True or (own is None and not self._kafka_leader(leader)):
            return None
        client = self._client(leader)
        if client is None:
            return None
        try:
            if own is None:
                features = registration_features(await _supported_features(client), self._kraft_versions)
                if features == self.registered:
                    return None
            else:
                features = own_features()
                if features == self.registered and leader == self.registered_with:
                    return None  # acknowledged, so committed: the image follows
            error, message = await self._register(client, features)
        except (PeerClientError, KraftProtocolError) as e:
            return f"cannot reach the active controller {leader}: {e}"
        if error != ErrorCode.NONE:
            # NOT_CONTROLLER while leadership moves; UNSUPPORTED_VERSION below
            # metadata.version 3.7-IV0, which knows no controller registrations.
            return f"the active controller {leader} refused the registration: {_name(error)}" + (
                f" ({message})" if message else "")
        ranges = ", ".join(f"{name} {lo}-{hi}" for name, (lo, hi) in features.items())
        if own is None:
            log.info("kraft.witness: registered as controller %d with the active controller %d (incarnation %s; "
                     "features %s), so Kafka's feature upgrades count this witness",
                     self.node_id, leader, self.incarnation_id, ranges)
        else:
            log.info("Registered controller %d (incarnation %s; features %s) with the active controller %d.",
                     self.node_id, self.incarnation_id, ranges, leader)
        self.registered, self.registered_with = features, leader
        self._last_problem = None
        return None

    async def _register(self, client: PeerClient, features: Features) -> tuple[int, str | None]:
        request = _request(self.node_id, self.incarnation_id, self._listeners(), features)
        _, body = await client.request(ApiKey.CONTROLLER_REGISTRATION, lambda v: request, max_version=0)
        return body.error_code, body.error_message

    def _report(self, problem: str) -> None:
        if problem != self._last_problem:
            log.warning("%snot registered as a controller yet: %s; retrying (until then Kafka's controller "
                        "refuses feature upgrades: this voter has not registered)",
                        "kraft.witness: " if self._registered_in_log() is None else "", problem)
            self._last_problem = problem


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"


async def _supported_features(client: PeerClient) -> dict[str, tuple[int, int]]:
    """The SupportedFeatures of the peer's ApiVersions answer."""
    _, body = await client.request(ApiKey.API_VERSIONS, lambda v: av_req.ApiVersionsRequest(
        client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION))
    return {f.name: (f.min_version, f.max_version) for f in body.supported_features}
