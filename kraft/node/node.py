"""A KRaft node: the raft shell, the metadata log, the controller listener
and the peer connections, assembled from a :class:`~kraft.config.NodeConfig`.

Python API::

    node = KraftNode(NodeConfig.load(path))
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        offset = await node.append([b"record"])     # leader only; waits for commit
        position = node.append_nowait([b"r"])        # pipelined: many outstanding
        await node.wait_committed(position)
        async for item in node.committed_batches(until=offset): # the latest snapshot
            ...                                      # (SnapshotLoaded) if any, then every committed
                                                     # batch in order; ends once `until` is delivered
        await node.create_snapshot(offset, state)    # your state as of a committed offset
        await node.shutdown()                        # a leader hands over first
"""

from __future__ import annotations

import logging
import random
import time
from contextlib import aclosing
import uuid
from functools import partial
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, overload

import trio

from kraft.raft import events as ev
from kraft.config import NodeConfig
from kraft.dirlock import DirectoryLock
from kraft.errors import ConfigurationError, NetworkError, StorageError
from kraft.raft.core import RaftCore
from kraft.raft.errors import Errors, LocalRaftError, NotLeaderError
from kraft.node import admin, features, rpc
from kraft.node import snapshots
from kraft.node import authorizer, credentials
from kraft.node.fault import FaultHandler
from kraft.node.shell import ElectionStateStore, RaftShell
from kraft.node.witness import PeerAnswer, WitnessDetector, scan_for_kafka_metadata
from kraft.raft.witness import WitnessDecision, WitnessPolicy
from kraft.messages.errors import KraftProtocolError
from kraft.messages.generated import api_versions_request as av_req
from kraft.messages.generated import describe_cluster_request as dc_req
from kraft.messages.generated.api_versions_response import ApiVersionsResponse
from kraft.node.snapshots import CommittedBatch, SnapshotLoaded
from kraft.node.leader_changes import LeaderChanged
from kraft.node.cluster_ids import INCONSISTENT_CLUSTER_ID, ClusterIdWatch, describe_cluster_asker
from kraft.node.metrics import RaftMetrics, event_error, error_name, request_name, wire_error
from kraft.records.errors import CorruptLogError, StateFileError
from kraft.node.remedies import corruption_remedy
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.state_files import MetaProperties, QuorumStateFile
from kraft.records.view import OffsetAndEpoch
from kraft.raft.roles import LeaderAndEpoch
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.wire.apis import ApiKey
from kraft.wire.client import (
    CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION,
    ClientPool,
    ConnectionFailed,
    NoCommonVersion,
    PeerClient,
    PeerClientError,
    RequestTimedOut,
)
from kraft.wire.server import CloseConnection, ConnectionInfo, Response, serve_listener
from kraft.wire.limits import ConnectionTracker
from kraft.wire.not_controller import REFUSED_CONTROLLER_APIS
from kraft.wire.security import ClientSecurity

log = logging.getLogger("kraft.node")

__all__ = ["KraftNode", "NodeStartError", "CommittedBatch", "SnapshotLoaded"]

