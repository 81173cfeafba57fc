"""What a directory recovery refuses still says about its quorum
(``records/damaged_log.py``), read from copies of real Kafka 4.0.0
directories: the remedy ``kraft node start`` prints is chosen from it
(``kraft/node/remedies.py``), as Kafka's ``KRaftControlRecordStateMachine``
would have read the voter set."""

from __future__ import annotations

import shutil
from pathlib import Path

from kraft.records.damaged_log import readable_kraft_control_state
from kraft.records.recovery import scan
from kraft.records.state_files import MetaProperties
from tests.conftest import fixture_path


def _copy(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    shutil.copytree(fixture_path("kafka-4.0-real", name), directory)
    return directory / "__cluster_metadata-0"


def test_a_dynamic_quorum_s_voters_are_read_from_a_log_with_a_corrupt_batch(tmp_path: Path) -> None:
    part = _copy(tmp_path, "controller1")
    for snapshot in part.glob("*.checkpoint"):
        snapshot.unlink()  # only the segment is left to say who the voters are
    segment = part / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    assert scan(memoryview(bytes(data)), 0).problem is not None  # recovery stops there
    state = readable_kraft_control_state(part)
    assert state.kraft_version == 1
    assert state.voters is not None and [v.voter_id for v in state.voters.voters] == [1, 2, 3]
    mine = MetaProperties.read(part.parent / "meta.properties").directory_id
    assert next(v.directory_id for v in state.voters.voters if v.voter_id == 1) == mine


def test_a_static_quorum_has_no_voter_set_in_its_log(tmp_path: Path) -> None:
    state = readable_kraft_control_state(_copy(tmp_path, "combined-static"))
    assert state.voters is None and state.kraft_version == 0
