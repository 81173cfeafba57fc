"""In-process node helpers for the node tests: real KraftNodes (real files,
real sockets on 127.0.0.1) in one trio run."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio

from kraft.config import NodeConfig
from kraft.node.fault import RaisingFaultHandler
from kraft.node.node import CommittedBatch, KraftNode, SnapshotLoaded
from kraft.wire.network_client import PeerClient
from tests.harness.poll import until_async
from tests.node.cluster import load


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
