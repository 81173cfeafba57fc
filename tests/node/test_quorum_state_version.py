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

from kraft.node.raft_client import ElectionStateStore
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
