"""``kraft doctor`` on ``quorum-state`` (Kafka's ``FileQuorumStateStore``
file): silent about a sound one, one ERROR line for one that ``kraft node
start`` stops on -- not JSON, or in a state no replica writes (a negative
epoch; Kafka's ``ElectionState`` is never in one) -- naming the cause and
the way out. Real directories (``kraft storage format``), the real ``kraft
doctor``."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.records.state_files import QUORUM_STATE_FILE
from kraft.tools.doctor import doctor_command
from tests.harness import cli
from tests.harness.configs import make_configs

FIX = ("fix: move {path} away: the node then starts unattached, with no vote, in its log's latest epoch "
       "(as Kafka does when quorum-state is behind the log)")


def _doctor(directory: Path) -> tuple[int | None, list[str]]:
    result = cli.invoke(["--dir", str(directory)], command=doctor_command)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, [line for line in result.stdout.splitlines() if "quorum-state" in line]


def _partition(tmp_path: Path) -> Path:
    make_configs(tmp_path, [1])
    partition = tmp_path / "node-1" / "__cluster_metadata-0"
    partition.mkdir(exist_ok=True)
    return partition


def test_a_sound_quorum_state_is_not_mentioned(tmp_path: Path) -> None:
    path = _partition(tmp_path) / QUORUM_STATE_FILE
    path.write_text('{"leaderId":1,"leaderEpoch":3,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
                    '"data_version":1}')
    assert _doctor(tmp_path / "node-1")[1] == []


@pytest.mark.parametrize(("text", "reason"), [
    ('{"leaderId":-1,"leaderEpoch":-3,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
     "invalid election state: negative epoch -3"),
    ('{"leaderId":-1,"leaderEpo', "not valid JSON: "),
])
def test_a_quorum_state_the_node_stops_on_is_one_error_line(tmp_path: Path, text: str, reason: str) -> None:
    """The negative epoch is the one ``kraft node start`` refuses with
    "move it away" (tests/node/test_start_failures.py); the torn JSON a
    stray write could leave stops it too."""
    path = _partition(tmp_path) / QUORUM_STATE_FILE
    path.write_text(text)
    exit_code, [line] = _doctor(tmp_path / "node-1")
    assert exit_code == 1  # errors found
    assert line.startswith(f"ERROR   quorum-state-unreadable: {path} cannot be used ({reason}"), line
    assert ", so kraft node start stops on it (" in line
    assert line.endswith(FIX.format(path=path)), line
