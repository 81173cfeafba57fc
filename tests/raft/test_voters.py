"""VoterSet: majority math and voter keys (KIP-595, KIP-853). ``controller.quorum.voters``
has one parser, :func:`kraft.config.parse_voters` (tests/node/test_config.py)."""

from __future__ import annotations

import uuid

import pytest

from kraft.raft.voters import ReplicaKey, VoterNode, VoterSet


@pytest.mark.parametrize(("size", "majority"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (7, 4)])
def test_majority_is_more_than_half_of_the_voters(size: int, majority: int) -> None:
    assert VoterSet.from_ids(range(1, size + 1)).majority_size == majority


def test_a_static_voter_matches_any_directory_id() -> None:
    """KIP-853: a voter configured without a directory id is identified by its id."""
    voters = VoterSet.from_ids([1, 2, 3])
    assert voters.is_voter(ReplicaKey(2, uuid.uuid4()))
    assert not voters.is_voter(ReplicaKey(4))


def test_a_voter_with_a_directory_id_rejects_a_reformatted_replica() -> None:
    """KIP-853: same node id, new log directory => not the same voter."""
    directory = uuid.uuid4()
    voters = VoterSet.of([VoterNode(ReplicaKey(1, directory))])
    assert voters.is_voter(ReplicaKey(1, directory))
    assert not voters.is_voter(ReplicaKey(1, uuid.uuid4()))
    assert voters.is_only_voter(ReplicaKey(1, directory))


def test_an_empty_voter_set_is_a_replica_that_has_not_read_any_voters_yet() -> None:
    """KIP-853: an observer formatted without --initial-controllers knows no
    voters until it fetches a VotersRecord; it is a voter of nothing."""
    empty = VoterSet.empty()
    assert len(empty) == 0 and not empty.is_voter(ReplicaKey(1))
    assert VoterSet.from_ids([1]).remove_voter(ReplicaKey(1)) is None