#: The APIs a kraft controller listener answers, with the versions we speak.
SUPPORTED_APIS: dict[ApiKey | int, tuple[int, int]] = {
    ApiKey.FETCH: (4, 18),
    ApiKey.API_VERSIONS: (0, 4),
    # SASL (kraft/wire/sasl.py). Advertised from v0 as Kafka does (librdkafka
    # requires it), but only v1 (KIP-152 framing) is served: a v0 handshake
    # is refused. On a listener without SASL both get ILLEGAL_SASL_STATE.
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.VOTE: (0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
    ApiKey.END_QUORUM_EPOCH: (0, 1),
    ApiKey.FETCH_SNAPSHOT: (0, 1),
    # The admin surface (kraft/node/admin.py).
    ApiKey.METADATA: (0, 13),
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.DESCRIBE_CLUSTER: (0, 2),
    ApiKey.UPDATE_FEATURES: (0, 2),  # the kraft.version upgrade (kraft/node/features.py)
    # KIP-853 voter changes (answered by the raft core of the leader).
    ApiKey.ADD_RAFT_VOTER: (0, 1),
    ApiKey.REMOVE_RAFT_VOTER: (0, 0),
    ApiKey.UPDATE_RAFT_VOTER: (0, 0),
}


def replayed_api_versions(frame_hex: str) -> dict[int, tuple[int, int]]:
    """The api ranges of an ApiVersions response frame (size, correlation id,
    body; ApiVersions responses keep header v0), for the testing knob
    ``kraft.testing.api.versions.response.hex``: a kraft node then advertises
    exactly what, e.g., a real Kafka 4.0 controller advertised."""
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
    raise ConfigurationError("kraft.testing.api.versions.response.hex: not an ApiVersions response frame in hex")


class NodeStartError(StorageError):
    """The node cannot start from its log directory (unformatted, another
    node's or cluster's, locked by another process, corrupt)."""


class _PreVoteNeedsV2(Exception):
    """The peer cannot take Vote v2, so it cannot take a pre-vote (KIP-996)."""


class KraftNode:
    def __init__(self, config: NodeConfig, *, rng: random.Random | None = None,
                 client_security: ClientSecurity | None = None, fault_handler: FaultHandler | None = None) -> None:
        self.config = config
        #: A log I/O error of unknown outcome goes here (default: halt the process).
        self.fault_handler = fault_handler
        self._rng = rng or random.Random()
        self.shell: RaftShell | None = None
        self.log: MetadataLog | None = None
        self.cluster_id: str | None = None
        self.directory_id: uuid.UUID | None = None
        #: The log directory's ``.lock``, held while the node runs.
        self._dir_lock: DirectoryLock | None = None
        #: Set when :meth:`run` has released everything (after a start).
        self._stopped: trio.Event | None = None
        #: Names peers of another cluster (set in :meth:`run`).
        self._cluster_ids: ClusterIdWatch | None = None
        self._waiting: dict[int, tuple[trio.Event, list[ev.RaftResponse]]] = {}
        #: How this node dials the others: ``client_security`` (an observer
        #: given a client properties file), else the controller listener's.
        self.client_security = client_security if client_security is not None else config.client_security
        self._pool = ClientPool(client_id=f"raft-client-{config.node_id}",
                                request_timeout_ms=config.quorum.request_timeout_ms, security=self.client_security)
        #: Open connections across this node's listeners (max.connections*).
        self.connections = ConnectionTracker(config.connection_limits)
        self._nursery: trio.Nursery | None = None
        self.ports: dict[str, int] = {}
        #: The raft metrics, with ``metrics.prometheus.port`` set (else None).
        self.metrics: RaftMetrics | None = RaftMetrics() if config.prometheus_port is not None else None
        self.metrics_port: int | None = None
        #: The witness decision's evidence and log lines (kraft/node/witness.py).
        self.witness: WitnessDetector | None = None
        #: What this node's ApiVersions advertises (the testing knob may replace it).
        self.advertised_apis: dict[Any, tuple[int, int]] = (
            replayed_api_versions(config.testing_api_versions_hex) if config.testing_api_versions_hex
            else dict(SUPPORTED_APIS))
        self._endpoints: dict[int, tuple[str, int]] = {v.node_id: (v.host, v.port) for v in config.voters}
        # controller.quorum.bootstrap.servers get ids -1, -2, ... (Kafka's
        # QuorumConfig.parseBootstrapServers); KIP-853 dynamic quorums.
        # Our own address in that list is left out: a node never fetches
        # from itself.
        own = {(e.host, e.port) for e in (*config.listeners, *config.advertised_listeners)}
        self._bootstrap: dict[int, tuple[str, int]] = {
            -(i + 1): address for i, address in enumerate(config.bootstrap_servers) if address not in own
        }

    # ------------------------------------------------------------ start

    def _open_storage(self) -> tuple[MetadataLog, MetaProperties]:
        log_dir = Path(self.config.metadata_log_dir)
        meta_path = log_dir / "meta.properties"
        if not meta_path.exists():
            raise NodeStartError(
                f"No meta.properties found in {log_dir}: the log directory is not formatted "
                f"(run `kraft storage format -c CONFIG -t CLUSTER_ID` first, with the cluster's id)")
        # Kafka's LogManager.lockLogDirs: one process per log directory,
        # taken before anything in it is read.
        lock = DirectoryLock(log_dir)
        lock.acquire()
        try:
            mlog, meta = self._open_locked_storage(log_dir, meta_path)
        except BaseException:
            lock.release()
            raise
        self._dir_lock = lock
        return mlog, meta

    def _open_locked_storage(self, log_dir: Path, meta_path: Path) -> tuple[MetadataLog, MetaProperties]:
        try:
            meta = MetaProperties.read(meta_path)
        except StateFileError as e:
            raise NodeStartError(str(e)) from None
        if meta.directory_id is None:
            meta = _assign_directory_id(meta, meta_path)
        if meta.node_id != self.config.node_id:
            raise NodeStartError(
                f"Stored node id {meta.node_id} doesn't match previous node id {self.config.node_id} in "
                f"{meta_path}: node.id in the config names another node (fix node.id, or point "
                f"metadata.log.dir at this node's own directory)")
        c = self.config
        try:
            mlog = MetadataLog.open(
                metadata_partition_dir(log_dir),
                LogConfig(segment_bytes=c.segment_bytes, segment_ms=c.segment_ms,
                          retention_bytes=c.retention_bytes, retention_ms=c.retention_ms,
                          # The core asks for every fsync (Flush), as KafkaRaftClient
                          # flushes once per leader write and per voter fetch.
                          flush_on_append=False),
            )
        except CorruptLogError as e:
            raise NodeStartError(corruption_remedy(e, c, meta)) from None
        if mlog.recovery_report.repairs:
            log.warning("recovered %s: %s", mlog.recovery_report.directory, mlog.recovery_report)
        return mlog, meta

    def _abandon_storage(self, mlog: MetadataLog) -> None:
        """A start that fails after the log was opened: close it and release
        the directory's .lock (a retry in this process must not find it held)."""
        mlog.close()
        if self._dir_lock is not None:
            self._dir_lock.release()
            self._dir_lock = None

    def local_endpoints(self) -> tuple[Endpoint, ...]:
        """This node's controller listeners as peers reach them (advertised,
        else bound), in ``controller.listener.names`` order: what it records
        in VotersRecord / sends with AddRaftVoter and UpdateRaftVoter."""
        out = []
        listeners = {e.name: e for e in self.config.listeners}
        advertised = {e.name: e for e in self.config.advertised_listeners}
        for name in self.config.controller_listener_names:
            e = advertised.get(name) or listeners.get(name)
            if e is not None:
                host = e.host or "localhost"
                out.append(Endpoint(name, host, e.port or self.ports.get(name, 0)))
        return tuple(out)

    def _voter_set(self) -> VoterSet:
        listener = self.config.controller_listener_names[0]
        return VoterSet({
            v.node_id: VoterNode(ReplicaKey(v.node_id), (Endpoint(listener, v.host, v.port),))
            for v in self.config.voters
        })

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled or :meth:`shutdown`. ``task_status.started()``
        once every listener accepts connections (ports in :attr:`ports`)."""
        mlog, meta = self._open_storage()
        self.log = mlog
        self.cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        self._cluster_ids = ClusterIdWatch(
            meta.cluster_id or "", str(Path(self.config.metadata_log_dir) / "meta.properties"),
            describe_cluster_asker(lambda host, port: PeerClient(
                host, port, client_id=self._pool.client_id,
                request_timeout_ms=self.config.quorum.request_timeout_ms, security=self.client_security)))
        c = self.config
        store = ElectionStateStore(QuorumStateFile(mlog.quorum_state_path),
                                   [v.node_id for v in c.voters] if c.voters else None, meta.cluster_id or "")
        try:
            election_state = store.read()  # a damaged quorum-state: StateFileError, naming the file
        except BaseException:
            self._abandon_storage(mlog)
            raise
        policy = WitnessPolicy(c.witness)
        # Before the core exists (nothing else reads or writes the log yet):
        # Kafka controller metadata in the log decides before any candidacy.
        try:
            evidence = await trio.to_thread.run_sync(scan_for_kafka_metadata, mlog)
        except Exception as e:  # advisory: never stop the node for it
            log.warning("kraft.witness: could not scan the metadata log for Kafka metadata: %s", e)
            evidence = None
        if evidence is not None:
            policy.found_in_log(evidence)
        core = RaftCore(
            node_id=c.node_id,
            voters=self._voter_set(),
            log=mlog,
            rng=self._rng,
            config=c.quorum,
            directory_id=meta.directory_id,
            cluster_id=meta.cluster_id,
            election_state=election_state,
            local_endpoints=self.local_endpoints(),
            supported_kraft_versions=features.SUPPORTED_FEATURES["kraft.version"],
            bootstrap_ids=tuple(self._bootstrap),
            auto_join=c.auto_join,
            # A controller may be added as a voter at any time (KIP-853):
            # it fsyncs before telling the leader its fetch position.
            followers_always_flush=True,
            campaign_policy=policy,
        )
        self.shell = shell = RaftShell(core, mlog, store, send_request=self._send_request,
                                       send_response=self._send_response,
                                       fault_handler=self.fault_handler)
        self.witness = WitnessDetector(
            policy, c.node_id, voters=self._voter_addresses, probe=self._probe_peer, changed=shell.request_poll,
            cluster_id=meta.cluster_id,
            voters_source="controller.quorum.voters" if c.voters else "controller.quorum.bootstrap.servers")
        if self.metrics is not None:
            self.metrics.shell = shell
            self.metrics.is_witness = lambda: (d := self.witness_decision) is not None and d.witness
            shell.telemetry.metrics = self.metrics
        role = "voter" if c.is_voter_candidate else "observer"
        self._stopped = stopped = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for listener in c.listeners:
                    try:
                        port = await nursery.start(partial(
                            serve_listener, self, listener.host, listener.port,
                            listener=listener.name, max_frame_size=c.socket_request_max_bytes,
                            max_in_flight_per_connection=c.connection_limits.max_in_flight_per_connection,
                            security=c.listener_security.get(listener.name), tracker=self.connections))
                    except OSError as e:
                        raise _bind_error(listener.name, listener.host, listener.port, "listeners", e) from None
                    self.ports[listener.name] = port
                log.info("node %d (%s) of cluster %s listening on %s, log end offset %d",
                         c.node_id, role, meta.cluster_id,
                         ", ".join(f"{n}:{p}" for n, p in self.ports.items()), mlog.end_offset)
                nursery.start_soon(self._run_shell, nursery)
                nursery.start_soon(self.witness.run)
                nursery.start_soon(snapshots.run_log_cleaner, shell)
                if any(s.protocol.uses_sasl and any(m.startswith("SCRAM") for m in s.mechanisms)
                       for s in c.listener_security.values()):
                    # SCRAM accounts: bootstrap.checkpoint now, the log as it commits.
                    loaded = credentials.load_bootstrap_credentials(c.metadata_log_dir, c.scram_credentials)
                    log.info("%d SCRAM credentials from bootstrap.checkpoint", loaded)
                    nursery.start_soon(credentials.follow_credentials, self, c.scram_credentials)
                if self.metrics is not None:
                    from kraft.node.metrics_server import MetricsTarget, serve_metrics

                    assert c.prometheus_port is not None
                    target = MetricsTarget(shell, c.node_id, meta.cluster_id, str(c.metadata_log_dir),
                                           witness_decision=lambda: self.witness_decision)
                    try:
                        self.metrics_port = await nursery.start(
                            serve_metrics, target, self.metrics, c.prometheus_host, c.prometheus_port)
                    except OSError as e:
                        raise _bind_error("metrics", c.prometheus_host, c.prometheus_port,
                                          "metrics.prometheus.port", e) from None
                    log.info("metrics on http://%s:%d/metrics (/healthz, /readyz, /status)",
                             c.prometheus_host or "0.0.0.0", self.metrics_port)
                task_status.started()
        finally:
            # Close the log first: closing the pool awaits, and under
            # cancellation that await raises before anything after it runs.
            mlog.close()
            if self._dir_lock is not None:
                self._dir_lock.release()
                self._dir_lock = None
            stopped.set()
            with trio.CancelScope(shield=True):
                await self._pool.aclose()

    async def _run_shell(self, nursery: trio.Nursery) -> None:
        assert self.shell is not None
        await self.shell.run()
        nursery.cancel_scope.cancel()

    # ------------------------------------------------------------ API

    @property
    def leader(self) -> LeaderAndEpoch:
        assert self.shell is not None
        return self.shell.leader

    @property
    def high_watermark(self) -> int:
        assert self.shell is not None
        return self.shell.high_watermark

    @property
    def witness_decision(self) -> WitnessDecision | None:
        """Whether this voter may lead, and why (None: not running, or an observer)."""
        shell, detector = self.shell, self.witness
        if shell is None or detector is None or not shell.initialized or not shell.core.quorum.is_voter:
            return None
        return detector.decision

    @property
    def role(self) -> str:
        """The raft role's name (``leader``, ``follower``, ...), ``starting``
        before the core is initialized."""
        if self.shell is None or not self.shell.initialized:
            return "starting"
        return self.shell.core.role.name.lower()

    async def append(self, records: Sequence[bytes]) -> int:
        """Append records as leader; the offset of the last one, once committed.
        Raises :class:`kraft.raft.errors.NotLeaderError` on a non-leader."""
        assert self.shell is not None
        return await self.shell.append(records)

    def append_nowait(self, records: Sequence[bytes], *, epoch: int | None = None) -> OffsetAndEpoch:
        """Pipelined append as leader: queue ``records`` and return at once
        with (offset of the last record, leader epoch); many may be
        outstanding. Raises :class:`kraft.raft.errors.NotLeaderError` on a
        non-leader."""
        if self.shell is None:
            raise NotLeaderError("append failed: the node is not running")
        return self.shell.append_nowait(records, epoch=epoch)

    async def wait_committed(self, position: OffsetAndEpoch) -> None:
        """Wait until an :meth:`append_nowait` result is committed; raises
        :class:`kraft.raft.errors.NotLeaderError` if its leader epoch ends first
        (the record may or may not survive)."""
        assert self.shell is not None
        await self.shell.wait_committed(position)

    async def shutdown(self, timeout_ms: int = 5000) -> None:
        """Graceful stop: a leader resigns with EndQuorumEpoch first."""
        if self.shell is not None:
            with trio.move_on_after(timeout_ms / 1000 + 1):
                await self.shell.shutdown(timeout_ms)
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
        if self._stopped is not None:
            # Back once run() has closed the log and released the directory's
            # .lock: the directory may be reused (a restart, a new format).
            await self._stopped.wait()

    async def wait_for_leader(self) -> LeaderAndEpoch:
        assert self.shell is not None
        async with self.shell.leader_changed:
            while self.shell.leader.leader_id is None:
                await self.shell.leader_changed.wait()
        return self.shell.leader

    @overload
    def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: Literal[False] = False,
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded]: ...

    @overload
    def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: Literal[True],
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]: ...

    async def committed_batches(
        self, start_offset: int | None = None, *, until: int | None = None, leader_changes: bool = False,
    ) -> AsyncIterator[CommittedBatch | SnapshotLoaded | LeaderChanged]:
        """What a Kafka ``RaftClient.Listener`` gets: the latest snapshot
        first (a :class:`SnapshotLoaded`) if there is one, then every committed
        batch after it, as it commits. With ``start_offset``, resume there (a
        snapshot only if it is below the log start). A listener that falls
        below the log start later (a snapshot was installed, retention moved
        the start) gets the latest snapshot again, then the batches after it.
        Without ``until`` it ends only when the node stops; with it, it
        ends once offset ``until`` has been delivered (by a batch, or a
        snapshot past it), and raises ``LocalRaftError`` if the node stops
        before that. With ``leader_changes`` it also yields
        :class:`~kraft.node.leader_changes.LeaderChanged` items as Kafka fires
        ``handleLeaderChange``: this node's own leadership only once this
        listener has read past the epoch's start offset."""
        assert self.shell is not None
        generator = cast(AsyncGenerator[CommittedBatch | SnapshotLoaded | LeaderChanged, None],
                         snapshots.committed_items(self.shell, start_offset, leader_changes=leader_changes))
        async with aclosing(generator) as items:
            async for item in items:
                yield item
                if until is not None and not isinstance(item, LeaderChanged):
                    delivered = (item.last_offset if isinstance(item, CommittedBatch)
                                 else item.snapshot_id.offset - 1)
                    if delivered >= until:
                        return
        if until is not None:
            raise LocalRaftError(f"the node stopped before offset {until} was delivered")

    async def create_snapshot(self, at: OffsetAndEpoch | int, records: Iterable[bytes]) -> OffsetAndEpoch:
        """Write a snapshot of your state (``records``) as of ``at``: a
        committed offset (its epoch comes from the log) or a snapshot id. The
        log start then moves by retention (``metadata.max.retention.bytes`` /
        ``.ms``); followers behind it catch up with FetchSnapshot. Raises
        :class:`kraft.raft.errors.InvalidSnapshotIdError` for an id that is not
        committed, not on a batch boundary, or not newer than the latest
        snapshot. See :mod:`kraft.node.snapshots`."""
        return await snapshots.create_snapshot(self.shell, at, records)

    # ------------------------------------------------------------ server side

    async def handle(self, request: Any, conn: ConnectionInfo) -> Response | None:
        metrics = self.metrics
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
            return admin.node_api_versions(self.shell, version, request.body, self._advertised())
        refused = authorizer.authorize(self.config.secured, self.config.super_users, key, version, conn)
        if refused is not None:
            return refused
        if key in admin.ADMIN_API_KEYS:
            assert self.shell is not None  # listeners start after the shell exists
            return await admin.handle(self.shell, request, conn, cluster_id=self.cluster_id or "",
                                      node_id=self.config.node_id, witness=self.witness_decision)
        if key in rpc.RAFT_API_KEYS or key in rpc.VOTER_CHANGE_API_KEYS:
            return await self._handle_raft(key, version, request.body, conn)
        raise CloseConnection(f"api {ApiKey(key).name} is not served by a kraft controller")

    def _advertised(self) -> dict[Any, tuple[int, int]]:
        """What ApiVersions advertises: a witness leading a hand-over epoch
        adds the Kafka controller RPCs it answers with NOT_CONTROLLER
        (kraft/wire/not_controller.py), so a broker that finds it as leader
        sends them and is told to retry with the next controller."""
        shell = self.shell
        if shell is None or not shell.initialized or shell.core.handover_leadership is None:
            return self.advertised_apis
        return {**self.advertised_apis, **{k: v for k, (_, v) in REFUSED_CONTROLLER_APIS.items()}}

    async def _handle_raft(self, key: int, version: int, body: Any, conn: ConnectionInfo) -> Response:
        shell = self.shell
        assert shell is not None
        event = rpc.request_from_wire(key, version, body)
        if not isinstance(event, ev.RaftRequest.__args__):
            return Response(rpc.response_to_wire(key, cast(ev.RaftResponse, event), version, conn.listener), version)
        source = _source_of(event)
        correlation = shell.next_correlation_id()
        done = trio.Event()
        slot: list[ev.RaftResponse] = []
        self._waiting[correlation] = (done, slot)
        try:
            shell.deliver(ev.InboundRequest(source, correlation, event))
            wait_ms = self.config.quorum.request_timeout_ms
            if isinstance(event, ev.FetchRequest):
                wait_ms += event.max_wait_ms
            elif key in rpc.VOTER_CHANGE_API_KEYS:
                # The core answers within request.timeout.ms of admitting the
                # change (Kafka's handler timer); allow for the admission.
                wait_ms = 2 * wait_ms + 1000
            with trio.move_on_after(wait_ms / 1000):
                await done.wait()
        finally:
            self._waiting.pop(correlation, None)
        if not slot:
            response = rpc.error_response(key, Errors.REQUEST_TIMED_OUT)
        else:
            response = slot[0]
            if self._cluster_ids is not None and event_error(response) == INCONSISTENT_CLUSTER_ID:
                self._cluster_ids.refused_request(source, f"{conn.peer_host}:{conn.peer_port}",
                                                  getattr(event, "cluster_id", None))
        return Response(rpc.response_to_wire(key, response, version, conn.listener), version)

    def _send_response(self, out: ev.OutboundResponse) -> None:
        waiting = self._waiting.get(out.correlation_id)
        if waiting is None:
            return  # the request timed out on our side meanwhile
        done, slot = waiting
        slot.append(out.message)
        done.set()

    # ------------------------------------------------------------ client side

    def _send_request(self, out: ev.OutboundRequest) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(self._request, out)

    async def _request(self, out: ev.OutboundRequest) -> None:
        shell = self.shell
        assert shell is not None
        message = out.message
        listener = self.config.controller_listener_names[0]
        address = self._address_of(out.destination, message, listener)
        if address is None:
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, "no known address"))
            return
        key = rpc.REQUEST_API_KEYS[type(message)]
        endpoints = self.local_endpoints()

        def build(version: int) -> Any:
            if isinstance(message, ev.VoteRequest) and message.pre_vote and version < 2:
                raise _PreVoteNeedsV2()
            return rpc.request_to_wire(message, version, endpoints)[1]

        timeout = self.config.quorum.request_timeout_ms
        if isinstance(message, ev.FetchRequest):
            timeout += message.max_wait_ms
        if isinstance(message, ev.ApiVersionsRequest):
            # A would-be voter, dialled on the endpoint it asked to be added
            # with; not pooled under its id (it may not be reachable there).
            await self._api_versions(out, address)
            return
        client = self._pool.get(out.destination, *address)
        metrics = self.metrics
        name = request_name(ApiKey(key).name) if metrics is not None else ""
        if metrics is not None:
            metrics.request_sent(name)
        try:
            version, body = await client.request(ApiKey(key), build, timeout_ms=timeout,
                                                 max_version=SUPPORTED_APIS[ApiKey(key)][1])
        except _PreVoteNeedsV2:
            shell.deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                             ev.VoteResponse(error=Errors.UNSUPPORTED_VERSION)))
            return
        except NoCommonVersion as e:
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        except (ConnectionFailed, RequestTimedOut) as e:
            log.debug("request to node %d failed: %s", out.destination, e)
            if metrics is not None:
                # As Kafka's raft network channel completes them.
                metrics.response_received(
                    name, "REQUEST_TIMED_OUT" if isinstance(e, RequestTimedOut) else "BROKER_NOT_AVAILABLE")
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        response = rpc.response_from_wire(key, version, body, listener)
        if metrics is not None:
            metrics.response_received(name, event_error(response))
        if self._cluster_ids is not None and event_error(response) == INCONSISTENT_CLUSTER_ID:
            assert self._nursery is not None
            self._nursery.start_soon(self._cluster_ids.refused_by, out.destination, *address)
        shell.deliver(ev.InboundResponse(out.destination, out.correlation_id, response))


    def _address_of(self, node_id: int, message: Any, listener: str) -> tuple[str, int] | None:
        """Where to send one of the core's requests: the endpoints an
        ApiVersions names; a bootstrap server (negative id); the current voter
        set's listener (KIP-853: it changes with the log); the leader's
        advertised endpoint; the static configuration."""
        if isinstance(message, ev.ApiVersionsRequest):
            e = next((e for e in message.endpoints if e.listener == listener), None)
            return None if e is None else (e.host, e.port)
        if node_id < 0:
            return self._bootstrap.get(node_id)
        shell = self.shell
        if shell is not None:
            core = shell.core
            e = next((e for e in core.voters.endpoints(node_id) if e.listener == listener), None)
            if e is not None:
                return (e.host, e.port)
            if core.quorum.initialized and core.quorum.leader_id == node_id:
                e = next((e for e in core.quorum.leader_endpoints if e.listener == listener), None)
                if e is not None:
                    return (e.host, e.port)
        return self._endpoints.get(node_id)

    def _voter_addresses(self) -> dict[int, tuple[str, int] | None]:
        """The current voters' controller endpoints (for the witness detector)."""
        listener = self.config.controller_listener_names[0]
        shell = self.shell
        ids = shell.core.voters.voter_ids if shell is not None else [v.node_id for v in self.config.voters]
        return {i: self._address_of(i, None, listener) for i in ids}

    async def _probe_peer(self, node_id: int, address: tuple[str, int], describe: bool = True) -> PeerAnswer | None:
        """ApiVersions, then DescribeCluster (endpoint type 2: its cluster id
        and controllers), to one voter on the raft connection to it (so an
        outage is logged once by that connection, not once per probe); None
        when it cannot be reached."""
        client = self._pool.get(node_id, *address)
        try:
            await client.request(ApiKey.API_VERSIONS, lambda v: av_req.ApiVersionsRequest(
                client_software_name=CLIENT_SOFTWARE_NAME, client_software_version=CLIENT_SOFTWARE_VERSION),
                max_version=SUPPORTED_APIS[ApiKey.API_VERSIONS][1])
            advertised = client.api_versions or {}
            answer = PeerAnswer(tuple(sorted(advertised)))
            if describe and advertised.get(ApiKey.DESCRIBE_CLUSTER, (0, 0))[1] >= 1:
                _, body = await client.request(
                    ApiKey.DESCRIBE_CLUSTER,
                    lambda v: dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                            endpoint_type=2),
                    max_version=SUPPORTED_APIS[ApiKey.DESCRIBE_CLUSTER][1])
                if body.error_code == 0:
                    answer = PeerAnswer(answer.api_keys, body.cluster_id,
                                        tuple(sorted(b.broker_id for b in body.brokers)))
        except (PeerClientError, KraftProtocolError) as e:
            log.debug("witness probe of node %d at %s:%d failed: %s", node_id, *address, e)
            return None
        return answer

    async def _api_versions(self, out: ev.OutboundRequest, address: tuple[str, int]) -> None:
        shell = self.shell
        assert shell is not None
        client = PeerClient(address[0], address[1], client_id=self._pool.client_id,
                            request_timeout_ms=self.config.quorum.request_timeout_ms,
                            security=self.client_security)
        try:
            version, body = await client.request(
                ApiKey.API_VERSIONS, lambda v: rpc.request_to_wire(out.message, v)[1],
                max_version=SUPPORTED_APIS[ApiKey.API_VERSIONS][1])
        except (ConnectionFailed, RequestTimedOut, NoCommonVersion) as e:
            shell.deliver(ev.RequestFailed(out.destination, out.correlation_id, str(e)))
            return
        finally:
            await client.aclose()
        shell.deliver(ev.InboundResponse(out.destination, out.correlation_id,
                                         rpc.response_from_wire(rpc.API_VERSIONS, version, body)))


