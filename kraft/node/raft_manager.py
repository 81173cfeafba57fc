"""How a node is put together (Kafka's ``KafkaRaftManager``): the log
directory locked and opened, the raft core and its
:class:`~kraft.node.raft_driver.RaftDriver`, the outbound
:class:`~kraft.node.network_channel.NetworkChannel`, the listeners answering
through :class:`~kraft.node.controller_apis.ControllerApis`, the witness
detector, the log cleaner, SCRAM credentials and the metrics endpoint, all
in one nursery (:meth:`RaftManager.run`). The embedding API
(:class:`kraft.node.node.KraftNode`) owns one and reads its parts.
"""

from __future__ import annotations

import logging
import uuid
from functools import partial
from pathlib import Path
import random
from collections.abc import Mapping
from typing import Any, cast

import trio

from kraft.config import ControllerMode, NodeConfig
from kraft.dirlock import DirectoryLock
from kraft.errors import NetworkError, StorageError
from kraft.log_dir_check import check_log_dir, read_meta_properties
from kraft.node import credentials, snapshots, update_features as features
from kraft.node.cluster_ids import ClusterIdWatch, describe_cluster_asker
from kraft.controller.request_handlers import controller_handlers
from kraft.controller.quorum_controller import QuorumController
from kraft.node.controller_apis import SUPPORTED_APIS, ControllerApis
from kraft.node.controller_server import ControllerServer, bootstrap_records, controller_settings
from kraft.node.controller_registration import ControllerRegistrationManager, RegisteredListener, self_registration
from kraft.node.network_channel import AddressBook, NetworkChannel, bootstrap_nodes
from kraft.node.quorum_state_store import ElectionStateStore
from kraft.node.raft_driver import RaftDriver
from kraft.node.fault import FaultHandler, fail_stop_on_disk_failure
from kraft.node.raft_metrics import RaftMetrics
from kraft.node.remedies import corruption_remedy
from kraft.node.snapshots import CommittedSource, SnapshotPolicy
from kraft.node.witness_detector import WitnessDetector, probe_peer, remembered_answers, scan_for_kafka_metadata
from kraft.raft.core import RaftCore
from kraft.raft.roles import ElectionState
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE, read_endpoint_overrides
from kraft.raft.witness_policy import WitnessDecision, WitnessMode, WitnessPolicy
from kraft.records.errors import CorruptLogError, StateFileError
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.state_files import META_PROPERTIES_FILE, MetaProperties, QuorumStateFile
from kraft.records.voter_api_versions import write_voter_api_versions
from kraft.wire.network_client import ClientPool, PeerClient
from kraft.wire.client_software import CONTROLLER_CHANNEL_SOFTWARE_NAME
from kraft.wire.connection_limits import ConnectionTracker
from kraft.wire.security import ClientSecurity, SecurityProtocol
from kraft.wire.server import serve_listener

log = logging.getLogger("kraft.node")

__all__ = ["NodeStartError", "RaftManager"]


class NodeStartError(StorageError):
    """The node cannot start from its log directory (unformatted, another
    node's or cluster's, locked by another process, corrupt)."""


