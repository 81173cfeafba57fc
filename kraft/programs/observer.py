"""Observe a running KRaft quorum (Kafka's or ours) from outside: join as an
observer, replicate ``__cluster_metadata`` into a local directory in Kafka's
layout, and keep the metadata image of what is committed.

Discovery, as ``kafka-metadata-quorum.sh --bootstrap-controller`` does it
(Kafka's admin client with bootstrap controllers), trying each bootstrap
server in turn:

1. **DescribeCluster** v1-v2 with ``EndpointType`` 2 (controllers): the
   cluster id, the active controller (``ControllerId``, the raft leader) and
   every controller's endpoint on the listener we connected to;
2. **DescribeQuorum** v0-v2 to the active controller (or, when that is not
   known, the server itself): the voters (ids, directory ids), leader, epoch,
   high watermark and, in v2, every voter's listeners. An error answer
   (NOT_LEADER_OR_FOLLOWER while the leader moves) sends us on to the next
   server; rounds over all of them are retried while a quorum starts or
   elects.

A controller answers a request with a foreign cluster id with
INCONSISTENT_CLUSTER_ID, so the cluster id must be right before fetching: a
``--cluster-id`` that differs from the one the cluster reports stops the
observer with a clear message, as does a data directory formatted for
another cluster.

Then a :class:`~kraft.node.node.KraftNode` runs with a node id that is not
a voter: the raft core stays Unattached/Follower and fetches (Fetch v13+ by
topic id ``AAAAAAAAAAAAAAAAAAAAAQ`` with ``ReplicaState``/``ReplicaDirectoryId``;
FetchSnapshot when it is behind the leader's log start), never votes, and
shows up in the leader's DescribeQuorum observers. Where it looks for the
leader depends on the quorum, as for a Kafka broker: a static quorum
(``kraft.version`` 0, voters without directory ids) gives the discovered
voters as ``controller.quorum.voters``; a dynamic one (KIP-853) gives their
endpoints and the bootstrap servers as ``controller.quorum.bootstrap.servers``
-- the core asks them until a Fetch answer names the leader
(NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH with the leader's id, epoch and
endpoint), then follows the voter set in the log through reconfigurations.
The node serves no listener. Its directory is formatted on first use
(``meta.properties`` with the cluster id, the node id and a random directory
id), so a restart resumes from the local copy. The core keeps that copy a
valid prefix of the leader's log (it truncates on divergence).

Python API::

    async with open_observer(["127.0.0.1:9093"], data_dir=path) as observer:
        image = await observer.catch_up()           # at the leader's high watermark
        async for change in observer.changes(start_offset=0):
            print(change.to_json())
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import trio

from kraft.admin_client.admin import AdminError, parse_bootstrap
from kraft.admin_client.errors import UnreachableError
from kraft.controller import describe_cluster_rpc
from kraft.controller.describe_cluster_rpc import ENDPOINT_TYPE_CONTROLLER, VersionTooOld, cluster_view, describe_cluster_request
from kraft.config import ConfigError, NodeConfig
from kraft.image.builder import ImageBuilder
from kraft.image.changes import Change, LogBatch, LogItem, LogSnapshot, SnapshotChange, apply_item, changes_of
from kraft.image.model import MetadataImage
from kraft.messages.json_form import uuid_to_kafka
from kraft.node.node import KraftNode
from kraft.raft.rpcs import describe_quorum_rpc
from kraft.raft.rpcs.describe_quorum_rpc import QuorumInfo
from kraft.records.batch import iter_batches
from kraft.records.control import parse_control_type_id
from kraft.records.errors import RecordsError, StateFileError
from kraft.records.state_files import META_PROPERTIES_FILE, MetaProperties, random_kafka_uuid
from kraft.wire.addresses import format_address
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import ConnectionFailed, NoCommonVersion, PeerClient, PeerClientError, RequestTimedOut
from kraft.wire.errors import ErrorCode
from kraft.wire.security import ClientSecurity

log = logging.getLogger("kraft.observer")

__all__ = [
    "ObserverError",
    "ClusterIdMismatch",
    "DiscoveryError",
    "VoterInfo",
    "DiscoveredQuorum",
    "discover",
    "prepare_data_dir",
    "observer_config",
    "Observer",
    "open_observer",
    "default_data_dir",
    "REQUEST_VERSIONS",
    "to_log_item",
]

#: What the observer sends to a Kafka controller, api -> versions we offer
#: (the highest both sides speak is used). Fetch and FetchSnapshot are sent by
#: the raft core through the node (kraft/node/network_channel.py); see docs/tools/observe-and-shell.md.
REQUEST_VERSIONS: Mapping[str, tuple[int, int]] = {
    "ApiVersions": (0, 4),
    "DescribeCluster": (1, describe_cluster_rpc.VERSIONS[1]),
    "DescribeQuorum": (0, describe_quorum_rpc.MAX_VERSION),
    "Fetch": (13, 18),
    "FetchSnapshot": (0, 1),
}

_DISCOVERY_CLIENT_ID = "kraft-observer"
#: How often the observer looks whether its local copy can be written.
_STORAGE_WATCH_S = 0.2


class ObserverError(Exception):
    """The observer cannot start or had to stop; the message says why."""


class DiscoveryError(ObserverError):
    """No bootstrap server told us who the voters are."""


class PeersUnreachable(DiscoveryError, UnreachableError):
    """No bootstrap server answered in Kafka's protocol at all (refused,
    silent, or a listener of something else): exit status 5, as every tool
    reports a peer it cannot reach; the message names each address."""


class ClusterIdMismatch(ObserverError):
    """The cluster is not the one we were told (or formatted) to observe."""


@dataclass(frozen=True, slots=True)
class VoterInfo:
    node_id: int
    directory_id: str | None  # Kafka's base64 form; None when the quorum has none (static)
    host: str | None
    port: int | None
    listener: str | None


@dataclass(frozen=True, slots=True)
class DiscoveredQuorum:
    """What discovery learned: the DescribeCluster answer's cluster id and the
    DescribeQuorum answer (decoded as the admin client's
    :class:`~kraft.raft.rpcs.describe_quorum_rpc.QuorumInfo`), with the address chosen for
    each voter."""

    cluster_id: str | None
    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    voters: tuple[VoterInfo, ...]
    observers: tuple[int, ...]
    answered_by: tuple[str, int]
    describe_quorum_version: int

    @property
    def listener(self) -> str:
        """The controller listener name the voters are reached on."""
        for v in self.voters:
            if v.listener:
                return v.listener
        return "CONTROLLER"

    @property
    def is_dynamic(self) -> bool:
        """A KIP-853 quorum: its voters have directory ids (``kraft.version`` 1)."""
        return any(v.directory_id is not None for v in self.voters)

    def reachable_voters(self) -> list[VoterInfo]:
        return [v for v in self.voters if v.host is not None and v.port is not None]


# ---------------------------------------------------------------- discovery


async def _describe_cluster(client: PeerClient, timeout_ms: int) -> Any:
    _, body = await client.request(ApiKey.DESCRIBE_CLUSTER, describe_cluster_request(ENDPOINT_TYPE_CONTROLLER),
                                   timeout_ms=timeout_ms, max_version=REQUEST_VERSIONS["DescribeCluster"][1])
    return body


async def _describe_quorum(client: PeerClient, timeout_ms: int) -> tuple[int, Any]:
    return await client.request(ApiKey.DESCRIBE_QUORUM, describe_quorum_rpc.request, timeout_ms=timeout_ms,
                                max_version=REQUEST_VERSIONS["DescribeQuorum"][1])


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


async def discover(bootstrap: Sequence[tuple[str, int]], *, expected_cluster_id: str | None = None,
                   timeout_ms: int = 5000, retry_for_ms: int = 15000, unanswered_for_ms: int | None = None,
                   security: ClientSecurity | None = None) -> DiscoveredQuorum:
    """Ask the bootstrap servers for the cluster id and the quorum (module
    docstring), each request bounded by ``timeout_ms``; rounds over all of
    them are retried (a quorum still starting, or electing) for
    ``retry_for_ms``, or only ``unanswered_for_ms`` while no server gave
    any Kafka answer (nothing to wait for: none is a controller starting).
    Raises :class:`ClusterIdMismatch`, :class:`DiscoveryError`, or
    :class:`PeersUnreachable` when none answered in Kafka's protocol."""
    problems: list[str] = []
    #: Addresses that gave some Kafka answer (an error code is an answer).
    answered: set[tuple[str, int]] = set()
    clients: dict[tuple[str, int], PeerClient] = {}

    def client_for(host: str, port: int) -> PeerClient:
        c = clients.get((host, port))
        if c is None:
            c = clients[(host, port)] = PeerClient(host, port, client_id=_DISCOVERY_CLIENT_ID,
                                                   request_timeout_ms=timeout_ms, security=security)
        return c

    deadline = trio.current_time() + retry_for_ms / 1000
    unanswered_deadline = deadline if unanswered_for_ms is None else \
        min(deadline, trio.current_time() + unanswered_for_ms / 1000)
    try:
        round_ = 0
        while True:
            for host, port in bootstrap:
                try:
                    view = await _discover_from(client_for, host, port, timeout_ms, problems)
                except PeerClientError as e:
                    problems.append(str(e))
                    continue
                answered.add((host, port))
                if view is None:
                    continue
                if expected_cluster_id is not None and view.cluster_id is not None \
                        and view.cluster_id != expected_cluster_id:
                    raise ClusterIdMismatch(
                        f"the cluster at {host}:{port} has cluster id {view.cluster_id}, "
                        f"not {expected_cluster_id} (--cluster-id)")
                return view
            if trio.current_time() >= (deadline if answered else unanswered_deadline):
                break
            await trio.sleep(min(0.1 * 2 ** round_, 1.0, max(deadline - trio.current_time(), 0)))
            round_ += 1
    finally:
        for c in clients.values():
            await c.aclose()
    seen: list[str] = []
    for p in problems:
        if p not in seen:
            seen.append(p)
    if not answered:
        raise PeersUnreachable("no bootstrap controller answered in Kafka's protocol: " + "; ".join(seen[-6:])
                               + "; check --bootstrap-controller (a controller listener) and that it is running")
    raise DiscoveryError("no bootstrap controller described the quorum: " + "; ".join(seen[-6:]))


