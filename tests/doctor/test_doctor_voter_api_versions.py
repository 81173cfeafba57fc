"""``kraft doctor`` on ``voter-api-versions``, kraft's own record of what each
voter last answered on ApiVersions (records/voter_api_versions.py):
silent about a sound file, one WARNING line naming a damaged one (the node
ignores it) with the way out. Real directories (``kraft storage format``),
the real ``kraft doctor``."""

from __future__ import annotations

from pathlib import Path


from kraft.records.voter_api_versions import VOTER_API_VERSIONS_FILE, RememberedAnswer, write_voter_api_versions
from kraft.tools.doctor import doctor_command
from tests.harness import cli
from tests.harness.configs import make_configs


def _doctor(directory: Path) -> list[str]:
    result = cli.invoke(["--dir", str(directory)], command=doctor_command)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return [line for line in result.stdout.splitlines() if "voter-api-versions" in line]


def test_a_sound_file_is_not_mentioned_and_a_damaged_one_is_one_line(tmp_path: Path) -> None:
    make_configs(tmp_path, [1])
    partition = tmp_path / "node-1" / "__cluster_metadata-0"
    partition.mkdir(exist_ok=True)
    path = write_voter_api_versions(partition, [RememberedAnswer(2, None, ()), RememberedAnswer(3, None, ())])
    assert _doctor(tmp_path / "node-1") == []
    path.write_text('{"version": 0, "voters": [{"id": 2}]}')
    [line] = _doctor(tmp_path / "node-1")
    assert line.startswith(f"WARNING voter-api-versions-unreadable: {path} (kraft's file, not Kafka's) cannot be "
                           "read: the node ignores it, as if no voter had answered ApiVersions before its start"), line
    assert line.endswith(f"fix: rm {path} (the node writes it again from the voters' next answers)"), line
    assert path.name == VOTER_API_VERSIONS_FILE
