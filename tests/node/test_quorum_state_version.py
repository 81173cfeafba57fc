"""``quorum-state`` is written in the form of the latest kraft.version in the
log, as Kafka's ``FileQuorumStateStore.writeElectionState(ElectionState,
KRaftVersion)`` writes ``kraftVersion.quorumStateVersion()``: data_version 0
(with the static voter ids) under kraft.version 0, data_version 1 (with
``votedDirectoryId``) from kraft.version 1 on -- also after an in-place
upgrade of a static quorum."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from kraft.node.raft_driver import ElectionStateStore
from kraft.raft.roles import ElectionState
from kraft.raft.voters import ReplicaKey
from kraft.records.state_files import QuorumStateFile


def test_the_data_version_follows_the_kraft_version(tmp_path: Path) -> None:
    path = tmp_path / "quorum-state"
    store = ElectionStateStore(QuorumStateFile(path), static_voters=[1, 2, 3], cluster_id="c")
    directory = uuid.UUID("2c6a52e6-3f5c-4c53-9b5b-8b3e0e8c2f41")
    state = ElectionState(5, None, ReplicaKey(2, directory))

    store.write(state, 0)
    v0 = json.loads(path.read_text())
    assert v0["data_version"] == 0 and [v["voterId"] for v in v0["currentVoters"]] == [1, 2, 3]
    assert "votedDirectoryId" not in v0
    assert store.read() == ElectionState(5, None, ReplicaKey(2))  # version 0 cannot hold the directory id

    store.write(state, 1)  # the same static quorum after kraft.version 0 -> 1
    v1 = json.loads(path.read_text())
    assert v1["data_version"] == 1 and "currentVoters" not in v1
    assert v1["votedDirectoryId"] != "AAAAAAAAAAAAAAAAAAAAAA"
    assert store.read() == state


def test_a_stored_state_no_replica_writes_is_an_error_naming_the_file(tmp_path: Path) -> None:
    """Kafka writes ``leaderEpoch`` >= 0 and ids >= 0, -1 for "none"
    (``ElectionState.toQuorumStateData``); anything else is damage, reported
    as one ``StateFileError`` (the node's one error line, exit code 4) rather
    than a silent fresh start at epoch 0 or a traceback."""
    import pytest

    from kraft.records.errors import StateFileError

    path = tmp_path / "quorum-state"
    store = ElectionStateStore(QuorumStateFile(path), static_voters=None, cluster_id="c")
    for fields, reason in [
        ('"leaderId":-1,"leaderEpoch":-3,"votedId":-1', "negative epoch -3"),
        ('"leaderId":-2,"leaderEpoch":4,"votedId":-1', "negative leader id -2"),
        ('"leaderId":-1,"leaderEpoch":4,"votedId":-7', "negative voted id -7"),
    ]:
        path.write_text('{%s,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}' % fields)
        with pytest.raises(StateFileError, match=reason) as info:
            store.read()
        assert info.value.path == str(path) and "move it away" in info.value.reason
    path.write_text('{"leaderId":2,"leaderEpoch":4,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
                    '"data_version":1}')
    assert store.read() == ElectionState(4, 2, ReplicaKey(2))  # -1 is "none"; a leader and a vote together is legal