async def _discover_from(client_for: Any, host: str, port: int, timeout_ms: int,
                         problems: list[str]) -> DiscoveredQuorum | None:
    client = client_for(host, port)
    cluster_id: str | None = None
    controller_id = -1
    controllers: dict[int, tuple[str, int]] = {}
    try:
        dc = await _describe_cluster(client, timeout_ms)
    except (NoCommonVersion, VersionTooOld):
        dc = None  # an old controller: DescribeQuorum alone
    if dc is not None:
        if dc.error_code != 0:
            hint = " (is this a broker listener? use the controller listener)" \
                if dc.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE else ""
            problems.append(f"{host}:{port}: DescribeCluster: {_error_name(dc.error_code)}"
                            f"{': ' + dc.error_message if dc.error_message else ''}{hint}")
            return None
        view = cluster_view(dc)
        cluster_id, controller_id, controllers = view.cluster_id, view.controller_id, view.nodes
    targets: list[tuple[str, int]] = []
    if controller_id >= 0 and controller_id in controllers:
        targets.append(controllers[controller_id])
    if (host, port) not in targets:
        targets.append((host, port))
    for t_host, t_port in targets:
        try:
            version, dq = await _describe_quorum(client_for(t_host, t_port), timeout_ms)
        except NoCommonVersion as e:
            problems.append(str(e))
            continue
        except (ConnectionFailed, RequestTimedOut) as e:
            problems.append(str(e))
            continue
        answer = describe_quorum_rpc.quorum_answer(dq)
        if answer.error_code != ErrorCode.NONE:
            problems.append(f"{t_host}:{t_port}: DescribeQuorum: {_error_name(answer.error_code)}")
            continue
        if answer.partition_error_code is None:
            problems.append(f"{t_host}:{t_port}: DescribeQuorum answered for no partition")
            continue
        if answer.info is None:
            problems.append(f"{t_host}:{t_port}: DescribeQuorum: {_error_name(answer.partition_error_code)}")
            continue
        return _view(answer.info, version, controllers, cluster_id, (t_host, t_port))
    return None


