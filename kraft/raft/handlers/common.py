"""What every handler family shares: the current-leader fields of a response."""

from __future__ import annotations

from typing import TypedDict

from kraft.raft.voters import Endpoints


class LeaderFields(TypedDict):
    """The current-leader fields every KRaft response carries."""

    leader_id: int
    leader_epoch: int
    leader_endpoints: Endpoints
