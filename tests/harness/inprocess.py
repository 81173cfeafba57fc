"""The in-process cluster: real KraftNodes (real files, real sockets on
127.0.0.1) in one trio run, started from configs of :mod:`tests.harness.configs`.

:func:`start` starts one node, :func:`start_all` a node per config,
:func:`running` a whole quorum until every node knows its leader
(:class:`InProcessCluster`); :func:`leader_of`, :func:`append_until_ok`,
:func:`history` and :func:`peer` act on running nodes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from kraft.config import NodeConfig
from kraft.node.fault import RaisingFaultHandler
from kraft.node.node import CommittedBatch, KraftNode, SnapshotLoaded
from kraft.wire.network_client import PeerClient
from tests.harness.configs import load
from tests.harness.poll import until_async


def node_config(path: Path, **quorum: Any) -> NodeConfig:
    """The node's config from its server.properties, with QuorumConfig
    fields replaced (knobs Kafka has but server.properties parsing does not
    expose, e.g. ``fetch_snapshot_max_bytes``)."""
    config = load(path)
    if quorum:
        config = dataclasses.replace(config, quorum=dataclasses.replace(config.quorum, **quorum))
    return config


async def start(nursery: trio.Nursery, config: NodeConfig) -> KraftNode:
    # A fatal disk fault ends the node's task, not the test process.
    node = KraftNode(config, fault_handler=RaisingFaultHandler())
    await nursery.start(node.run)
    return node


async def start_all(nursery: trio.Nursery, paths: Mapping[int, Path]) -> dict[int, KraftNode]:
    """A node per config (node id -> server.properties), each started in turn."""
    return {node_id: await start(nursery, node_config(path)) for node_id, path in paths.items()}


async def leader_of(nodes: Iterable[KraftNode]) -> KraftNode:
    """The node that is leader (polls; bound it with ``trio.fail_after``)."""
    nodes = list(nodes)
    return await until_async("a leader", lambda: next(
        (node for node in nodes
         if node.raft_driver is not None and node.role == "leader" and node.raft_driver.storage_error is None), None),
        interval_s=0.01)


async def append_until_ok(nodes: Iterable[KraftNode], records: list[bytes]) -> int:
    """Append through whoever leads, retrying across leader changes: the
    committed offset of the last record."""
    from kraft.raft.errors import NotLeaderError

    nodes = list(nodes)
    while True:
        leader = await leader_of(nodes)
        try:
            return await leader.append(records)
        except NotLeaderError:
            await trio.sleep(0.05)


async def history(node: KraftNode, until_offset: int, start_offset: int | None = None) -> tuple[list[Any], dict[int, bytes]]:
    """Listen from ``start_offset`` until the batch holding ``until_offset``:
    (the items received, offset -> value of every data record in batches)."""
    items: list[Any] = []
    records: dict[int, bytes] = {}
    async for item in node.committed_batches(start_offset):
        items.append(item)
        if isinstance(item, SnapshotLoaded):
            if item.snapshot_id.offset > until_offset:
                break
            continue
        assert isinstance(item, CommittedBatch)
        if not item.is_control:
            for i, value in enumerate(item.records):
                records[item.base_offset + i] = value
        if item.last_offset >= until_offset:
            break
    return items, records


def peer(node: KraftNode) -> PeerClient:
    """A client connected to the node's controller listener."""
    port = next(iter(node.ports.values()))
    return PeerClient("127.0.0.1", port, client_id="test-peer", request_timeout_ms=5000)


@dataclasses.dataclass
class InProcessCluster:
    """Running nodes of one quorum and the leader they all know."""

    nodes: dict[int, KraftNode]
    voters: list[int]
    leader_id: int

    @property
    def leader(self) -> KraftNode:
        return self.nodes[self.leader_id]

    def port(self, node_id: int) -> int:
        return self.nodes[node_id].ports["CONTROLLER"]

    def a_follower(self) -> int:
        return next(i for i in self.voters if i != self.leader_id)


@asynccontextmanager
async def running(paths: Mapping[int, Path], voters: list[int], *, observers: int = 0,
                  advertised_apis: dict[int, tuple[int, int]] | None = None) -> AsyncIterator[InProcessCluster]:
    """Run the nodes of ``paths`` until the leader has heard from every voter
    and ``observers`` observers (so DescribeQuorum has them all) and every
    node knows it. ``advertised_apis`` replaces what their ApiVersions advertise."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = {i: KraftNode(load(path), advertised_apis=advertised_apis) for i, path in paths.items()}
            for node in nodes.values():
                await nursery.start(node.run)
            while True:
                leader = next((i for i in voters if nodes[i].role == "leader"), None)
                if leader is not None:
                    d = nodes[leader].raft_driver.core.describe_quorum(int(time.time() * 1000))  # type: ignore[union-attr]
                    if (d is not None and d.high_watermark > 0
                            and all(r.log_end_offset > 0 for r in (*d.voters, *d.observers))
                            and len(d.observers) == observers
                            and all(n.leader.leader_id == leader for n in nodes.values())):
                        break
                await trio.sleep(0.02)
            yield InProcessCluster(nodes, voters, leader)
            nursery.cancel_scope.cancel()