def _view(info: QuorumInfo, version: int, controllers: Mapping[int, tuple[str, int]], cluster_id: str | None,
          answered_by: tuple[str, int]) -> DiscoveredQuorum:
    # The listener name of the address that answered: the one to use for all.
    listener_name = None
    for node_listeners in info.nodes.values():
        for node_listener, node_host, node_port in node_listeners:
            if (node_host, node_port) == answered_by:
                listener_name = node_listener
    voters = []
    for v in info.voters:
        host: str | None = None
        port: int | None = None
        name: str | None = None
        listeners = info.nodes.get(v.replica_id, ())
        chosen = next((x for x in listeners if x[0] == listener_name), listeners[0] if listeners else None)
        if chosen is not None:
            name, host, port = chosen
        elif v.replica_id in controllers:
            host, port = controllers[v.replica_id]
        elif v.replica_id == info.leader_id:
            host, port = answered_by
        directory = v.directory_id
        voters.append(VoterInfo(v.replica_id, uuid_to_kafka(directory) if directory.int else None, host, port,
                                name or listener_name))
    return DiscoveredQuorum(
        cluster_id=cluster_id,
        leader_id=info.leader_id if info.leader_id >= 0 else None,
        leader_epoch=info.leader_epoch,
        high_watermark=info.high_watermark,
        voters=tuple(voters),
        observers=tuple(o.replica_id for o in info.observers),
        answered_by=answered_by,
        describe_quorum_version=version,
    )


