"""``kraft storage format`` and ``kraft node start`` share one check
(:mod:`kraft.log_dir_check`, :func:`kraft.config.metadata_log_dir`), so
each refuses the same configs and directories with the same line, exit
code and fix (issue 33, item 5). The issue's cases, each on the real
commands:

- no ``process.roles``: format succeeded, start refused;
- ``metadata.log.dir=`` (empty): start fell back to /tmp/kafka-logs and
  asked for a format, format refused;
- a log dir that is a regular file: "File exists" from format, "not
  formatted" from start;
- a garbage ``meta.properties``: "Failed to find version in
  meta.properties" with no fix;
- a controller missing from its static voters ran as an observer and a
  file starting with a UTF-8 byte order mark got "unknown config key
  ï»¿process.roles" (issue 44, item 1).

And ``kraft doctor --dir`` on a read-only file system (a tmpfs the test
mounts, remounts read-only and removes) reports what stops ``node start``
there (it said healthy).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kraft.errors import EXIT_CONFIG, EXIT_STORAGE
from tests.harness import cli
from tests.harness.configs import node_properties, properties_text, static_voters
from tests.ports import free_port

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def _config(tmp_path: Path, data: Path, drop: str = "", extra: str = "") -> Path:
    port = free_port()
    lines = node_properties(1, port, static_voters({1: port}, [1]), data)
    lines.pop(drop, None)
    path = tmp_path / "server.properties"
    path.write_text(properties_text(lines) + extra)
    return path


def _no_roles(tmp_path: Path) -> Path:
    return _config(tmp_path, tmp_path / "data", drop="process.roles")


def _empty_metadata_dir(tmp_path: Path) -> Path:
    return _config(tmp_path, tmp_path / "data", drop="metadata.log.dir", extra="metadata.log.dir=\n")


def _a_regular_file(tmp_path: Path) -> Path:
    (tmp_path / "data").write_text("not a directory\n")
    return _config(tmp_path, tmp_path / "data")


def _garbage_meta_properties(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "meta.properties").write_bytes(b"\x00\xff garbage\n")
    return _config(tmp_path, tmp_path / "data")


def _controller_not_a_voter(tmp_path: Path) -> Path:
    # The case: voter 2 at this node's own port, this node id 1.
    config = _config(tmp_path, tmp_path / "data")
    text = config.read_text()
    config.write_text(text.replace("controller.quorum.voters=1@", "controller.quorum.voters=2@"))
    return config


def _byte_order_mark(tmp_path: Path) -> Path:
    config = _config(tmp_path, tmp_path / "data")
    config.write_bytes(b"\xef\xbb\xbf" + config.read_bytes())
    return config


CASES: dict[str, tuple[Callable[[Path], Path], int, str]] = {
    # Kafka's KafkaConfig.validateValues,
    # validateControllerQuorumVotersMustContainNodeIdForKRaftController.
    "controller not among the voters": (
        _controller_not_a_voter, EXIT_CONFIG,
        "If process.roles contains the 'controller' role, the node id 1 must be included in the set of voters "
        "controller.quorum.voters={2} (add 1@host:port for this node, or set process.roles=broker"),
    "UTF-8 byte order mark": (_byte_order_mark, EXIT_CONFIG,
                              "starts with a UTF-8 byte order mark (bytes EF BB BF)"),
    "no process.roles": (_no_roles, EXIT_CONFIG, "process.roles: required (kraft runs process.roles=controller)"),
    "empty metadata.log.dir": (_empty_metadata_dir, EXIT_CONFIG,
                               "metadata.log.dir is set but empty: give the metadata log directory"),
    "log dir is a file": (_a_regular_file, EXIT_STORAGE, "is a file, not a directory: move the file away"),
    "garbage meta.properties": (_garbage_meta_properties, EXIT_STORAGE,
                                "is not a usable meta.properties (Failed to find version in meta.properties): "
                                "if this directory holds no other node's log, move it away"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_format_and_start_refuse_the_same_with_the_same_line(case: str, tmp_path: Path) -> None:
    make, code, words = CASES[case]
    config = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    formatted = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER_ID)
    started = cli.run("node", "start", "-c", str(config))
    for result in (formatted, started):
        assert "Traceback" not in result.stderr and "bug in kraft" not in result.stderr, result.stderr
        assert result.returncode == code, (case, result.returncode, result.stderr)
    line = [x for x in formatted.stderr.splitlines() if x.startswith("Error: ")]
    assert len(line) == 1 and words in line[0], formatted.stderr
    assert line[0] in started.stderr.splitlines(), (line, started.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # format wrote nothing
    assert not Path("/tmp/kafka-logs/meta.properties").exists() or case != "empty metadata.log.dir"


@pytest.fixture
def read_only_mount(tmp_path: Path) -> Iterator[Callable[[], None]]:
    """A tmpfs at ``tmp_path/mnt``; calling the fixture's value remounts it
    read-only. Unmounted and removed afterwards."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield lambda: subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_doctor_reports_a_directory_on_a_read_only_file_system(tmp_path: Path,
                                                               read_only_mount: Callable[[], None]) -> None:
    data = tmp_path / "mnt" / "data"
    config = _config(tmp_path, data)
    formatted = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER_ID)
    assert formatted.returncode == 0, formatted.stderr
    healthy = cli.run("doctor", "--dir", str(data))
    assert healthy.returncode == 0 and "log-dir-unwritable" not in healthy.stdout, healthy.stdout
    read_only_mount()
    doctor = cli.run("doctor", "--dir", str(data))
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert f"log-dir-unwritable: {data} cannot be written (read-only file system)" in doctor.stdout, doctor.stdout
    assert doctor.stdout.startswith("ERROR")
    assert "remount the file system read-write" in doctor.stdout
    started = cli.run("node", "start", "-c", str(config))  # what doctor warns of: the node does not start
    assert started.returncode == EXIT_STORAGE, started.stderr
    assert "Traceback" not in started.stderr and "bug in kraft" not in started.stderr, started.stderr
