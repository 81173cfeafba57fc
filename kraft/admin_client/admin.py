"""The admin client of the quorum tools: what Kafka's ``KafkaAdminClient``
does for ``kafka-metadata-quorum.sh`` and ``kafka-features.sh``, over our
wire client. It finds the leader (DescribeCluster to the bootstrap
addresses), describes the quorum (DescribeQuorum), and sends voter changes
(AddRaftVoter, RemoveRaftVoter) and other requests to the leader -- each
request bounded by ``request.timeout.ms``, all of them by the session's
``default.api.timeout.ms``, retried every ``retry.backoff.ms`` while the
leader is unknown or moves.

This module is the transport's part: which node to ask, the deadlines, the
retries. Each RPC's request, version and reading of the answer are its
unit's, which this module calls: DescribeQuorum's
(:mod:`kraft.raft.rpcs.describe_quorum_rpc`, with the one model
:class:`QuorumInfo` / :class:`ReplicaInfo`, re-exported here),
AddRaftVoter's and RemoveRaftVoter's (:mod:`kraft.raft.rpcs`), DescribeCluster's
(:mod:`kraft.controller.describe_cluster_rpc`, :class:`ClusterView`) and
UnregisterController's (:mod:`kraft.controller.controller_unregistration`).
Output formatting and the click commands
are in ``kraft.tools`` (:mod:`kraft.tools.quorum`, :mod:`kraft.tools.features`).

Python API::

    bootstrap = Bootstrap(parse_bootstrap("127.0.0.1:9093", "bootstrap.controllers"), ENDPOINT_TYPE_CONTROLLER)
    async with AdminSession(bootstrap, AdminSettings()) as session:
        cluster_id, info = await session.describe_quorum()

Failures are :class:`AdminError`: one line, said as Kafka's tools say it.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import trio

from kraft.admin_client.errors import AdminError, RefusedError, UnreachableError
from kraft.controller import controller_unregistration, describe_cluster_rpc
from kraft.messages.errors import KraftProtocolError
from kraft.controller.describe_cluster_rpc import (
    ENDPOINT_TYPE_BROKER,
    ENDPOINT_TYPE_CONTROLLER,
    ENDPOINT_TYPE_NAMES,
    ClusterView,
    VersionTooOld,
    cluster_view,
    describe_cluster_request,
)
from kraft.raft.events import RaftRequest
from kraft.raft.rpcs import (AddRaftVoterResponse, RemoveRaftVoterResponse, add_raft_voter_rpc, describe_quorum_rpc,
                             remove_raft_voter_rpc)
from kraft.raft.rpcs.rpc_unit import RegisteredRpc
from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo, ReplicaInfo, quorum_info
from kraft.wire.addresses import InvalidAddress, parse_addresses
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import ConnectionFailed, NoCommonVersion, PeerClient, PeerClientError, RequestTimedOut
from kraft.wire.errors import ErrorCode
from kraft.wire.security import ClientSecurity

__all__ = [
    "AdminError",
    "Bootstrap",
    "AdminSettings",
    "AdminSession",
    "ClusterView",
    "cluster_view",
    "ReplicaInfo",
    "QuorumInfo",
    "ControllerIdentity",
    "quorum_info",
    "parse_bootstrap",
    "error_text",
    "unsupported",
    "VoterChange",
    "send_voter_change",
    "voter_change_until_done",
    "add_voter_request",
    "remove_voter_request",
    "unregister_controller",
    "ENDPOINT_TYPE_BROKER",
    "ENDPOINT_TYPE_CONTROLLER",
    "DEFAULT_API_TIMEOUT_MS",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "RETRY_BACKOFF_MS",
]

#: The bound on a whole command (Kafka's ``default.api.timeout.ms`` is
#: 60000; a tool that cannot reach its quorum should say so sooner).
DEFAULT_API_TIMEOUT_MS = 10_000
#: The bound on one request, connecting included.
DEFAULT_REQUEST_TIMEOUT_MS = 5_000
#: Kafka's ``retry.backoff.ms``: the pause before asking again.
RETRY_BACKOFF_MS = 100

T = TypeVar("T")


# ---------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """Where to start: addresses and which kind of node they are."""

    addresses: tuple[tuple[str, int], ...]
    #: ``ENDPOINT_TYPE_CONTROLLER`` (``--bootstrap-controller``) or
    #: ``ENDPOINT_TYPE_BROKER`` (``--bootstrap-server``).
    endpoint_type: int

    @property
    def kind(self) -> str:
        return "controllers" if self.endpoint_type == ENDPOINT_TYPE_CONTROLLER else "servers"


@dataclass(frozen=True, slots=True)
class AdminSettings:
    """The admin client settings the tool honours (from ``--command-config``)."""

    api_timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    client_id: str = "kraft-quorum"
    #: security.protocol, sasl.*, ssl.* (None: PLAINTEXT).
    security: ClientSecurity | None = None


def parse_bootstrap(text: str | Sequence[str], config_key: str) -> tuple[tuple[str, int], ...]:
    """A bootstrap list as every client takes it (``--bootstrap-controller``,
    ``--bootstrap-server``, the observer's): Kafka's
    ``ClientUtils.parseAndValidateAddresses`` (the one parser,
    :func:`kraft.wire.addresses.parse_addresses`), an option given once or
    more (``text`` a sequence) joined as one list; :class:`AdminError` on a
    bad list, naming ``config_key``."""
    try:
        return parse_addresses(text if isinstance(text, str) else ",".join(text), config_key)
    except InvalidAddress as e:
        raise AdminError(str(e)) from None


# ---------------------------------------------------------------- errors


def error_text(code: int, message: str | None) -> str:
    name = ErrorCode.name_of(code)
    return f"{name}: {message}" if message else name


def unsupported(e: NoCommonVersion) -> RefusedError:
    """The peer speaks no version of the api: UNSUPPORTED_VERSION, with
    Kafka's message (``NodeApiVersions.latestUsableVersion``) when it does
    not list the api at all, as a release older than the api answers."""
    message = f"The node does not support {e.api_key.name}" if e.theirs is None else str(e)
    return RefusedError(str(e), ErrorCode.UNSUPPORTED_VERSION, message)


# ---------------------------------------------------------------- talking to the quorum


class AdminSession:
    """The requests a quorum tool makes, each bounded by ``request.timeout.ms``
    and all of them by the command's deadline (``default.api.timeout.ms``,
    counted from the session's start). Use as ``async with``."""

    def __init__(self, bootstrap: Bootstrap, settings: AdminSettings) -> None:
        self.bootstrap = bootstrap
        self.settings = settings
        self._clients: dict[tuple[str, int], PeerClient] = {}
        self._deadline = 0.0

    async def __aenter__(self) -> AdminSession:
        self._deadline = trio.current_time() + self.settings.api_timeout_ms / 1000
        return self

    async def __aexit__(self, *exc: object) -> None:
        with trio.CancelScope(shield=True):
            for client in self._clients.values():
                await client.aclose()

    def _client(self, address: tuple[str, int]) -> PeerClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = PeerClient(
                *address, client_id=self.settings.client_id,
                request_timeout_ms=self.settings.request_timeout_ms,
                connect_timeout_ms=self.settings.request_timeout_ms, security=self.settings.security)
        return client

    def _remaining_ms(self) -> int:
        return max(0, int((self._deadline - trio.current_time()) * 1000))

    async def request(self, address: tuple[str, int], api: ApiKey, build: Callable[[int], Any],
                      max_version: int | None = None) -> tuple[int, Any]:
        """One request to ``address``; raises :class:`PeerClientError` (or
        :class:`VersionTooOld` from ``build``)."""
        timeout = min(self.settings.request_timeout_ms, self._remaining_ms())
        if timeout <= 0:
            raise RequestTimedOut(*address, api, 0)
        return await self._client(address).request(api, build, timeout_ms=timeout, max_version=max_version)

    async def quorum_answer(self, address: tuple[str, int]) -> tuple[int, describe_quorum_rpc.QuorumAnswer]:
        """DescribeQuorum to ``address`` (whichever node it is, leader or
        not): the version used and the answer as its unit reads it; raises
        :class:`PeerClientError`."""
        version, body = await self.request(address, ApiKey.DESCRIBE_QUORUM, describe_quorum_rpc.request,
                                           max_version=describe_quorum_rpc.MAX_VERSION)
        return version, describe_quorum_rpc.quorum_answer(body)

    async def describe_cluster(self) -> ClusterView:
        """DescribeCluster to the bootstrap addresses, in order, until one
        answers. Raises :class:`AdminError` when none can be reached or one
        answers with an error."""
        endpoint_type = self.bootstrap.endpoint_type
        build = describe_cluster_request(endpoint_type)

        failures = []
        for address in self.bootstrap.addresses:
            try:
                version, body = await self.request(address, ApiKey.DESCRIBE_CLUSTER, build,
                                                   max_version=describe_cluster_rpc.VERSIONS[1])
            except (PeerClientError, KraftProtocolError) as e:
                failures.append(str(e))
                continue
            except VersionTooOld as e:
                raise AdminError(f"{address[0]}:{address[1]}: {e} (the node is too old for --bootstrap-controller)")
            if body.error_code != ErrorCode.NONE:
                raise AdminError(f"DescribeCluster to {address[0]}:{address[1]} failed: "
                                f"{error_text(body.error_code, body.error_message)}")
            got = body.endpoint_type if version >= 1 else ENDPOINT_TYPE_BROKER
            if got != endpoint_type:
                # Kafka's KafkaAdminClient.parseDescribeClusterResponse.
                raise AdminError(f"MISMATCHED_ENDPOINT_TYPE: expected {ENDPOINT_TYPE_NAMES[endpoint_type]} "
                                f"endpoints, got {ENDPOINT_TYPE_NAMES.get(got, got)} from {address[0]}:{address[1]}")
            return cluster_view(body)
        raise UnreachableError(f"Cannot reach any of the bootstrap {self.bootstrap.kind}: " + "; ".join(failures))

    async def until_deadline(self, what: str, attempt: Callable[[], Awaitable[T | str]]) -> T:
        """Call ``attempt`` until it returns a result, every
        :data:`RETRY_BACKOFF_MS` while it returns a string (why it must be
        retried), until the command's deadline."""
        reason = "no attempt finished"
        with trio.move_on_at(self._deadline):
            while True:
                outcome = await attempt()
                if not isinstance(outcome, str):
                    return outcome
                reason = outcome
                await trio.sleep(RETRY_BACKOFF_MS / 1000)
        raise AdminError(f"Timed out after {self.settings.api_timeout_ms} ms waiting for {what}: {reason}")

    async def send_to_leader(self, api: ApiKey, build: Callable[[int], Any],
                             max_version: int | None = None) -> tuple[ClusterView, int, Any] | str:
        """Find the leader (DescribeCluster) and send it one request: the
        view, the version used and the response body -- or, when there is no
        leader to send to or it cannot be reached, the reason as a string
        (for :meth:`until_deadline`)."""
        view = await self.describe_cluster()
        address = view.leader_address
        if address is None:
            return "no leader is known for the metadata quorum (controllerId -1)"
        try:
            version, body = await self.request(address, api, build, max_version)
        except NoCommonVersion as e:
            raise unsupported(e) from None
        except (ConnectionFailed, RequestTimedOut, KraftProtocolError) as e:
            return f"leader {view.controller_id} at {address[0]}:{address[1]}: {e}"
        return view, version, body

    async def describe_quorum(self) -> tuple[str, QuorumInfo]:
        """The cluster id and the leader's DescribeQuorum answer, retried
        while the leader is unknown or moves."""

        async def attempt() -> tuple[str, QuorumInfo] | str:
            sent = await self.send_to_leader(ApiKey.DESCRIBE_QUORUM, describe_quorum_rpc.request,
                                             max_version=describe_quorum_rpc.MAX_VERSION)
            if isinstance(sent, str):
                return sent
            view, _, body = sent
            answer = describe_quorum_rpc.quorum_answer(body)
            if answer.error_code != ErrorCode.NONE:
                raise AdminError(f"DescribeQuorum failed: {error_text(answer.error_code, answer.error_message)}")
            if answer.partition_error_code is None:
                raise AdminError("DescribeQuorum answer does not describe exactly one partition")
            if answer.partition_error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                return f"node {view.controller_id} answered NOT_LEADER_OR_FOLLOWER (the leader moved)"
            if answer.info is None:
                raise AdminError(f"DescribeQuorum failed: "
                                f"{error_text(answer.partition_error_code, answer.partition_error_message)}")
            return view.cluster_id, answer.info

        return await self.until_deadline("the metadata quorum's leader", attempt)


#: Errors after which the admin client tries again until its deadline (Kafka's
#: admin client retries RetriableExceptions: REQUEST_TIMED_OUT is one, and a
#: moved leader is found again).
RETRIABLE_VOTER_ERRORS = frozenset({
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.NOT_CONTROLLER,
})


@dataclass(frozen=True, slots=True)
class ControllerIdentity:
    """What add-controller reads from the new controller's own configuration
    (``--command-config``) and its ``meta.properties``."""

    node_id: int
    directory_id: uuid.UUID
    endpoints: tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class VoterChange:
    """One voter change an admin client sends: the RPC unit (AddRaftVoter's,
    RemoveRaftVoter's) that writes the request and reads the answer, and the
    request (the unit's own class) for the cluster id the leader names."""

    rpc: RegisteredRpc
    request: Callable[[str], RaftRequest]


async def send_voter_change(session: AdminSession, change: VoterChange) -> tuple[int, str | None]:
    """Send AddRaftVoter / RemoveRaftVoter to the leader once, at most the
    unit's newest version: (error code, message). Where there is no leader
    to send it to, the reason as the message and
    ``ErrorCode.NOT_LEADER_OR_FOLLOWER``."""
    view = await session.describe_cluster()
    address = view.leader_address
    if address is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, "no leader is known for the metadata quorum (controllerId -1)"
    rpc = change.rpc
    try:
        version, body = await session.request(address, rpc.api_key,
                                              lambda v: rpc.write_request(change.request(view.cluster_id), v),
                                              max_version=rpc.versions[1])
    except NoCommonVersion as e:
        raise unsupported(e) from None
    except (ConnectionFailed, RequestTimedOut, KraftProtocolError) as e:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, f"leader {view.controller_id} at {address[0]}:{address[1]}: {e}"
    answer = rpc.read_response(version, body)
    assert isinstance(answer, (AddRaftVoterResponse, RemoveRaftVoterResponse))
    return int(answer.error), answer.error_message


async def voter_change_until_done(session: AdminSession, what: str, change: VoterChange) -> None:
    """One voter change, retried as Kafka's admin client retries it; raises
    :class:`AdminError` with Kafka's error name and message on a refusal."""

    async def attempt() -> bool | str:
        code, message = await send_voter_change(session, change)
        if code == ErrorCode.NONE:
            return True
        if code in RETRIABLE_VOTER_ERRORS:
            return error_text(code, message)
        raise RefusedError(error_text(code, message), code, message or ErrorCode.name_of(code))

    await session.until_deadline(what, attempt)


async def unregister_controller(session: AdminSession, controller_id: int) -> None:
    """UnregisterController (KIP-1312) to the active controller, as Kafka's
    ``KafkaAdminClient.unregisterController`` sends it, retried while the
    leader moves; a refusal raises :class:`RefusedError` with the answer's
    message (``UNSUPPORTED_VERSION`` and Kafka's wording when the
    controller does not list the api: a release before 4.4, or kraft's node)."""
    async def attempt() -> bool | str:
        sent = await session.send_to_leader(ApiKey.UNREGISTER_CONTROLLER,
                                            controller_unregistration.request(controller_id),
                                            max_version=controller_unregistration.VERSIONS[1])
        if isinstance(sent, str):
            return sent
        _, _, body = sent
        if body.error_code == ErrorCode.NONE:
            return True
        if body.error_code in RETRIABLE_VOTER_ERRORS:
            return error_text(body.error_code, body.error_message)
        raise RefusedError(error_text(body.error_code, body.error_message), body.error_code,
                           body.error_message or ErrorCode.name_of(body.error_code))

    await session.until_deadline(f"controller {controller_id} to be unregistered", attempt)


def add_voter_request(identity: ControllerIdentity, timeout_ms: int) -> VoterChange:
    """AddRaftVoter of the controller ``identity`` (its unit's :func:`~kraft.raft.rpcs.add_raft_voter_rpc.admin_request`)."""
    return VoterChange(add_raft_voter_rpc.RPC, lambda cluster_id: add_raft_voter_rpc.admin_request(
        cluster_id, identity.node_id, identity.directory_id, identity.endpoints, timeout_ms))


def remove_voter_request(node_id: int, directory_id: uuid.UUID) -> VoterChange:
    """RemoveRaftVoter of ``node_id`` (its unit's :func:`~kraft.raft.rpcs.remove_raft_voter_rpc.admin_request`)."""
    return VoterChange(remove_raft_voter_rpc.RPC,
                       lambda cluster_id: remove_raft_voter_rpc.admin_request(cluster_id, node_id, directory_id))
