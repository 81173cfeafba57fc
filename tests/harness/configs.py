"""The tests' one config writer: server.properties for kraft nodes on
127.0.0.1, and their directories formatted by the real ``kraft storage format``.

:func:`node_properties` is every node's config (Kafka's key names, in one
order); :func:`write_properties` writes any Java properties file;
:func:`make_configs` writes a static quorum (``controller.quorum.voters``)
and formats it; :func:`write_configs` writes a dynamic one
(``controller.quorum.bootstrap.servers``, KIP-853) for :func:`format_node`.
"""

from __future__ import annotations

import io
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kraft.config import NodeConfig
from tests.harness import cli
from tests.ports import free_ports

__all__ = ["CLUSTER_ID", "bootstrap_servers", "fast_configs", "format_in_process", "format_node", "load",
           "make_configs", "node_properties", "properties_text", "static_voters", "write_configs", "write_properties"]

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"
#: :func:`fast_configs`' election timeout: its tests start many clusters.
FAST_ELECTION = {"controller.quorum.election.timeout.ms": "300"}
#: A dynamic quorum's timeouts (:func:`write_configs`): its tests wait for
#: elections and for voters to join, so short ones keep them quick.
DYNAMIC_TIMEOUTS = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000"}


def properties_text(values: Mapping[str, object]) -> str:
    """``key=value`` lines, as a Java properties file (in the given order)."""
    return "".join(f"{k}={v}\n" for k, v in values.items())


def write_properties(path: Path, values: Mapping[str, object]) -> Path:
    path.write_text(properties_text(values))
    return path


def static_voters(ports: Mapping[int, int], voters: Iterable[int]) -> dict[str, str]:
    """``controller.quorum.voters`` of ``voters`` on their controller ports."""
    return {"controller.quorum.voters": ",".join(f"{v}@127.0.0.1:{ports[v]}" for v in voters)}


def bootstrap_servers(ports: Mapping[int, int], ids: Iterable[int]) -> dict[str, str]:
    """``controller.quorum.bootstrap.servers`` of ``ids`` (KIP-853: no static voters)."""
    return {"controller.quorum.bootstrap.servers": ",".join(f"127.0.0.1:{ports[i]}" for i in ids)}


def node_properties(node_id: int, port: int, quorum: Mapping[str, str], log_dir: Path, *, role: str = "controller",
                    extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """One node's server.properties: a CONTROLLER listener on ``port``, the
    ``quorum`` keys (:func:`static_voters` or :func:`bootstrap_servers`),
    its metadata log in ``log_dir``, then ``extra`` (which overrides)."""
    return {
        "process.roles": role,
        "node.id": str(node_id),
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        **quorum,
        "metadata.log.dir": str(log_dir),
        **(extra or {}),
    }


def make_configs(root: Path, voters: list[int], observers: Sequence[int] = (), extra: dict[str, str] | None = None,
                 cluster_id: str = CLUSTER_ID, format_args: Sequence[str] = ()) -> dict[int, Path]:
    """Write server.properties for each node and format its directory with
    the real `kraft storage format` command (plus ``format_args``, e.g.
    ``--add-scram``)."""
    ids = list(voters) + list(observers)
    ports = dict(zip(ids, free_ports(len(ids))))
    quorum = static_voters(ports, voters)
    paths = {}
    for node_id in ids:
        # An observer is Kafka's broker role (KafkaConfig.validateValues).
        props = node_properties(node_id, ports[node_id], quorum, root / f"node-{node_id}",
                                role="controller" if node_id in voters else "broker", extra=extra)
        paths[node_id] = write_properties(root / f"server-{node_id}.properties", props)
    # One `kraft storage format` process per node, all at once (each spends
    # most of its second starting Python).
    formats = {node_id: subprocess.Popen(
        cli.kraft_args("storage", "format", "--config", str(path), "--cluster-id", cluster_id, *format_args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for node_id, path in paths.items()}
    for node_id, proc in formats.items():
        output, _ = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"kraft storage format failed for node {node_id}: {output.decode(errors='replace')}")
    return paths


def fast_configs(root: Path, voters: list[int], extra: dict[str, str] | None = None) -> dict[int, Path]:
    """:func:`make_configs` formatted in-process (the same ``kraft storage
    format`` code, without a subprocess per node) and with a short election
    timeout: for tests that start many clusters."""
    ports = dict(zip(voters, free_ports(len(voters))))
    quorum = static_voters(ports, voters)
    paths = {}
    for node_id in voters:
        log_dir = root / f"node-{node_id}"
        paths[node_id] = write_properties(root / f"server-{node_id}.properties", node_properties(
            node_id, ports[node_id], quorum, log_dir, extra={**FAST_ELECTION, **(extra or {})}))
        format_in_process(CLUSTER_ID, node_id, log_dir)
    return paths


def format_in_process(cluster_id: str, node_id: int, log_dir: Path) -> None:
    """What ``kraft storage format`` writes for a node (static quorum), without its process."""
    from kraft.tools.storage import FormatRequest, run_format

    run_format(FormatRequest(cluster_id=cluster_id, node_id=node_id, metadata_log_dir=str(log_dir), log_dirs=[]),
               out=io.StringIO())


def write_configs(root: Path, ids: list[int], extra: dict[str, str] | None = None,
                  bootstrap: list[int] | None = None) -> tuple[dict[int, Path], dict[int, int]]:
    """server.properties for each node id of a dynamic quorum; ``bootstrap``
    lists the nodes in ``controller.quorum.bootstrap.servers`` (default:
    all). Returns the paths and the controller ports."""
    ports = dict(zip(ids, free_ports(len(ids))))
    quorum = bootstrap_servers(ports, bootstrap or ids)
    paths = {node_id: write_properties(root / f"server-{node_id}.properties", node_properties(
        node_id, ports[node_id], quorum, root / f"node-{node_id}", extra={**DYNAMIC_TIMEOUTS, **(extra or {})}))
        for node_id in ids}
    return paths, ports


def format_node(path: Path, *flags: str, cluster_id: str = CLUSTER_ID) -> None:
    """``kraft storage format`` for one node, as an operator runs it. No
    voter flag: ``--no-initial-controllers`` (a controller that joins later;
    Kafka 4.x refuses a dynamic quorum's format without one of the three)."""
    if not flags:
        flags = ("--no-initial-controllers",)
    proc = cli.run("storage", "format", "--config", str(path), "--cluster-id", cluster_id, *flags)
    if proc.returncode != 0:
        raise RuntimeError(f"kraft storage format {' '.join(flags)} failed: {proc.stdout}{proc.stderr}")


def load(path: Path) -> NodeConfig:
    return NodeConfig.load(path)
