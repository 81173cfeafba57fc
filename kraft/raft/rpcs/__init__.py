"""The raft RPCs, one module each (``<name>_rpc.py``), and the registry built from them.
May import kraft.raft below the core (events, roles, the handler families' shared steps), kraft.records views, kraft.messages' generated codecs, kraft.wire's api keys, error codes and client software name; never the core, its polling, its epoch gate or its answer dispatch, nor kraft.wire's transport (pyproject's sans-io contract).

Each module holds everything about its RPC: the request and response
classes the core sees, and one :class:`~kraft.raft.rpcs.rpc_unit.RaftRpc` --
versions, wire mapping both ways, error answer, timeouts, where a request
comes from, metrics name -- with the core's side of it: the request it
sends, its handlers (on the family's shared steps in
:mod:`kraft.raft.families`). Adding a field or a version touches that
module and its test (``tests/raft/test_rpcs.py``) only. This package
re-exports the message classes. The node and the core look an RPC up in
this registry (by api key, request or response type) and never list the
RPCs themselves; the registry holds each as a
:class:`~kraft.raft.rpcs.rpc_unit.RegisteredRpc`, on the base event types.
"""

from __future__ import annotations

from kraft.raft.rpcs import (
    add_raft_voter_rpc,
    api_versions_rpc,
    begin_quorum_epoch_rpc,
    end_quorum_epoch_rpc,
    fetch_rpc,
    fetch_snapshot_rpc,
    remove_raft_voter_rpc,
    update_raft_voter_rpc,
    vote_rpc,
)
from kraft.raft.rpcs.vote_rpc import VoteRequest, VoteResponse
from kraft.raft.rpcs.begin_quorum_epoch_rpc import BeginQuorumEpochRequest, BeginQuorumEpochResponse
from kraft.raft.rpcs.end_quorum_epoch_rpc import EndQuorumEpochRequest, EndQuorumEpochResponse
from kraft.raft.rpcs.fetch_rpc import FetchRequest, FetchResponse
from kraft.raft.rpcs.fetch_snapshot_rpc import FetchSnapshotRequest, FetchSnapshotResponse
from kraft.raft.rpcs.add_raft_voter_rpc import AddRaftVoterRequest, AddRaftVoterResponse
from kraft.raft.rpcs.remove_raft_voter_rpc import RemoveRaftVoterRequest, RemoveRaftVoterResponse
from kraft.raft.rpcs.update_raft_voter_rpc import UpdateRaftVoterRequest, UpdateRaftVoterResponse
from kraft.raft.rpcs.api_versions_rpc import ApiVersionsRequest, ApiVersionsResponse
from kraft.raft.events import RaftRequest, RaftResponse
from kraft.raft.rpcs.rpc_unit import RaftRpc, RegisteredRpc

__all__ = [
    "AddRaftVoterRequest",
    "AddRaftVoterResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "BY_API_KEY",
    "BY_REQUEST",
    "BY_RESPONSE",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "CORE_API_KEYS",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "RPCS",
    "RaftRpc",
    "RegisteredRpc",
    "RemoveRaftVoterRequest",
    "RemoveRaftVoterResponse",
    "UpdateRaftVoterRequest",
    "UpdateRaftVoterResponse",
    "VoteRequest",
    "VoteResponse",
    "VoterChangeRequest",
    "VoterChangeResponse",
]

#: Every raft RPC the node speaks.
RPCS: tuple[RegisteredRpc, ...] = (
    vote_rpc.RPC,
    begin_quorum_epoch_rpc.RPC,
    end_quorum_epoch_rpc.RPC,
    fetch_rpc.RPC,
    fetch_snapshot_rpc.RPC,
    add_raft_voter_rpc.RPC,
    remove_raft_voter_rpc.RPC,
    update_raft_voter_rpc.RPC,
    api_versions_rpc.RPC,
)

BY_API_KEY: dict[int, RegisteredRpc] = {rpc.api_key: rpc for rpc in RPCS}
BY_REQUEST: dict[type[RaftRequest], RegisteredRpc] = {rpc.request_type: rpc for rpc in RPCS}
BY_RESPONSE: dict[type[RaftResponse], RegisteredRpc] = {rpc.response_type: rpc for rpc in RPCS}
#: The api keys whose requests the core answers.
CORE_API_KEYS = frozenset(rpc.api_key for rpc in RPCS if rpc.to_core)

VoterChangeRequest = AddRaftVoterRequest | RemoveRaftVoterRequest | UpdateRaftVoterRequest
VoterChangeResponse = AddRaftVoterResponse | RemoveRaftVoterResponse | UpdateRaftVoterResponse