# ---------------------------------------------------------------- local directory


def prepare_data_dir(data_dir: Path, cluster_id: str, node_id: int | None) -> MetaProperties:
    """Format ``data_dir`` on first use; on later runs check it belongs to
    this cluster. Returns its ``meta.properties``."""
    data_dir = Path(data_dir)
    meta_path = data_dir / META_PROPERTIES_FILE
    if meta_path.exists():
        try:
            meta = MetaProperties.read(meta_path)
        except StateFileError as e:
            raise ObserverError(f"cannot use {data_dir}: {e}") from None
        if meta.cluster_id != cluster_id:
            raise ClusterIdMismatch(
                f"{data_dir} holds a copy of cluster {meta.cluster_id}, but the cluster observed is {cluster_id}: "
                "use another --data-dir")
        if node_id is not None and meta.node_id != node_id:
            raise ObserverError(f"{data_dir} was formatted for node id {meta.node_id}, not {node_id}")
        if meta.directory_id is None:
            raise ObserverError(f"{meta_path} has no directory.id")
        return meta
    if data_dir.exists() and any(data_dir.iterdir()):
        raise ObserverError(f"{data_dir} is not empty and has no meta.properties: refusing to use it")
    data_dir.mkdir(parents=True, exist_ok=True)
    if node_id is None:
        # Far above the ids people give brokers and controllers.
        node_id = random.randint(1_000_000_000, 2**31 - 1)
    meta = MetaProperties(1, cluster_id, node_id, random_kafka_uuid())
    meta.write(meta_path)
    log.info("formatted %s for cluster %s as observer node %d", data_dir, cluster_id, node_id)
    return meta


def observer_config(view: DiscoveredQuorum, data_dir: Path, node_id: int,
                    properties: Mapping[str, str] | None = None,
                    bootstrap: Sequence[tuple[str, int]] = ()) -> NodeConfig:
    """A node config for an observer of ``view``'s quorum (no listeners).

    A static quorum (``kraft.version`` 0: voters without directory ids) gets
    its voters as ``controller.quorum.voters``, as a Kafka 3.7+ broker has
    them. A dynamic one (KIP-853) gets ``controller.quorum.bootstrap.servers``
    -- the voters' endpoints and the given bootstrap servers -- and reads the
    voter set from the log as it changes, as a Kafka 3.9+ broker does."""
    voters = view.reachable_voters()
    if not voters:
        raise DiscoveryError("the quorum's voters have no known endpoints")
    if any(v.node_id == node_id for v in view.voters):
        raise ObserverError(f"node id {node_id} is a voter of the cluster: an observer needs an id that is not")
    listener = view.listener
    props = {
        # Kafka's observer of the metadata quorum is a broker (KafkaConfig.validateValues).
        "process.roles": "broker",
        "node.id": str(node_id),
        "listeners": f"{listener}://127.0.0.1:0",
        "controller.listener.names": listener,
        "listener.security.protocol.map": f"{listener}:PLAINTEXT",
        "metadata.log.dir": str(data_dir),
        # An observer never asks to join the voters (KIP-853 auto-join).
        "controller.quorum.auto.join.enable": "false",
    }
    # (reachable_voters: each has a host and a port)
    endpoints = [(v.node_id, v.host, v.port) for v in voters if v.host is not None and v.port is not None]
    if view.is_dynamic:
        servers: list[tuple[str, int]] = []
        for address in [(h, p) for _, h, p in endpoints] + list(bootstrap):
            if address not in servers:
                servers.append(address)
        props["controller.quorum.bootstrap.servers"] = ",".join(format_address(h, p) for h, p in servers)
    else:
        props["controller.quorum.voters"] = ",".join(f"{i}@{format_address(h, p)}" for i, h, p in endpoints)
    props.update(properties or {})
    try:
        config = NodeConfig.from_properties(props)
    except ConfigError as e:
        raise ObserverError(str(e)) from None
    # An observer answers nobody: it fetches and that is all.
    return replace(config, listeners=())