class RaftManager:
    """The parts of one running node, as :func:`run` puts them together."""

    def __init__(self, config: NodeConfig, *, rng: random.Random, client_security: ClientSecurity | None,
                 fault_handler: FaultHandler | None, advertised_apis: Mapping[Any, tuple[int, int]] | None,
                 committed_source: CommittedSource, controller: bool | ControllerMode = False) -> None:
        self.config = config
        #: Run Kafka's controller (when the roles and the bootstrap metadata allow it).
        self.controller_mode = (controller if isinstance(controller, ControllerMode)
                                else ControllerMode.ON if controller else ControllerMode.OFF)
        #: Kafka's controller on this node (set in :meth:`run` when it runs one).
        self.controller: ControllerServer | None = None
        #: A log I/O error of unknown outcome goes here (default: halt the process).
        self.fault_handler = fault_handler
        self.rng = rng
        #: The raft driver (set in :meth:`run`).
        self.raft_driver: RaftDriver | None = None
        self.log: MetadataLog | None = None
        self.cluster_id: str | None = None
        self.directory_id: uuid.UUID | None = None
        #: The log directory's ``.lock``, held while the node runs.
        self.dir_lock: DirectoryLock | None = None
        #: Set when :meth:`run` has released everything (after a start).
        self.stopped: trio.Event | None = None
        #: How this node dials the others: ``client_security`` (an observer
        #: given a client properties file), else the controller listener's.
        self.client_security = client_security if client_security is not None else config.client_security
        #: The raft connections to the other nodes.
        self.pool = ClientPool(client_id=f"raft-client-{config.node_id}",
                               request_timeout_ms=config.quorum.request_timeout_ms, security=self.client_security)
        #: This process's controller incarnation (Kafka's
        #: ``ControllerRegistrationManager.incarnationId``): one per run, in
        #: the record the active controller writes and in a standby's request.
        self.incarnation_id = uuid.uuid4()
        #: The witness's ControllerRegistration has connections of its own, as
        #: Kafka's ControllerRegistrationManager has its own channel: a Kafka
        #: controller answers one request per connection at a time and answers
        #: a registration only once it is committed, which on the raft
        #: connection would wait for this node's own Fetch queued behind it.
        self.registration_pool = ClientPool(client_id=f"controller-registration-{config.node_id}",
                                            request_timeout_ms=REGISTRATION_TIMEOUT_MS, security=self.client_security,
                                            software_name=CONTROLLER_CHANNEL_SOFTWARE_NAME)
        #: Open connections across this node's listeners (max.connections*).
        self.connections = ConnectionTracker(config.connection_limits)
        self.nursery: trio.Nursery | None = None
        self.ports: dict[str, int] = {}
        #: The raft metrics, with ``metrics.prometheus.port`` set (else None).
        self.metrics: RaftMetrics | None = RaftMetrics() if config.prometheus_port is not None else None
        self.metrics_port: int | None = None
        #: The witness decision's evidence and log lines (kraft/node/witness_detector.py).
        self.witness: WitnessDetector | None = None
        #: The inbound side (set in :meth:`run`).
        self.apis: ControllerApis | None = None
        #: What this node's ApiVersions advertises.
        self.advertised_apis: dict[Any, tuple[int, int]] = dict(advertised_apis or SUPPORTED_APIS)
        #: Where SCRAM credentials are followed from (the embedding API's committed log).
        self.committed_source = committed_source

    @property
    def witness_decision(self) -> WitnessDecision | None:
        """Whether this voter may lead, and why (None: not running, or an observer)."""
        raft_driver, detector = self.raft_driver, self.witness
        if raft_driver is None or detector is None or not raft_driver.initialized or not raft_driver.core.is_voter:
            return None
        return detector.decision

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

    def _controller_registration(self, raft_driver: RaftDriver, addresses: Any, policy: WitnessPolicy,
                                 configured: list[int]) -> ControllerRegistrationManager:
        """A witness registers with the active Kafka controller (Kafka counts
        unregistered voters against feature upgrades), a standby controller
        with the active one, as every Kafka controller does."""
        c = self.config

        def registered_in_log() -> bool | None:
            server = self.controller
            if server is None or server.is_stopped:
                return None
            known = server.controller.image.controllers.get(c.node_id)
            return known is not None and known.incarnation_id == self.incarnation_id

        def kafka_leader(leader: int) -> bool:
            decision = self.witness_decision
            return decision is not None and decision.witness and leader in policy.kafka_voters((leader,))

        def client(node_id: int) -> PeerClient | None:
            address = addresses.voter_addresses(configured).get(node_id)
            return None if address is None else self.registration_pool.get(node_id, *address)


        return ControllerRegistrationManager(
            c.node_id, self._registered_listeners, kraft_versions=features.SUPPORTED_FEATURES["kraft.version"],
            leader=lambda: raft_driver.core.leader_id if raft_driver.initialized else None,
            kafka_leader=kafka_leader, client=client, registered_in_log=registered_in_log,
            incarnation_id=self.incarnation_id)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Run until cancelled. ``task_status.started()`` once every listener
        accepts connections (ports in :attr:`ports`)."""
        mlog, meta = open_storage(self)
        self.log = mlog
        self.cluster_id = meta.cluster_id
        self.directory_id = meta.directory_id
        cluster_ids = ClusterIdWatch(
            meta.cluster_id or "", str(self.config.metadata_log_dir / META_PROPERTIES_FILE),
            describe_cluster_asker(lambda host, port: PeerClient(
                host, port, client_id=self.pool.client_id,
                request_timeout_ms=self.config.quorum.request_timeout_ms, security=self.client_security)))
        addresses, store, election_state = self._read_quorum_files(mlog, meta)
        policy = await self._witness_policy(mlog)
        core = self._build_core(mlog, meta, addresses, election_state, policy)
        self.controller = self._controller(meta)
        raft_driver, channel = self._wire(core, mlog, meta, addresses, store, policy, cluster_ids)
        self.stopped = stopped = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                channel.start(nursery, raft_driver.deliver)
                await self._serve_listeners(nursery, meta, mlog)
                nursery.start_soon(_run_raft_driver, raft_driver, nursery)
                if self.controller is not None:
                    nursery.start_soon(self.controller.run)
                assert self.witness is not None
                nursery.start_soon(self.witness.run)
                if self.config.is_voter_candidate:
                    configured = [v.node_id for v in self.config.voters]
                    nursery.start_soon(self._controller_registration(raft_driver, addresses, policy, configured).run)
                nursery.start_soon(snapshots.run_log_cleaner, raft_driver)
                self._follow_scram_credentials(nursery)
                if self.metrics is not None:
                    await self._serve_metrics(nursery, raft_driver, meta)
                task_status.started()
        except BaseException as exc:
            if raft_driver.initialized:
                fail_stop_on_disk_failure(exc, self.config.metadata_log_dir, raft_driver.fault_handler)
            raise
        finally:
            # Close the log first: closing the pool awaits, and under
            # cancellation that await raises before anything after it runs.
            try:
                mlog.close()
            except OSError as e:
                # The last flush failed: as above, its outcome is unknown.
                raft_driver.fault_handler.handle_fault(f"metadata log I/O error while closing, outcome unknown: {e}", e)
            if self.dir_lock is not None:
                self.dir_lock.release()
                self.dir_lock = None
            stopped.set()
            with trio.CancelScope(shield=True):
                await self.pool.aclose()
                await self.registration_pool.aclose()

    def _read_quorum_files(self, mlog: MetadataLog, meta: MetaProperties) -> tuple[AddressBook, ElectionStateStore,
                                                                         ElectionState | None]:
        """The endpoint overrides and the election state next to the log; a
        malformed file (StateFileError, naming it) releases the storage."""
        c = self.config
        try:
            # Hosts that moved (recover-quorum --endpoints); a malformed file: StateFileError, naming it.
            overrides = read_endpoint_overrides(mlog.quorum_state_path.parent)
        except BaseException:
            _abandon_storage(self, mlog)
            raise
        if overrides:
            log.info("Dialling voters %s at the addresses in %s while the voter set records their old endpoints",
                     ", ".join(f"{o.voter_id}@{o.host}:{o.port}" for o in overrides),
                     mlog.quorum_state_path.parent / ENDPOINT_OVERRIDES_FILE)
        addresses = AddressBook(
            c.controller_listener_names[0], {v.node_id: (v.host, v.port) for v in c.voters},
            bootstrap_nodes(c.bootstrap_servers, {(e.host, e.port) for e in (*c.listeners, *c.advertised_listeners)}),
            overrides)
        store = ElectionStateStore(QuorumStateFile(mlog.quorum_state_path),
                                   [v.node_id for v in c.voters] if c.voters else None, meta.cluster_id or "")
        try:
            election_state = store.read()  # a damaged quorum-state: StateFileError, naming the file
        except BaseException:
            _abandon_storage(self, mlog)
            raise
        return addresses, store, election_state

    async def _witness_policy(self, mlog: MetadataLog) -> WitnessPolicy:
        """``kraft.witness`` and what the log and the remembered answers say."""
        policy = WitnessPolicy(self.config.witness)
        # Before the core exists (nothing else reads or writes the log yet):
        # Kafka controller metadata in the log decides before any candidacy.
        try:
            evidence = await trio.to_thread.run_sync(scan_for_kafka_metadata, mlog)
        except Exception as e:  # advisory: never stop the node for it
            log.warning("kraft.witness: could not scan the metadata log for Kafka metadata: %s", e)
            evidence = None
        if evidence is not None:
            policy.found_in_log(evidence)
        policy.remember(remembered_answers(mlog.quorum_state_path.parent))
        return policy

    def _build_core(self, mlog: MetadataLog, meta: MetaProperties, addresses: AddressBook,
                    election_state: ElectionState | None, policy: WitnessPolicy) -> RaftCore:
        c = self.config
        core = RaftCore(
            node_id=c.node_id,
            voters=_voter_set(self),
            log=mlog,
            rng=self.rng,
            config=c.quorum,
            directory_id=meta.directory_id,
            cluster_id=meta.cluster_id,
            election_state=election_state,
            local_endpoints=self.local_endpoints(),
            supported_kraft_versions=features.SUPPORTED_FEATURES["kraft.version"],
            bootstrap_ids=tuple(addresses.bootstrap),
            auto_join=c.auto_join,
            # A controller may be added as a voter at any time (KIP-853):
            # it fsyncs before telling the leader its fetch position.
            followers_always_flush=True,
            campaign_policy=policy,
        )
        addresses.quorum = core
        return core

    def _wire(self, core: RaftCore, mlog: MetadataLog, meta: MetaProperties, addresses: AddressBook,
              store: ElectionStateStore, policy: WitnessPolicy,
              cluster_ids: ClusterIdWatch) -> tuple[RaftDriver, NetworkChannel]:
        """The raft driver around ``core``, its network channel, the witness
        detector, the metrics hooks and the inbound side."""
        c = self.config
        channel = NetworkChannel(self.pool, addresses, request_timeout_ms=c.quorum.request_timeout_ms,
                                 max_versions={k: v[1] for k, v in SUPPORTED_APIS.items()},
                                 local_endpoints=self.local_endpoints, security=self.client_security,
                                 metrics=self.metrics, cluster_ids=cluster_ids)
        self.raft_driver = raft_driver = RaftDriver(core, mlog, store, sender=channel,
                                                         fault_handler=self.fault_handler)
        configured = [v.node_id for v in c.voters]
        self.witness = WitnessDetector(
            policy, c.node_id, voters=lambda: addresses.voter_addresses(configured),
            probe=partial(probe_peer, self.pool, SUPPORTED_APIS), changed=partial(self._witness_changed, policy),
            cluster_id=meta.cluster_id,
            voters_source="controller.quorum.voters" if c.voters else "controller.quorum.bootstrap.servers",
            directories=lambda: {k.id: k.directory_id for k in core.voters.voter_keys},
            save=partial(write_voter_api_versions, mlog.quorum_state_path.parent))
        if self.metrics is not None:
            self.metrics.raft_driver = raft_driver
            self.metrics.is_witness = lambda: (d := self.witness_decision) is not None and d.witness
            raft_driver.telemetry.metrics = self.metrics
        if self.controller is not None:
            self.controller.attach(raft_driver, partial(snapshots.committed_items, raft_driver, None,
                                                        leader_changes=True),
                                   partial(snapshots.create_snapshot, raft_driver),
                                   SnapshotPolicy(c.max_bytes_between_snapshots, c.max_snapshot_interval_ms,
                                                  raft_driver.clock_ms()))
        self.apis = ControllerApis(c, raft_driver, cluster_id=meta.cluster_id or "",
                                   advertised_apis=self.advertised_apis, metrics=self.metrics,
                                   cluster_ids=cluster_ids, witness_decision=lambda: self.witness_decision,
                                   controller=self.controller)
        return raft_driver, channel

    def _witness_changed(self, policy: WitnessPolicy) -> None:
        """The witness decision may have changed: the core looks again, and
        under ``kraft.controller=auto`` a node beside Kafka's controllers
        stands its controller down (a witness runs raft only, as before
        kraft had a controller). Log evidence alone never does: a restarted
        kraft-only quorum's log holds the metadata its own controller wrote."""
        assert self.raft_driver is not None
        self.raft_driver.request_poll()
        controller = self.controller
        if controller is None or controller.is_stopped or self.controller_mode is not ControllerMode.AUTO:
            return
        kafka = policy.kafka_voters([k.id for k in self.raft_driver.core.voters.voter_keys])
        if kafka:
            controller.stand_down(f"voters {', '.join(map(str, kafka))} are Kafka controllers: a witness beside them "
                                  "runs the raft quorum only (kraft.controller=auto)")

    def _controller(self, meta: MetaProperties) -> ControllerServer | None:
        """Kafka's controller, when wanted and the directory was formatted for one."""
        c = self.config
        mode = self.controller_mode
        if mode is ControllerMode.OFF or "controller" not in c.process_roles:
            return None
        if mode is ControllerMode.AUTO and c.witness is WitnessMode.ALWAYS:
            log.info("kraft.witness=true: a witness runs the raft quorum only, not Kafka's controller")
            return None
        bootstrap = bootstrap_records(c.metadata_log_dir)
        if bootstrap is None:
            log.info("No metadata.version in the bootstrap metadata of %s: running the raft quorum only, without "
                     "Kafka's controller (format with kraft storage format --release-version to run one)",
                     c.metadata_log_dir)
            return None
        settings = controller_settings(c.node_id, meta.cluster_id or "", c.raw,
                                       quorum_node_ids=tuple(v.node_id for v in c.voters))
        return ControllerServer(QuorumController(settings, controller_handlers(), bootstrap=bootstrap, rng=self.rng),
                                registration=partial(self_registration, c.node_id, self.incarnation_id,
                                                     self._registered_listeners),
                                foreign_log_stands_down=mode is ControllerMode.AUTO)

    def _registered_listeners(self) -> list[RegisteredListener]:
        """This node's controller listeners as a registration names them."""
        c = self.config
        return [RegisteredListener(e.listener, e.host, e.port, c.listener_security[e.listener].protocol
                                   if e.listener in c.listener_security else SecurityProtocol.PLAINTEXT)
                for e in self.local_endpoints()]

    async def _serve_listeners(self, nursery: trio.Nursery, meta: MetaProperties, mlog: MetadataLog) -> None:
        c = self.config
        assert self.apis is not None
        for listener in c.listeners:
            try:
                port = await nursery.start(partial(
                    serve_listener, self.apis, listener.host, listener.port,
                    listener=listener.name, max_frame_size=c.socket_request_max_bytes,
                    max_in_flight_per_connection=c.connection_limits.max_in_flight_per_connection,
                    security=c.listener_security.get(listener.name), tracker=self.connections,
                    refuse_controller_rpcs=self.controller is None))
            except OSError as e:
                raise _bind_error(listener.name, listener.host, listener.port, "listeners", e) from None
            self.ports[listener.name] = port
        role = "voter" if c.is_voter_candidate else "observer"
        log.info("node %d (%s) of cluster %s listening on %s, log end offset %d",
                 c.node_id, role, meta.cluster_id,
                 ", ".join(f"{n}:{p}" for n, p in self.ports.items()), mlog.end_offset)

    def _follow_scram_credentials(self, nursery: trio.Nursery) -> None:
        c = self.config
        if any(s.protocol.uses_sasl and any(m.startswith("SCRAM") for m in s.mechanisms)
               for s in c.listener_security.values()):
            # SCRAM accounts: the bootstrap metadata now, the log as it commits.
            loaded = credentials.load_bootstrap_credentials(c.metadata_log_dir, c.scram_credentials)
            log.info("%d SCRAM credentials from the bootstrap metadata", loaded)
            nursery.start_soon(credentials.follow_credentials, self.committed_source, c.scram_credentials)

    async def _serve_metrics(self, nursery: trio.Nursery, raft_driver: RaftDriver, meta: MetaProperties) -> None:
        from kraft.node.metrics_endpoint import MetricsTarget, serve_metrics

        c = self.config
        assert self.metrics is not None and c.prometheus_port is not None
        target = MetricsTarget(raft_driver, c.node_id, meta.cluster_id, str(c.metadata_log_dir),
                               witness_decision=lambda: self.witness_decision)
        try:
            self.metrics_port = await nursery.start(
                serve_metrics, target, self.metrics, c.prometheus_host, c.prometheus_port)
        except OSError as e:
            raise _bind_error("metrics", c.prometheus_host, c.prometheus_port,
                              "metrics.prometheus.port", e) from None
        log.info("metrics on http://%s:%d/metrics (/healthz, /readyz, /status)",
                 c.prometheus_host or "0.0.0.0", self.metrics_port)





