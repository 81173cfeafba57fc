"""The multi-process cluster with real Kafka, a KRaft cluster as a user
runs it: real Kafka controllers and brokers (``java -cp ... kafka.Kafka
server.properties``) beside ``kraft node start`` voters, on loopback ports,
formatted by each one's own storage tool.

    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(1, 2), kraft_voters=(3,), brokers=(100,))
    cluster.format(); cluster.start()
    ...
    cluster.close()   # kills whatever still runs (the fixture does it)

A static quorum (``controller.quorum.voters``, kraft.version 0) unless
``dynamic``: then ``controller.quorum.bootstrap.servers`` and the first Kafka
controller formatted ``--standalone``, the others ``--no-initial-controllers``
(KIP-853), to be added with ``add-controller``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from tests.harness.configs import properties_text
from tests.kafka.processes import SERVER_LOG4J, Process, StartError, java_args, kraft_args, run_tool
from tests.kafka.releases import KafkaRelease
from tests.ports import free_ports

__all__ = ["KafkaCluster", "KafkaServer", "KraftVoter", "StartError", "quorum_state"]

#: Kafka logs this once its SocketServer accepts and startup is done (KafkaRaftServer.startup).
KAFKA_STARTED = r"Kafka Server started"
#: ``kraft node start`` logs this once it accepts connections.
KRAFT_LISTENING = r"listening on"
START_TIMEOUT_S = 180.0


class KafkaServer(Process):
    """A real Kafka controller or broker."""

    def __init__(self, release: KafkaRelease, role: str, node_id: int, port: int, folder: Path) -> None:
        self.release = release
        self.role = role
        self.node_id = node_id
        self.port = port
        self.config = folder / "server.properties"
        self.data = folder / "data"
        log4j = folder / "log4j2.properties"
        super().__init__(f"Kafka {role} {node_id} ({release.version})",
                         java_args(release, log4j, "kafka.Kafka", str(self.config), logs_dir=folder), folder)
        self.logs = [folder / "server.log"]

    def write_config(self, values: dict[str, object]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "log4j2.properties").write_text(SERVER_LOG4J)
        self.config.write_text(properties_text(values))

    def started(self, timeout_s: float = START_TIMEOUT_S) -> None:
        self.wait_for(KAFKA_STARTED, timeout_s, count=self.starts)


class KraftVoter(Process):
    """A ``kraft node start`` voter (default settings: ``kraft.witness=auto``),
    or an observer (a node id that is not a voter)."""

    def __init__(self, node_id: int, port: int, folder: Path, log_level: str = "INFO",
                 role: str = "kraft voter") -> None:
        self.node_id = node_id
        self.port = port
        self.role = role
        self.config = folder / "server.properties"
        self.data = folder / "data"
        super().__init__(f"{role} {node_id}",
                         kraft_args("node", "start", "--config", str(self.config), "--log-level", log_level), folder)

    def write_config(self, values: dict[str, object]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.config.write_text(properties_text(values))

    def started(self, timeout_s: float = START_TIMEOUT_S) -> None:
        self.wait_for(KRAFT_LISTENING, timeout_s, count=self.starts)


class KafkaCluster:
    """Kafka controllers, kraft voters and Kafka brokers of one cluster."""

    def __init__(self, root: Path, release: KafkaRelease, *, kafka_controllers: Sequence[int] = (1, 2),
                 kraft_voters: Sequence[int] = (3,), brokers: Sequence[int] = (100,), dynamic: bool = False,
                 kraft_observers: Sequence[int] = (), extra: dict[str, object] | None = None,
                 release_version: str | None = None, hosts: dict[int, str] | None = None) -> None:
        self.root = root
        #: Each node's listener address (default 127.0.0.1; a network
        #: namespace's address when the test runs the node inside one).
        self.hosts = dict(hosts or {})
        self.release = release
        self.dynamic = dynamic
        self.cluster_id = _cluster_id()
        ids = [*kafka_controllers, *kraft_voters]
        ports = free_ports(len(ids) + len(brokers) + len(kraft_observers))
        self.controller_ports = dict(zip(ids, ports))
        self.kafka: dict[int, KafkaServer] = {
            i: KafkaServer(release, "controller", i, self.controller_ports[i], root / f"controller-{i}")
            for i in kafka_controllers}
        self.kraft: dict[int, KraftVoter] = {
            i: KraftVoter(i, self.controller_ports[i], root / f"kraft-{i}") for i in kraft_voters}
        self.brokers: dict[int, KafkaServer] = {
            b: KafkaServer(release, "broker", b, p, root / f"broker-{b}") for b, p in zip(brokers, ports[len(ids):])}
        #: ``kraft node start`` with a node id that is not a voter: an observer.
        self.observers: dict[int, KraftVoter] = {
            o: KraftVoter(o, p, root / f"kraft-observer-{o}", role="kraft observer")
            for o, p in zip(kraft_observers, ports[len(ids) + len(brokers):])}
        self.extra = dict(extra or {})
        #: Kafka's StorageTool ``--release-version`` (None: the release's own, the newest metadata.version).
        self.release_version = release_version

    # --- configuration ---------------------------------------------------------

    @property
    def voters(self) -> str:
        """``controller.quorum.voters``: every controller, Kafka's and kraft's."""
        return ",".join(f"{i}@{self.host(i)}:{p}" for i, p in sorted(self.controller_ports.items()))

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"{self.host(i)}:{p}" for i, p in sorted(self.controller_ports.items()))

    def host(self, node_id: int) -> str:
        return self.hosts.get(node_id, "127.0.0.1")

    def _quorum_keys(self) -> dict[str, object]:
        if self.dynamic:
            return {"controller.quorum.bootstrap.servers": self.bootstrap_controllers}
        return {"controller.quorum.voters": self.voters}

    def _controller_keys(self, node_id: int, folder: Path, with_extra: bool = True) -> dict[str, object]:
        port = self.controller_ports[node_id] if node_id in self.controller_ports else self.observers[node_id].port
        # A kraft observer of a static quorum is a broker, as Kafka requires
        # (KafkaConfig.validateValues: a controller must be among the voters).
        role = "controller" if self.dynamic or node_id in self.controller_ports else "broker"
        return {"process.roles": role, "node.id": node_id, **self._quorum_keys(),
                "listeners": f"CONTROLLER://{self.host(node_id)}:{port}", "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "metadata.log.dir": folder / "data", "log.dirs": folder / "data",
                **(self.extra if with_extra else {})}

    def _broker_keys(self, broker: KafkaServer) -> dict[str, object]:
        return {"process.roles": "broker", "node.id": broker.node_id, **self._quorum_keys(),
                "listeners": f"PLAINTEXT://{self.host(broker.node_id)}:{broker.port}",
                "advertised.listeners": f"PLAINTEXT://{self.host(broker.node_id)}:{broker.port}",
                "inter.broker.listener.name": "PLAINTEXT", "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "log.dirs": broker.folder / "data", "num.partitions": 1,
                # One broker: every internal topic has one replica.
                "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
                "transaction.state.log.min.isr": 1, "share.coordinator.state.topic.replication.factor": 1,
                "share.coordinator.state.topic.min.isr": 1, "group.initial.rebalance.delay.ms": 0,
                **self.extra}

    # --- lifecycle -------------------------------------------------------------

    def format(self) -> None:
        """Each node's storage formatted by its own tool: Kafka's StorageTool
        for Kafka's nodes, ``kraft storage format`` for kraft's."""
        # A dynamic quorum starts from one controller formatted --standalone:
        # the lowest id, Kafka's or kraft's (a kraft-only quorum has no Kafka one).
        first = min(self.controller_ports) if self.controller_ports else None
        for node_id, server in self.kafka.items():
            server.write_config(self._controller_keys(node_id, server.folder))
            args = ["format", "-t", self.cluster_id, "-c", str(server.config)]
            if self.dynamic:
                args.append("--standalone" if node_id == first else "--no-initial-controllers")
            self._storage_tool(server, args)
        for node_id, voter in self.kraft.items():
            voter.write_config(self._controller_keys(node_id, voter.folder))
            self._kraft_format(voter, standalone=node_id == first)
        for observer in self.observers.values():
            # Kafka's defaults, not ``extra``: the copy's snapshots are the ones it fetched.
            observer.write_config(self._controller_keys(observer.node_id, observer.folder, with_extra=False))
            self._kraft_format(observer, standalone=False)
        for broker in self.brokers.values():
            broker.write_config(self._broker_keys(broker))
            self._storage_tool(broker, ["format", "-t", self.cluster_id, "-c", str(broker.config)])

    def _kraft_format(self, node: KraftVoter, standalone: bool) -> None:
        # The release's own defaults, as its StorageTool formats Kafka's nodes:
        # a kraft-only quorum's bootstrap metadata.version is what the brokers
        # get, and an older broker refuses a newer one ("Unsupported metadata version").
        args = ["storage", "format", "-c", str(node.config), "-t", self.cluster_id,
                "--kafka-version", self.release.version]
        if self.release_version is not None:
            args += ["--release-version", self.release_version]
        if self.dynamic:
            args.append("--standalone" if standalone else "--no-initial-controllers")
        _run_checked(node.name, kraft_args(*args))

    def _storage_tool(self, server: KafkaServer, args: list[str]) -> None:
        if self.release_version is not None:
            args = [*args, "--release-version", self.release_version]
        done = run_tool(self.release, "StorageTool", *args, work=self.root)
        if done.returncode != 0:
            raise StartError(f"{self.release}'s StorageTool {' '.join(args)} failed for {server.name} "
                             f"(exit {done.returncode}): {(done.stderr or done.stdout).strip()[:400]}")

    def controllers(self) -> list[Process]:
        return [*self.kafka.values(), *self.kraft.values()]

    def everything(self) -> list[Process]:
        return [*self.controllers(), *self.brokers.values(), *self.observers.values()]

    def start(self, processes: Iterable[Process] | None = None, wait: bool = True) -> None:
        """Start ``processes`` (default: every controller, then the brokers)
        and wait until each is up; a :class:`StartError` names the first that
        died or hung, and everything started is left for :meth:`close`."""
        chosen = list(self.everything() if processes is None else processes)
        for process in chosen:
            process.start()
        if wait:
            for process in chosen:
                process.started()  # type: ignore[attr-defined]

    def close(self) -> list[str]:
        """Kill every process still running; the names of those that were."""
        running = [p.name for p in self.everything() if p.alive]
        for process in self.everything():
            process.kill()
        return running

    # --- what the files say ----------------------------------------------------

    def quorum_state(self, node_id: int) -> dict[str, object] | None:
        """The node's ``quorum-state`` file as Kafka's FileQuorumStateStore wrote it."""
        folder = (self.kafka.get(node_id) or self.kraft[node_id]).folder
        return quorum_state(folder / "data")

    def run_tool(self, simple_name: str, *args: str, timeout_s: float = 180.0) -> str:
        """A real Kafka tool of this cluster's release; its stdout (a
        :class:`StartError` with its stderr when it fails)."""
        done = run_tool(self.release, simple_name, *args, work=self.root, timeout_s=timeout_s)
        if done.returncode != 0:
            raise StartError(f"{self.release}'s {simple_name} {' '.join(args)} exited {done.returncode}: "
                             f"{(done.stderr or done.stdout).strip()[-600:]}")
        return done.stdout

    def describe_quorum(self, *what: str, bootstrap: str | None = None) -> str:
        """``kafka-metadata-quorum.sh --bootstrap-controller ... describe WHAT``
        (real), through ``bootstrap`` (default: every controller)."""
        return self.run_tool("MetadataQuorumCommand", "--bootstrap-controller", bootstrap or self.bootstrap_controllers,
                             "describe", *what)

    def kafka_bootstrap(self) -> str:
        """The Kafka controllers alone, as ``--bootstrap-controller``."""
        return ",".join(f"{self.host(i)}:{server.port}" for i, server in sorted(self.kafka.items()))


def quorum_state(metadata_log_dir: Path) -> dict[str, object] | None:
    path = metadata_log_dir / "__cluster_metadata-0" / "quorum-state"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # not written yet, or being replaced


def _cluster_id() -> str:
    """A random cluster id as ``kafka-storage random-uuid`` prints one."""
    from kraft.records.state_files import random_cluster_id

    return random_cluster_id()


def _run_checked(name: str, args: list[str]) -> None:
    import subprocess

    done = subprocess.run(args, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise StartError(f"{' '.join(args[2:])} failed for {name} (exit {done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()[:400]}")
