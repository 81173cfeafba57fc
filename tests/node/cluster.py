"""Helpers to build real node configs and formatted directories for tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from kraft.config import NodeConfig
from tests.ports import free_ports

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"


def make_configs(root: Path, voters: list[int], observers: list[int] = (), extra: dict[str, str] | None = None,
                 cluster_id: str = CLUSTER_ID, format_args: Sequence[str] = ()) -> dict[int, Path]:
    """Write server.properties for each node and format its directory with
    the real `kraft storage format` command (plus ``format_args``, e.g.
    ``--add-scram``)."""
    ids = list(voters) + list(observers)
    ports = dict(zip(ids, free_ports(len(ids))))
    quorum = ",".join(f"{v}@127.0.0.1:{ports[v]}" for v in voters)
    paths = {}
    for node_id in ids:
        props = {
            # An observer is Kafka's broker role (KafkaConfig.validateValues).
            "process.roles": "controller" if node_id in voters else "broker",
            "node.id": str(node_id),
            "listeners": f"CONTROLLER://127.0.0.1:{ports[node_id]}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": quorum,
            "metadata.log.dir": str(root / f"node-{node_id}"),
            **(extra or {}),
        }
        path = root / f"server-{node_id}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        paths[node_id] = path
    # One `kraft storage format` process per node, all at once (each spends
    # most of its second starting Python).
    formats = {node_id: subprocess.Popen(
        [sys.executable, "-m", "kraft.cli", "storage", "format", "--config", str(path), "--cluster-id", cluster_id,
         *format_args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for node_id, path in paths.items()}
    for node_id, proc in formats.items():
        output, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"kraft storage format failed for node {node_id}: {output.decode(errors='replace')}")
    return paths


def load(path: Path) -> NodeConfig:
    return NodeConfig.load(path)
