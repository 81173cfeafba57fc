"""What every handler family shares: the current-leader fields of a
response, and error answers for any request of the core's RPCs."""

from __future__ import annotations

from typing import TypedDict

from kraft.raft.errors import Errors
from kraft.raft.events import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    RaftRequest,
    RaftResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.raft.voters import Endpoints


class LeaderFields(TypedDict):
    """The current-leader fields every KRaft response carries."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints


def partition_error_response(request: RaftRequest, error: Errors, common: LeaderFields) -> RaftResponse:
    """A partition-level error answer to a Vote, BeginQuorumEpoch,
    EndQuorumEpoch or FetchSnapshot request, carrying our epoch and leader."""
    match request:
        case VoteRequest():
            return VoteResponse(partition_error=error, **common)
        case BeginQuorumEpochRequest():
            return BeginQuorumEpochResponse(partition_error=error, **common)
        case EndQuorumEpochRequest():
            return EndQuorumEpochResponse(partition_error=error, **common)
        case FetchSnapshotRequest():
            return FetchSnapshotResponse(partition_error=error, **common)
    raise TypeError(f"not a request with a partition-level error: {request!r}")


def top_level_error_response(request: RaftRequest, error: Errors) -> RaftResponse:
    """A top-level error answer (cluster id or partition mismatch)."""
    match request:
        case VoteRequest():
            return VoteResponse(error=error)
        case BeginQuorumEpochRequest():
            return BeginQuorumEpochResponse(error=error)
        case EndQuorumEpochRequest():
            return EndQuorumEpochResponse(error=error)
        case FetchRequest():
            return FetchResponse(error=error)
        case FetchSnapshotRequest():
            return FetchSnapshotResponse(error=error)
    raise TypeError(f"not a request: {request!r}")
