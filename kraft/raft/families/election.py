"""What the election RPCs share (Vote, BeginQuorumEpoch, EndQuorumEpoch;
KIP-595, KIP-996): the vote tally a role change names, and the successors'
election backoff after an EndQuorumEpoch.

Each RPC's own handlers are in its module (``kraft/raft/rpcs/vote_rpc.py``,
``begin_quorum_epoch_rpc.py``, ``end_quorum_epoch_rpc.py``), as Kafka's
``KafkaRaftClient.handleVoteRequest``/``handleVoteResponse`` and the
others.
"""

from __future__ import annotations

from kraft.raft.families.common import ElectionContext
from kraft.raft.roles import EpochElection
from kraft.raft.voters import ReplicaKey


def tally(votes: EpochElection) -> str:
    """A vote count as a role-change reason shows it."""
    return f"{len(votes.granted)} of {len(votes.voter_ids)} votes"


def end_epoch_election_backoff(ctx: ElectionContext, preferred: tuple[ReplicaKey, ...]) -> int:
    """The most caught-up successor starts at once, the others after a strict
    exponential backoff by their position."""
    position = len(preferred)
    local = ctx.local_key
    if local is not None:
        for i, key in enumerate(preferred):
            if key.id == local.id and (key.directory_id is None or key.directory_id == local.directory_id):
                position = i
                break
    return strict_exponential_election_backoff_ms(position, len(preferred), ctx.config.election_backoff_max_ms)


def strict_exponential_election_backoff_ms(position: int, total: int, backoff_max_ms: int) -> int:
    """Kafka's ``strictExponentialElectionBackoffMs``: 0 for the first preferred
    successor, ``max >> (total - 1) << (position - 1)`` (capped at ``max``) for
    the others, ``max`` for a replica not in the list."""
    if position == 0:
        return 0
    if position < 0 or position >= total:
        return backoff_max_ms
    base = backoff_max_ms >> (total - 1)
    return min(backoff_max_ms, base << (position - 1))