#: How long a ControllerRegistration may take: the active controller answers
#: once the record is committed (Kafka's ``request.timeout.ms`` default).
REGISTRATION_TIMEOUT_MS = 30_000


async def _run_raft_driver(raft: RaftDriver, nursery: trio.Nursery) -> None:
    await raft.run()
    nursery.cancel_scope.cancel()



def open_storage(node: RaftManager) -> tuple[MetadataLog, MetaProperties]:
    """Lock and open the node's log directory (Kafka's ``LogManager``)."""
    log_dir = node.config.metadata_log_dir
    meta_path = log_dir / META_PROPERTIES_FILE
    check_log_dir(log_dir)  # as `kraft storage format` checks it (kraft.log_dir_check)
    if not meta_path.exists():
        raise NodeStartError(
            f"No meta.properties found in {log_dir}: the log directory is not formatted "
            f"(run `kraft storage format -c CONFIG -t CLUSTER_ID` first, with the cluster's id)")
    # Kafka's LogManager.lockLogDirs: one process per log directory,
    # taken before anything in it is read.
    lock = DirectoryLock(log_dir)
    lock.acquire()
    try:
        mlog, meta = _open_locked_storage(node, log_dir, meta_path)
    except BaseException:
        lock.release()
        raise
    node.dir_lock = lock
    return mlog, meta