def _assign_directory_id(meta: MetaProperties, meta_path: Path) -> MetaProperties:
    """A directory formatted before Kafka 3.7 has no ``directory.id``; as
    Kafka's ``KafkaRaftServer.initializeLogDirs`` does, give it a random one
    and write it back (atomically), so the node can take part in KIP-853
    voter changes. Logged once: the next start reads it."""
    from dataclasses import replace

    from kraft.records.state_files import random_kafka_uuid, uuid_to_kafka

    updated = replace(meta, directory_id=random_kafka_uuid())
    updated.write(meta_path)
    log.info("%s had no directory.id (formatted before Kafka 3.7): wrote directory.id=%s",
             meta_path, uuid_to_kafka(cast(uuid.UUID, updated.directory_id)))
    return updated


def _bind_error(name: str, host: str, port: int, key: str, e: OSError) -> NetworkError:
    """One line for a listener that cannot bind: the port, the key, the fix."""
    where = f"{host or '0.0.0.0'}:{port}"
    return NetworkError(f"cannot listen on {name} {where} ({key}): {e.strerror or e} -- another process holds the "
                        f"port or the address is not this host's; stop that process or change {key}")


def _source_of(event: ev.RaftRequest) -> int:
    match event:
        case ev.VoteRequest():
            return event.candidate_key.id
        case ev.BeginQuorumEpochRequest() | ev.EndQuorumEpochRequest():
            return event.leader_id
        case ev.FetchRequest() | ev.FetchSnapshotRequest():
            return event.replica_key.id
        case ev.UpdateRaftVoterRequest():
            return event.voter_key.id
    return -1


def now_ms() -> int:
    return int(time.time() * 1000)
