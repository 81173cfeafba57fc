"""The two clusters ``kraft bench controller`` compares, each configured,
formatted and started as a user runs it: three controllers -- ``kraft node
start`` (``kraft.witness=false``: kraft leads as Kafka's controllers do) on
a directory formatted by ``kraft storage format --kafka-version``, or real
Kafka controllers formatted by Kafka's StorageTool -- and the same three
real Kafka brokers, formatted by Kafka's StorageTool, on loopback ports.

    side = ControllerSide("kraft", root / "kraft", jars)
    side.format(); side.start()
    side.active_controller()   # the raft leader, from the quorum-state files
    side.close()
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click

from kraft.kafka_release import LATEST
from kraft.records.state_files import CLUSTER_METADATA_DIR, QUORUM_STATE_FILE
from kraft.tools.bench.kafka_jvm import SERVER_LOG4J, KafkaJars, Server
from kraft.tools.quickstart import free_ports

__all__ = ["BROKERS", "CONTROLLERS", "ControllerSide"]

CONTROLLERS = (1, 2, 3)
BROKERS = (101, 102, 103)
#: Kafka logs this once startup is done (KafkaRaftServer.startup); ``kraft node start`` once it accepts.
KAFKA_STARTED = r"Kafka Server started"
KRAFT_LISTENING = r"listening on"
START_TIMEOUT_S = 180.0
#: What a 3-broker cluster runs its internal topics with (Kafka's defaults are RF 3, min ISR 2).
_BROKER_KEYS = {"offsets.topic.replication.factor": 3, "transaction.state.log.replication.factor": 3,
                "transaction.state.log.min.isr": 2, "default.replication.factor": 3, "min.insync.replicas": 2,
                "group.initial.rebalance.delay.ms": 0}
_LISTENERS = {"controller.listener.names": "CONTROLLER",
              "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}


def _cluster_id() -> str:
    """A random cluster id as ``kafka-storage random-uuid`` prints one."""
    from kraft.records.state_files import random_cluster_id

    return random_cluster_id()


def _write(path: Path, values: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))


class ControllerSide:
    """Three controllers of ``kind`` (``kraft`` or ``Kafka``) and three Kafka brokers in ``root``."""

    def __init__(self, kind: str, root: Path, jars: KafkaJars) -> None:
        self.kind = kind
        self.root = root
        self.jars = jars
        self.cluster_id = _cluster_id()
        ports = free_ports(len(CONTROLLERS) + len(BROKERS))
        self.controller_ports = dict(zip(CONTROLLERS, ports))
        self.broker_ports = dict(zip(BROKERS, ports[len(CONTROLLERS):]))
        self.controllers = {i: self._controller(i) for i in CONTROLLERS}
        self.brokers = {b: self._kafka_server(f"Kafka broker {b}", root / f"broker-{b}") for b in BROKERS}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.broker_ports.values())

    def _kafka_server(self, name: str, folder: Path) -> Server:
        command = self.jars.command("kafka.Kafka", str(folder / "server.properties"),
                                    log4j=folder / "log4j2.properties", logs_dir=folder)
        return Server(name, command, folder, KAFKA_STARTED, logs=[folder / "server.log"])

    def _controller(self, node_id: int) -> Server:
        folder = self.root / f"controller-{node_id}"
        if self.kind == "kraft":
            args = [sys.executable, "-m", "kraft.cli", "node", "start", "--config", str(folder / "server.properties")]
            return Server(f"kraft controller {node_id}", args, folder, KRAFT_LISTENING)
        return self._kafka_server(f"Kafka controller {node_id}", folder)

    def _quorum(self) -> dict[str, object]:
        voters = ",".join(f"{i}@127.0.0.1:{p}" for i, p in self.controller_ports.items())
        return {"controller.quorum.voters": voters, **_LISTENERS}

    def format(self) -> None:
        """Write each node's properties and format its directory with its own storage tool."""
        for node_id, server in self.controllers.items():
            extra = {"kraft.witness": "false", "kraft.controller": "true"} if self.kind == "kraft" else {}
            config = server.folder / "server.properties"
            _write(config, {"process.roles": "controller", "node.id": node_id, **self._quorum(),
                            "listeners": f"CONTROLLER://127.0.0.1:{self.controller_ports[node_id]}",
                            "metadata.log.dir": server.folder / "data", "log.dirs": server.folder / "data", **extra})
            if self.kind == "kraft":
                self._run(server, [sys.executable, "-m", "kraft.cli", "storage", "format", "-c", str(config),
                                   "-t", self.cluster_id, "--kafka-version", self.jars.version or LATEST.version])
            else:
                self._storage_tool(server)
        for broker_id, broker in self.brokers.items():
            address = f"127.0.0.1:{self.broker_ports[broker_id]}"
            _write(broker.folder / "server.properties", {
                "process.roles": "broker", "node.id": broker_id, **self._quorum(),
                "listeners": f"PLAINTEXT://{address}", "advertised.listeners": f"PLAINTEXT://{address}",
                "inter.broker.listener.name": "PLAINTEXT", "log.dirs": broker.folder / "data", **_BROKER_KEYS})
            self._storage_tool(broker)

    def _storage_tool(self, server: Server) -> None:
        (server.folder / "log4j2.properties").write_text(SERVER_LOG4J)
        self._run(server, self.jars.command(self.jars.main_class("StorageTool"), "format", "-t", self.cluster_id,
                                            "-c", str(server.folder / "server.properties")))

    def _run(self, server: Server, args: list[str]) -> None:
        done = subprocess.run(args, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise click.ClickException(f"formatting {server.name} failed (exit {done.returncode}): "
                                       f"{' '.join((done.stderr or done.stdout).split())[:300]}")

    def start(self) -> None:
        """The controllers, then the brokers, each waited for until it serves."""
        for group in (self.controllers, self.brokers):
            for server in group.values():
                server.start()
            for server in group.values():
                server.wait_ready(START_TIMEOUT_S)

    def active_controller(self) -> int | None:
        """The leader of the newest epoch any controller's ``quorum-state`` file
        (FileQuorumStateStore, written by Kafka and kraft alike) names."""
        best: tuple[int, int] | None = None
        for node_id, server in self.controllers.items():
            if not server.alive:
                continue
            try:
                state = json.loads((server.folder / "data" / CLUSTER_METADATA_DIR / QUORUM_STATE_FILE).read_text())
            except (OSError, ValueError):
                continue  # not written yet, or being replaced
            leader, epoch = state.get("leaderId", -1), state.get("leaderEpoch", -1)
            if leader in self.controllers and self.controllers[leader].alive and (best is None or epoch > best[0]):
                best = (epoch, leader)
        return None if best is None else best[1]

    def close(self) -> None:
        for server in [*self.brokers.values(), *self.controllers.values()]:
            server.kill()
