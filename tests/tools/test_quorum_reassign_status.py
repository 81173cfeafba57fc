"""``kraft quorum describe --status`` with a KIP-642 reassignment in
progress: the extra lines after Kafka's, from the state file ``kraft quorum
reassign`` keeps, and none at all otherwise (the output stays Kafka's)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from kraft.messages.json_form import uuid_to_kafka
from kraft.admin_client.admin import QuorumInfo, ReplicaInfo
from kraft.tools.quorum import (
    ReassignmentProgress,
    format_reassignment,
    load_reassignment_state,
    reassignment_progress,
)

NOW = 1_000_000
CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"


def d(i: int) -> uuid.UUID:
    return uuid.UUID(int=i)


def replica(i: int, leo: int = 100) -> ReplicaInfo:
    return ReplicaInfo(i, d(i), leo, NOW - 10, NOW - 10)


def view(voters: list[int], observers: list[int] = (), leader: int = 1) -> QuorumInfo:  # type: ignore[assignment]
    endpoints = {i: (("CONTROLLER", "127.0.0.1", 9000 + i),) for i in voters}
    return QuorumInfo(leader, 7, 100, tuple(replica(i) for i in voters), tuple(replica(i) for i in observers),
                      endpoints, NOW)


def state(original: list[int], target: list[int], *, endpoints: bool = True) -> dict[str, object]:
    text = lambda ids: ",".join(f"{i}:{uuid_to_kafka(d(i))}" for i in ids)  # noqa: E731
    saved: dict[str, object] = {"cluster_id": CLUSTER, "original": text(original), "target": text(target)}
    if endpoints:
        saved["endpoints"] = {str(i): [["CONTROLLER", "127.0.0.1", 9000 + i]] for i in target}
    return saved


def test_growing_first_the_next_step_adds_a_caught_up_observer() -> None:
    progress = reassignment_progress(view([1, 2, 3], observers=[4, 5, 6]), state([1, 2, 3], [4, 5, 6]))
    assert progress == ReassignmentProgress((4, 5, 6), (4, 5, 6), (1, 2, 3),
                                            f"Adding controller 4 with directory id {uuid_to_kafka(d(4))}")
    assert format_reassignment(progress) == (
        "ReassignmentTarget:     [4, 5, 6]\n"
        "ReassignmentAdding:     [4, 5, 6]\n"
        "ReassignmentRemoving:   [1, 2, 3]\n"
        f"ReassignmentStep:       Adding controller 4 with directory id {uuid_to_kafka(d(4))}\n")


def test_halfway_the_leader_is_removed_last() -> None:
    progress = reassignment_progress(view([1, 2, 3, 4, 5, 6]), state([1, 2, 3], [4, 5, 6]))
    assert progress is not None and (progress.adding, progress.removing) == ((), (1, 2, 3))
    assert progress.step == f"Removing controller 2 with directory id {uuid_to_kafka(d(2))}"


def test_without_saved_listeners_the_step_says_what_is_missing() -> None:
    progress = reassignment_progress(view([1, 2, 3], observers=[4]), state([1, 2, 3], [1, 2, 3, 4], endpoints=False))
    assert progress is not None and progress.step.startswith("the listeners of controller 4 are unknown")


def test_a_target_nobody_runs_is_shown_as_blocked() -> None:
    progress = reassignment_progress(view([1, 2, 3]), {"target": "1,2,7"})
    assert progress is not None and progress.step.startswith("blocked: unknown replica 7")


def test_a_reached_target_shows_nothing() -> None:
    assert reassignment_progress(view([4, 5, 6], leader=4), state([1, 2, 3], [4, 5, 6])) is None


def test_the_state_file_of_another_cluster_or_none_is_no_reassignment(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert load_reassignment_state(path, CLUSTER) is None
    path.write_text(json.dumps(state([1], [2])))
    assert load_reassignment_state(path, CLUSTER) == state([1], [2])
    assert load_reassignment_state(path, "another-cluster") is None


@pytest.mark.parametrize("text", ["{", "[]", '{"original": "1"}'])
def test_an_unreadable_state_file_is_ignored_with_a_warning(tmp_path: Path, text: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    assert load_reassignment_state(path, CLUSTER) is None
    assert "Ignoring the reassignment state" in capsys.readouterr().err