# ---------------------------------------------------------------- the observer


def to_log_item(item: Any) -> LogItem:
    """The node's listener items as the image's log items."""
    if hasattr(item, "snapshot_id"):
        return LogSnapshot(item.snapshot_id, tuple(item.records), getattr(item, "last_contained_log_timestamp", -1))
    return LogBatch(item.base_offset, item.last_offset, item.epoch, item.append_time_ms, item.is_control,
                    tuple(item.records))


class Observer:
    """One observer of one cluster. :meth:`run` (in a nursery, with
    ``nursery.start``) discovers, prepares the directory and follows."""

    def __init__(self, bootstrap: str | Sequence[str] | Sequence[tuple[str, int]], *, data_dir: Path | None = None,
                 cluster_id: str | None = None,
                 node_id: int | None = None, properties: Mapping[str, str] | None = None,
                 quorum: Mapping[str, int] | None = None,
                 discovery_timeout_ms: int = 5000, discovery_retry_ms: int = 15000,
                 discovery_unanswered_ms: int | None = None,
                 cluster_check_s: float = 15.0, client_security: ClientSecurity | None = None) -> None:
        if isinstance(bootstrap, str) or any(isinstance(b, str) for b in bootstrap):
            try:
                self.bootstrap = list(parse_bootstrap(bootstrap, "--bootstrap-controller"))  # type: ignore[arg-type]
            except AdminError as e:
                raise ObserverError(str(e)) from None
        else:
            self.bootstrap = [(str(b[0]), int(b[1])) for b in bootstrap]
        #: ``None``: :func:`default_data_dir` of the cluster, once its id is known.
        self.data_dir = None if data_dir is None else Path(data_dir)
        self.expected_cluster_id = cluster_id
        self.requested_node_id = node_id
        self.properties = dict(properties or {})
        #: TLS / SASL for every connection the observer makes (None: PLAINTEXT).
        self.client_security = client_security
        #: :class:`~kraft.raft.quorum_config.QuorumConfig` fields to replace: knobs
        #: Kafka has no property for (``fetch_snapshot_max_bytes``).
        self.quorum = dict(quorum or {})
        self.discovery_timeout_ms = discovery_timeout_ms
        self.discovery_retry_ms = discovery_retry_ms
        #: Give up sooner while no bootstrap server answers in Kafka's protocol.
        self.discovery_unanswered_ms = discovery_unanswered_ms
        #: With nothing committed for this long, ask the bootstrap servers
        #: for the cluster id again (:meth:`_watch_cluster`).
        self.cluster_check_s = cluster_check_s
        self.view: DiscoveredQuorum | None = None
        self.cluster_id: str | None = None
        self.node_id: int | None = None
        #: The embedded node, once :meth:`run` started it.
        self.node: KraftNode | None = None
        self.builder = ImageBuilder()
        #: The latest image, safe to read from another thread (replaced, never changed).
        self.published: MetadataImage = self.builder.image
        self.image_changed = trio.Condition()
        self.stopped = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._config: NodeConfig | None = None

    @property
    def image(self) -> MetadataImage:
        """The image as of the last committed record applied."""
        return self.builder.image

    # ------------------------------------------------------------ running

    async def prepare(self) -> NodeConfig:
        """Discover the quorum, check the cluster id, format or check the
        data directory; the node config to run with. :meth:`run` calls it
        if it was not called before (call it first to get its errors
        outside any nursery)."""
        if self._config is not None:
            return self._config
        self.view = view = await discover(self.bootstrap, expected_cluster_id=self.expected_cluster_id,
                                          timeout_ms=self.discovery_timeout_ms,
                                          retry_for_ms=self.discovery_retry_ms,
                                          unanswered_for_ms=self.discovery_unanswered_ms, security=self.client_security)
        cluster_id = view.cluster_id or self.expected_cluster_id
        if cluster_id is None:
            raise ObserverError("the cluster did not report its cluster id (DescribeCluster is not supported): "
                                "pass --cluster-id")
        if self.requested_node_id is not None and any(v.node_id == self.requested_node_id for v in view.voters):
            raise ObserverError(f"node id {self.requested_node_id} is a voter of the cluster: "
                                "an observer needs an id that is not")
        self.cluster_id = cluster_id
        if self.data_dir is None:
            self.data_dir = default_data_dir(cluster_id)
        meta = await trio.to_thread.run_sync(prepare_data_dir, self.data_dir, cluster_id, self.requested_node_id)
        assert meta.node_id is not None
        self.node_id = meta.node_id
        config = observer_config(view, self.data_dir, meta.node_id, self.properties, self.bootstrap)
        if self.quorum:
            try:
                config = replace(config, quorum=replace(config.quorum, **self.quorum))
            except (TypeError, ValueError) as e:
                raise ObserverError(f"quorum settings {self.quorum}: {e}") from None
        self._config = config
        log.info("observing cluster %s as node %d: voters %s, leader %s in epoch %d, high watermark %d",
                 cluster_id, meta.node_id, ", ".join(f"{v.node_id}@{v.host}:{v.port}" for v in view.voters),
                 view.leader_id, view.leader_epoch, view.high_watermark)
        return self._config

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        config = await self.prepare()
        self.node = node = KraftNode(config, client_security=self.client_security)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(node.run)
                nursery.start_soon(self._follow, node, nursery)
                nursery.start_soon(self._watch_storage)
                nursery.start_soon(self._watch_cluster)
                task_status.started()
        finally:
            self.stopped.set()

    async def _follow(self, node: KraftNode, nursery: trio.Nursery) -> None:
        """Fold every committed item into the image."""
        try:
            async for item in node.committed_batches():
                apply_item(self.builder, to_log_item(item))
                self.published = self.builder.image
                async with self.image_changed:
                    self.image_changed.notify_all()
        finally:
            nursery.cancel_scope.cancel()

    async def _watch_storage(self) -> None:
        """Say what a full (or failing) disk means for the observer, once
        per episode: the raft driver logs the failed write and retries it with a
        backoff; meanwhile the copy stays a prefix of the leader's log, the
        image stays where it is and is still served."""
        failing = False
        while True:
            await trio.sleep(_STORAGE_WATCH_S)
            error = self.storage_error
            if error is not None and not failing:
                log.error("the local copy in %s cannot be written (%s): the image stays at offset %d and is "
                          "still served; copying resumes when the disk has room again",
                          self.data_dir, error, self.builder.offset)
            elif error is None and failing:
                log.warning("the local copy in %s is written again: catching up", self.data_dir)
            failing = error is not None

    async def _watch_cluster(self) -> None:
        """Stop when the cluster at the bootstrap addresses is another one.

        While records commit, the cluster id is proven: the leader checks it
        on every Fetch. A cluster re-formatted (or replaced) under the same
        addresses answers each Fetch with INCONSISTENT_CLUSTER_ID, which the
        raft core just retries, so the observer would wait forever without a
        word. When nothing committed for :attr:`cluster_check_s`, ask the
        bootstrap servers again (DescribeCluster); another cluster id stops
        the observer with :class:`ClusterIdMismatch`. Nobody answering is
        not an error: the cluster may be restarting."""
        last = self.high_watermark
        while True:
            await trio.sleep(self.cluster_check_s)
            hwm = self.high_watermark
            if hwm != last:
                last = hwm
                continue
            try:
                view = await discover(self.bootstrap, timeout_ms=self.discovery_timeout_ms, retry_for_ms=0,
                                      security=self.client_security)
            except DiscoveryError as e:
                log.info("cluster check: %s", e)
                continue
            if view.cluster_id is not None and view.cluster_id != self.cluster_id:
                raise ClusterIdMismatch(
                    f"the cluster at {view.answered_by[0]}:{view.answered_by[1]} now has cluster id "
                    f"{view.cluster_id}, not {self.cluster_id} (the one observed): it was re-formatted or "
                    f"replaced; {self.data_dir} keeps the copy of {self.cluster_id}")

    @property
    def storage_error(self) -> OSError | None:
        """The disk error that stops the local copy from growing (full disk,
        I/O error), or None while writes work."""
        return None if self.node is None else self.node.storage_error

    async def shutdown(self) -> None:
        if self.node is not None:
            await self.node.shutdown()
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ reading

    @property
    def high_watermark(self) -> int:
        return -1 if self.node is None or not self.node.running else self.node.high_watermark

    async def wait_for_offset(self, offset: int) -> MetadataImage:
        """The image once it contains ``offset`` (or a later one)."""
        async with self.image_changed:
            while self.builder.offset < offset:
                await self.image_changed.wait()
        return self.image

    async def catch_up(self) -> MetadataImage:
        """The image once it reaches the leader's high watermark as it was at
        discovery (everything committed before we started)."""
        assert self.view is not None
        target = self.view.high_watermark - 1
        if target < 0:
            await self._wait_high_watermark()
            target = self.high_watermark - 1
        return await self.wait_for_offset(target)

    async def _wait_high_watermark(self) -> None:
        while self.node is None or not self.node.running:
            await trio.sleep(0.01)
        await self.node.wait_high_watermark()

    async def latest_offset(self) -> int:
        """The first offset not committed when we started (``--from-latest``)."""
        assert self.view is not None
        if self.view.high_watermark >= 0:
            return self.view.high_watermark
        await self._wait_high_watermark()
        return self.high_watermark

    async def changes(self, start_offset: int | None = 0) -> AsyncIterator[Change | SnapshotChange]:
        """Every committed record from ``start_offset`` on, as it commits
        (``None``: a new listener, the latest snapshot first). A start below
        the local log start begins with a snapshot load."""
        while self.node is None or not self.node.running:
            await trio.sleep(0.01)
        node = self.node
        source = node.committed_batches() if start_offset is None else node.committed_batches(start_offset)
        async for item in source:
            log_item = to_log_item(item)
            if isinstance(log_item, LogBatch) and log_item.is_control:
                log_item = await self._with_control_types(node, log_item)
            for change in changes_of(log_item):
                if isinstance(change, Change) and start_offset is not None and change.offset < start_offset:
                    continue
                yield change

    async def _with_control_types(self, node: KraftNode, batch: LogBatch) -> LogBatch:
        """Listeners get control values without their keys; read the types
        from the local log (best effort: retention may have removed it)."""
        try:
            data = await node.read_log(batch.base_offset, 1 << 16)
            if data is None:
                return batch
            raw = next(iter_batches(data), None)
            if raw is None or raw.base_offset != batch.base_offset:
                return batch
            types = tuple(parse_control_type_id(r.key) for r in raw.records())
        except (RecordsError, OSError, ValueError):
            return batch
        return replace(batch, control_types=types)


def default_data_dir(cluster_id: str) -> Path:
    """``$XDG_STATE_HOME/kraft/observer/<cluster id>`` (``~/.local/state`` by default)."""
    import os

    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kraft" / "observer" / cluster_id


@asynccontextmanager
async def open_observer(bootstrap: str | Sequence[str] | Sequence[tuple[str, int]], *, data_dir: Path | None = None,
                        **options: Any) -> AsyncIterator[Observer]:
    """Start an :class:`Observer` in a nursery of its own; stops it on exit."""
    observer = Observer(bootstrap, data_dir=data_dir, **options)
    await observer.prepare()  # its errors reach the caller as they are
    async with trio.open_nursery() as nursery:
        await nursery.start(observer.run)
        try:
            yield observer
        finally:
            await observer.shutdown()
            nursery.cancel_scope.cancel()