def _open_locked_storage(node: RaftManager, log_dir: Path, meta_path: Path) -> tuple[MetadataLog, MetaProperties]:
    meta = read_meta_properties(log_dir)
    if meta is None:  # removed since the check before the lock
        raise NodeStartError(f"No meta.properties found in {log_dir}: the log directory is not formatted")
    if meta.directory_id is None:
        meta = _assign_directory_id(meta, meta_path)
    if meta.node_id != node.config.node_id:
        raise NodeStartError(
            f"Stored node id {meta.node_id} doesn't match previous node id {node.config.node_id} in "
            f"{meta_path}: node.id in the config names another node (fix node.id, or point "
            f"metadata.log.dir at this node's own directory)")
    c = node.config
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

def _abandon_storage(node: RaftManager, mlog: MetadataLog) -> None:
    """A start that fails after the log was opened: close it and release
    the directory's .lock (a retry in this process must not find it held)."""
    mlog.close()
    if node.dir_lock is not None:
        node.dir_lock.release()
        node.dir_lock = None


def _voter_set(node: RaftManager) -> VoterSet:
    listener = node.config.controller_listener_names[0]
    return VoterSet({
        v.node_id: VoterNode(ReplicaKey(v.node_id), (Endpoint(listener, v.host, v.port),))
        for v in node.config.voters
    })


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


