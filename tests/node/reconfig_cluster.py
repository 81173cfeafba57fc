"""Helpers for KIP-853 dynamic-quorum node tests: server.properties with
``controller.quorum.bootstrap.servers`` (no static voters), directories
formatted by the real ``kraft storage format`` (``--standalone`` for the
first controller, ``--initial-controllers`` for a bootstrapped set, no voter
flag for a controller that joins later), and a small admin client for
AddRaftVoter / RemoveRaftVoter."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from kraft.messages.generated import add_raft_voter_request as add_req
from kraft.messages.generated import remove_raft_voter_request as remove_req
from kraft.records.state_files import MetaProperties
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import PeerClient
from tests.harness import cli
from tests.node.cluster import CLUSTER_ID, free_ports


def write_configs(root: Path, ids: list[int], extra: dict[str, str] | None = None,
                  bootstrap: list[int] | None = None) -> tuple[dict[int, Path], dict[int, int]]:
    """server.properties for each node id; ``bootstrap`` lists the nodes in
    ``controller.quorum.bootstrap.servers`` (default: all). Returns the
    paths and the controller ports."""
    ports = dict(zip(ids, free_ports(len(ids))))
    servers = ",".join(f"127.0.0.1:{ports[i]}" for i in (bootstrap or ids))
    paths = {}
    for node_id in ids:
        props = {
            "process.roles": "controller",
            "node.id": str(node_id),
            "listeners": f"CONTROLLER://127.0.0.1:{ports[node_id]}",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": servers,
            "metadata.log.dir": str(root / f"node-{node_id}"),
            "controller.quorum.election.timeout.ms": "500",
            "controller.quorum.fetch.timeout.ms": "1000",
            **(extra or {}),
        }
        path = root / f"server-{node_id}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        paths[node_id] = path
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


def directory_id(root: Path, node_id: int) -> uuid.UUID:
    meta = MetaProperties.read(root / f"node-{node_id}" / "meta.properties")
    assert meta.directory_id is not None
    return meta.directory_id


async def add_voter(address: tuple[str, int], node_id: int, directory: uuid.UUID, port: int,
                    cluster_id: str = CLUSTER_ID, timeout_ms: int = 10_000) -> Any:
    """AddRaftVoter to ``address``: the response body."""
    client = PeerClient(*address, client_id="test-admin", request_timeout_ms=timeout_ms)
    try:
        _, body = await client.request(ApiKey.ADD_RAFT_VOTER, lambda v: add_req.AddRaftVoterRequest(
            cluster_id=cluster_id, timeout_ms=timeout_ms, voter_id=node_id, voter_directory_id=directory,
            listeners=[add_req.Listener(name="CONTROLLER", host="127.0.0.1", port=port)]))
        return body
    finally:
        await client.aclose()


async def remove_voter(address: tuple[str, int], node_id: int, directory: uuid.UUID,
                       cluster_id: str = CLUSTER_ID, timeout_ms: int = 10_000) -> Any:
    client = PeerClient(*address, client_id="test-admin", request_timeout_ms=timeout_ms)
    try:
        _, body = await client.request(ApiKey.REMOVE_RAFT_VOTER, lambda v: remove_req.RemoveRaftVoterRequest(
            cluster_id=cluster_id, voter_id=node_id, voter_directory_id=directory))
        return body
    finally:
        await client.aclose()
