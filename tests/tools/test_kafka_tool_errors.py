"""The error runs of real Kafka 4.1.0's and 4.0.0's tools recorded in
``fixtures/real-tool-outputs/kafka-{4.1.0,4.0.0}-cli.jsonl``, replayed
(4.0.0's with ``--kafka-version 4.0``) against ``kraft dump-log``, ``kraft shell``, ``kraft quorum`` and
``kraft features`` in a scratch directory holding the record's inputs.

stdout and the exit status are Kafka's. Where Kafka died with a Java stack
trace or printed admin-client log lines, we print ONE line on stderr naming
the cause (README "Exit codes and errors"); the test checks it is one line and
names what Kafka's exception named. Kafka's code: ``DumpLogSegments.dumpLog``
(``Long.parseLong`` of a segment's name, ``Snapshots.parse`` of a snapshot's),
``DumpLogSegments.main`` ("Ignoring unknown file"), ``MetadataShell.run``,
``MetadataQuorumCommand.handleDescribeStatus`` and ``FeatureCommand`` (a
bootstrap controller with nothing listening: ``TimeoutException`` after
``default.api.timeout.ms``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import golden

from tests.harness import cli

UNREACHABLE = "127.0.0.1:21499"  # what Kafka was pointed at; replaced by a port of ours


@dataclass(frozen=True)
class Expect:
    #: a text our single stderr line contains; None: Kafka's stderr byte for byte
    stderr_names: str | None
    #: our exit status where it deliberately differs from Kafka's (with why)
    rc: int | None = None
    why: str = ""


CASES: dict[tuple[str, ...], Expect] = {
    ("kafka-dump-log.sh", "--files", "does-not-exist.log", "--cluster-metadata-decoder"):
        Expect('For input string: "does-not-exist"'),
    ("kafka-dump-log.sh", "--files", "garbage.log", "--cluster-metadata-decoder"):
        Expect('For input string: "garbage"'),
    ("kafka-dump-log.sh", "--files", "garbage.log", "--print-data-log"):
        Expect('For input string: "garbage"'),
    # Kafka: StringIndexOutOfBoundsException in Snapshots.parse (name too short).
    ("kafka-dump-log.sh", "--files", "garbage.checkpoint", "--cluster-metadata-decoder"):
        Expect("Cannot dump garbage.checkpoint: a snapshot is named"),
    ("kafka-dump-log.sh", "--files", "garbage.txt"): Expect(None),
    ("kafka-metadata-shell.sh", "--snapshot", "does-not-exist.checkpoint", "ls", "/"):
        Expect("does-not-exist.checkpoint"),
    ("kafka-metadata-shell.sh", "--snapshot", "garbage.checkpoint", "ls", "/"):
        Expect("garbage.checkpoint is not a metadata snapshot", rc=1,
               why="Kafka 4.0.0 hangs on a 14-byte non-Kafka file (killed after 120 s); we fail at once"),
    ("kafka-metadata-shell.sh", "ls", "/"):
        Expect("give exactly one of --snapshot, --directory or --bootstrap-controller", rc=2,
               why="a missing source is a usage error (click, exit status 2), not Kafka's RuntimeException"),
    ("kafka-metadata-quorum.sh", "--bootstrap-controller", UNREACHABLE, "--command-config",
     "short-timeout.properties", "describe", "--status"):
        Expect(UNREACHABLE, rc=5, why="nothing answering is the network class (README exit codes), not a refusal"),
    ("kafka-features.sh", "--bootstrap-controller", UNREACHABLE, "--command-config",
     "short-timeout.properties", "describe"):
        Expect(UNREACHABLE, rc=5, why="nothing answering is the network class (README exit codes), not a refusal"),
}

COMMAND = {
    "kafka-dump-log.sh": "dump-log",
    "kafka-metadata-shell.sh": "shell",
    "kafka-metadata-quorum.sh": "quorum",
    "kafka-features.sh": "features",
}


@golden.replays("cli", "tests/tools/test_kafka_tool_errors.py")
def replayed(record: dict[str, Any]) -> bool:
    return (record["tool"], *record["args"]) in CASES


RECORDS = [(version, record) for version in golden.VERSIONS
           for record in golden.selected(golden.name("cli", version), replayed)]


@pytest.fixture
def refused_address() -> Iterator[str]:
    """A loopback port that is bound but not listening: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize(
    "version,record",
    [pytest.param(v, r, id=f"{v}:" + " ".join([r["tool"], *r["args"]])) for v, r in RECORDS],
)
def test_kafka_error_run_is_reproduced(version: str, record: dict[str, Any] | None, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch, refused_address: str) -> None:
    assert record is not None
    expect = CASES[(record["tool"], *record["args"])]
    monkeypatch.chdir(tmp_path)
    for name, text in (record.get("inputs") or {}).items():
        Path(name).write_text(text)
    args = [refused_address if a == UNREACHABLE else a for a in record["args"]]
    result = cli.invoke([COMMAND[record["tool"]], *golden.release_args(version), *args])
    assert result.stdout == (record["stdout"] or ""), result.stdout
    assert result.exit_code == (record["rc"] if expect.rc is None else expect.rc), result.stderr
    if expect.stderr_names is None:
        assert result.stderr == record["stderr"]
        return
    if result.exit_code == 2:  # click's usage error: usage lines, then "Error: ..."
        assert result.stderr.endswith(f"Error: {expect.stderr_names}\n"), result.stderr
        return
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr
    assert expect.stderr_names.replace(UNREACHABLE, refused_address) in result.stderr, result.stderr


@pytest.mark.parametrize("command", [["quorum", "describe", "--status"], ["features", "describe"]])
def test_a_bootstrap_server_with_nothing_listening(command: list[str], refused_address: str) -> None:
    """Not recorded (Kafka's admin client answers it as the --bootstrap-controller
    run above: log lines, then a TimeoutException): one line naming the
    address, exit status 5 (nobody answered: the network class)."""
    result = cli.invoke([command[0], "--bootstrap-server", refused_address, *command[1:]])
    assert (result.stdout, result.exit_code) == ("", 5), result.stderr
    assert len(result.stderr.splitlines()) == 1 and refused_address in result.stderr, result.stderr
