"""``kraft node start`` failures as an operator meets them, in real
processes: ONE line on stderr naming the cause, the file/key/port and the
fix, no traceback (unless ``--debug``), and the exit code of the failure's
class (kraft/errors.py: 3 config, 4 storage, 5 network). One process per log
directory: Kafka's ``LogManager.lockLogDirs`` ``.lock``, which a ``kill -9``
never leaves stale."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.errors import EXIT_CONFIG, EXIT_NETWORK, EXIT_STORAGE
from tests.harness import cli
from tests.harness.poll import until
from tests.ports import free_port

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"


def write_config(tmp_path: Path, port: int, extra: str = "") -> Path:
    config = tmp_path / "controller.properties"
    config.write_text(
        "process.roles=controller\nnode.id=1\n"
        f"controller.quorum.voters=1@127.0.0.1:{port}\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
        f"controller.listener.names=CONTROLLER\nmetadata.log.dir={tmp_path / 'data'}\n" + extra)
    return config


def _format(config: Path) -> None:
    result = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER)
    assert result.returncode == 0, result.stderr


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The failure's one line: stderr's only line not written by logging."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


def test_missing_config_file_is_a_config_failure(tmp_path: Path) -> None:
    result = cli.run("node", "start", "-c", str(tmp_path / "nope.properties"))
    assert result.returncode == EXIT_CONFIG
    line = _error_line(result)
    assert str(tmp_path / "nope.properties") in line and "No such file or directory" in line


def test_bad_value_names_the_key(tmp_path: Path) -> None:
    config = write_config(tmp_path, free_port(), "controller.quorum.election.timeout.ms=soon\n")
    result = cli.run("node", "start", "-c", str(config))
    assert result.returncode == EXIT_CONFIG
    assert "controller.quorum.election.timeout.ms" in _error_line(result)


def test_unformatted_directory_names_it_and_the_format_command(tmp_path: Path) -> None:
    config = write_config(tmp_path, free_port())
    result = cli.run("node", "start", "-c", str(config))
    assert result.returncode == EXIT_STORAGE
    line = _error_line(result)
    assert str(tmp_path / "data") in line and "kraft storage format" in line


@pytest.mark.parametrize(("content", "cause"), [
    ('{"leaderId":-1,"leaderEpoch":-3,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
     "negative epoch -3"),
    ('{"leaderId":-1,"leaderEpoch":4,"vot', "not valid JSON"),
], ids=["negative-epoch", "torn"])
def test_a_damaged_quorum_state_names_the_file_and_the_way_out(tmp_path: Path, content: str, cause: str) -> None:
    """A ``quorum-state`` no replica writes (Kafka's ``ElectionState`` is never
    in a negative epoch) or one cut mid-write stops the start with one line
    naming the file, the cause and the way out, not a traceback and not a
    silent restart at epoch 0."""
    config = write_config(tmp_path, free_port())
    _format(config)
    state = tmp_path / "data" / "__cluster_metadata-0" / "quorum-state"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(content)
    result = cli.run("node", "start", "-c", str(config))
    assert result.returncode == EXIT_STORAGE
    line = _error_line(result)
    assert str(state) in line and cause in line and "move it away" in line
    assert "Traceback" not in result.stderr


def test_port_in_use_names_the_port_and_the_key(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = write_config(tmp_path, port)
        _format(config)
        result = cli.run("node", "start", "-c", str(config))
    assert result.returncode == EXIT_NETWORK
    line = _error_line(result)
    assert f"127.0.0.1:{port}" in line and "listeners" in line and "Address already in use" in line
    # --debug: the same failure with its traceback, for a bug report.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        debug = cli.run("--debug", "node", "start", "-c", str(config))
        at_debug_level = cli.run("node", "start", "-c", str(config), "--log-level", "DEBUG")
    assert debug.returncode == EXIT_NETWORK and "Traceback" in debug.stderr
    assert at_debug_level.returncode == EXIT_NETWORK and "Traceback" in at_debug_level.stderr


def _logged(path: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    """Until ``text`` is in ``path``; the output if the process exits first."""
    def seen() -> bool:
        assert proc.poll() is None, path.read_text(errors="replace")
        return text in path.read_text(errors="replace")
    until(f"{text!r} in {path}", seen, detail=lambda: path.read_text(errors="replace"))


def test_one_process_per_log_directory_and_a_kill_9_leaves_no_stale_lock(tmp_path: Path) -> None:
    config = write_config(tmp_path, free_port())
    _format(config)
    out = tmp_path / "first.out"
    with open(out, "wb") as sink:
        first = subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config)],
                                 stdout=sink, stderr=subprocess.STDOUT)
    try:
        _logged(out, "listening on", first)
        # A second node on the same directory (another port, same data).
        (tmp_path / "second").mkdir()
        second_config = write_config(tmp_path / "second", free_port())
        second_config.write_text(second_config.read_text().replace(str(tmp_path / "second" / "data"),
                                                                   str(tmp_path / "data")))
        second = cli.run("node", "start", "-c", str(second_config))
        assert second.returncode == EXIT_STORAGE
        line = _error_line(second)
        assert str(tmp_path / "data") in line and f"process {first.pid}" in line
        # The storage tool refuses to write into it too.
        (tmp_path / "data" / "meta.properties").rename(tmp_path / "meta.aside")
        formatting = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER)
        (tmp_path / "meta.aside").rename(tmp_path / "data" / "meta.properties")
        assert formatting.returncode == EXIT_STORAGE and f"process {first.pid}" in formatting.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert (tmp_path / "data" / ".lock").exists()  # left behind by kill -9 ...
    with open(tmp_path / "restart.out", "wb") as sink:
        restart = subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config)],
                                   stdout=sink, stderr=subprocess.STDOUT)
    try:
        _logged(tmp_path / "restart.out", "listening on", restart)  # ... and blocks nothing
    finally:
        restart.send_signal(signal.SIGTERM)
        assert restart.wait(timeout=60) == 0
    assert (tmp_path / "data" / ".lock").read_text() == ""  # released on a clean stop
    assert os.path.exists(tmp_path / "data" / "meta.properties")


def test_a_directory_formatted_before_kafka_3_7_gets_a_directory_id_once(tmp_path: Path) -> None:
    """Kafka's ``KafkaRaftServer.initializeLogDirs``: a meta.properties
    without directory.id gets one at start, written back, logged once."""
    config = write_config(tmp_path, free_port())
    _format(config)
    meta = tmp_path / "data" / "meta.properties"
    meta.write_text("".join(line + "\n" for line in meta.read_text().splitlines()
                            if not line.startswith("directory.id=")))
    ids = []
    for attempt in range(2):
        out = tmp_path / f"start-{attempt}.out"
        with open(out, "wb") as sink:
            proc = subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config)],
                                    stdout=sink, stderr=subprocess.STDOUT)
        try:
            _logged(out, "listening on", proc)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        [line] = [x for x in meta.read_text().splitlines() if x.startswith("directory.id=")]
        ids.append(line.split("=", 1)[1])
        assigned = [x for x in out.read_text().splitlines() if "had no directory.id" in x]
        assert len(assigned) == (1 if attempt == 0 else 0), out.read_text()
        if attempt == 0:
            assert f"wrote directory.id={ids[0]}" in assigned[0]
    assert ids[0] == ids[1] and len(ids[0]) == 22


async def test_a_failed_start_in_process_releases_the_directory(tmp_path: Path) -> None:
    """Embedded use: a start that fails on a damaged quorum-state leaves the
    directory unlocked, so fixing the file and starting again works."""
    import pytest
    import trio

    from kraft.config import NodeConfig
    from kraft.dirlock import DirectoryLock
    from kraft.node.node import KraftNode
    from kraft.records.errors import StateFileError

    config = write_config(tmp_path, free_port())
    _format(config)
    state = tmp_path / "data" / "__cluster_metadata-0" / "quorum-state"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("{garbage")
    with pytest.raises(StateFileError, match="quorum-state"):
        await KraftNode(NodeConfig.load(config)).run()
    with DirectoryLock(tmp_path / "data"):
        pass  # not held any more
    state.unlink()
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = KraftNode(NodeConfig.load(config))
            await nursery.start(node.run)
            await node.shutdown()
