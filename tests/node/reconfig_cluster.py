"""Helpers for KIP-853 dynamic-quorum node tests (their configs and formats:
:func:`tests.harness.configs.write_configs` and
:func:`~tests.harness.configs.format_node`): a node's directory id and a
small admin client for AddRaftVoter / RemoveRaftVoter."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from kraft.messages.generated import add_raft_voter_request as add_req
from kraft.messages.generated import remove_raft_voter_request as remove_req
from kraft.records.state_files import MetaProperties
from kraft.wire.apis import ApiKey
from kraft.wire.network_client import PeerClient
from tests.harness.configs import CLUSTER_ID


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
