"""``kraft shell`` as a user runs it (a real subprocess), on Kafka's files:
one-shot commands and exit codes, a session on stdin, ``--directory``,
``--at``, ``--diff``, and bad input (one line, non-zero, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fixture_path
from tests.golden import read_recorded
from tests.harness import cli


def fixture(*parts: str) -> Path:
    return fixture_path(*parts)


SNAPSHOT_358 = ("kafka-4.0-real", "broker4", "__cluster_metadata-0", "00000000000000000358-0000000001.checkpoint")


def test_one_shot_commands_print_what_kafka_prints() -> None:
    result = cli.run("shell", "--snapshot", str(fixture(*SNAPSHOT_358)), "cat", "/image/cluster/brokers/4")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("BrokerRegistration(id=4, epoch=8, incarnationId=gaLwHa2LToSYRfu9PRkzVA, ")


def test_a_failing_command_exits_1_and_still_prints_kafkas_line() -> None:
    """Kafka 4.0.0 prints the same line on stdout and exits 0; we exit 1."""
    result = cli.run("shell", "-s", str(fixture(*SNAPSHOT_358)), "cat", "/nope")
    assert (result.returncode, result.stdout) == (1, "cat: /nope: No such file or directory.\n")


@pytest.mark.parametrize("version,flags", [("4.1.0", ["--kafka-version", "4.1"]), ("4.0.0", ["--kafka-version", "4.0"])])
def test_a_session_on_stdin_prints_kafkas_banner_and_prompts(version: str, flags: list[str]) -> None:
    """The stdin session of each golden file, replayed whole: Kafka's banner, then
    '>> ' before each command's output (a dumb terminal, no echo)."""
    wanted = "fixtures:kafka-3.9-single-node/commit-4bef72a/data/bootstrap.checkpoint"
    records = read_recorded(f"kafka-{version}-metadata-shell.jsonl")
    records = [r for r in records if r["snapshot"] == wanted]
    head, commands = records[0], [r for r in records[1:] if r["mode"] == "stdin-session"]
    result = cli.run("shell", *flags, "--snapshot", str(fixture(*wanted[len("fixtures:"):].split("/"))),
                     input=head["stdin"])
    expected = head["stdout_banner"] + "".join(">> " + r["stdout"] for r in commands) + ">> "
    # Our own difference from Kafka (listed in the README): zkMigrationState.
    expected = (expected.replace("cat: /image/features/zkMigrationState: No such file or directory.\n", "NONE\n")
                .replace("zkMigrationState:\n", "zkMigrationState:\n  NONE\n"))
    assert result.stdout == expected
    assert result.returncode == 1  # the session's `cat /nope` and friends failed


def test_directory_at_and_diff_around_a_topic_creation() -> None:
    """Kafka 3.5 node1: payment-create-request (offset 5440) and
    delivery-create-request (5443) are created between offsets 5439 and 5445."""
    directory = str(fixture("kafka-3.5-three-node", "node1"))
    before = cli.run("shell", "--directory", directory, "--at", "5439", "ls", "/image/topics/byName")
    after = cli.run("shell", "--directory", directory, "--at", "5445", "ls", "/image/topics/byName")
    assert (before.returncode, before.stdout) == (0, "")
    assert (after.returncode, after.stdout) == (0, "delivery-create-request\npayment-create-request\n")
    at_time = cli.run("shell", "-d", directory, "--at", "2025-01-22T07:08:59.300Z", "ls", "/image/topics/byName")
    assert at_time.stdout == "payment-create-request\n"  # appended at ...59.261, the second at ...59.336
    diff = cli.run("shell", "--directory", directory, "--diff", "5439", "5445")
    assert diff.returncode == 0
    lines = diff.stdout.splitlines()
    assert "+ /image/topics/byName/payment-create-request/id: waOfnfkeQj2nhh7-Sgl6Cw" in lines
    assert "+ /image/topics/byName/delivery-create-request/name: delivery-create-request" in lines
    assert all(line.startswith("+ /image/topics/byName/") for line in lines)


def test_diff_shows_fencing_and_a_whole_directory_at_its_end() -> None:
    directory = str(fixture("kafka-3.5-three-node", "node1"))
    diff = cli.run("shell", "--directory", directory, "--diff", "6222", "6232")
    text = diff.stdout
    assert "~ /image/cluster/brokers/2\n" in text
    assert "    + BrokerRegistration(id=2, epoch=5431, " in text and "fenced=true, inControlledShutdown=false" in text
    latest = cli.run("shell", "--directory", directory, "cat", "/image/provenance")
    assert latest.stdout.startswith("offset 30637, epoch 190, ")  # the whole log, after the snapshot


def test_diff_inside_the_shell() -> None:
    """A TopicRecord alone (offset 19498): the topic, with no partition yet."""
    directory = str(fixture("kafka-3.5-three-node", "node1"))
    result = cli.run("shell", "-d", directory, "diff", "19497", "19498")
    assert (result.returncode, result.stdout) == (0, (
        "+ /image/topics/byName/delivery-create-response/id: ammo_r0fQ9mnxC4Q6FMD-g\n"
        "+ /image/topics/byName/delivery-create-response/name: delivery-create-response\n"))
    snapshot_only = cli.run("shell", "-s", str(fixture(*SNAPSHOT_358)), "diff", "1", "2")
    assert snapshot_only.returncode == 1
    assert snapshot_only.stdout == "diff: needs a metadata log directory: start the shell with --directory DIR\n"


@pytest.mark.parametrize("args,message", [
    (["--directory", "{tmp}"], "holds neither __cluster_metadata-0 nor metadata log segments or snapshots"),
    (["--snapshot", "{tmp}/garbage.checkpoint"], "is not a metadata snapshot"),
    (["--snapshot", "{tmp}/does-not-exist.checkpoint"], "no such file: "),
    (["--directory", "{node1}", "--at", "99999"], "offset 99999 is outside what "),
    (["--directory", "{node1}", "--at", "yesterday"], "'yesterday' is neither an offset nor an ISO-8601 time"),
    (["--directory", "{node1}", "--at", "1999-01-01T00:00:00Z"], "is before anything "),
])
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "garbage.checkpoint").write_text("not a snapshot")
    node1 = fixture("kafka-3.5-three-node", "node1")
    args = [a.format(tmp=tmp_path, node1=node1) for a in args]
    result = cli.run("shell", *args, "ls", "/")
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("Error: ") and message in result.stderr


def test_one_source_is_required() -> None:
    result = cli.run("shell", "ls")
    assert result.returncode == 2 and "exactly one of --snapshot, --directory or --bootstrap-controller" in result.stderr


@pytest.mark.parametrize("version,expected", [
    (None, "4.4.0\n1156b2752aaa28ea\n"),
    ("4.1", "4.1.0\n13f70256db3c994c\n"),
    ("4.0", "4.0.0\n985bc99521dd22bb\n"),
])
def test_local_names_the_kafka_release_printed_as(version: str | None, expected: str) -> None:
    """``LocalShellNode``: /local/version and /local/commitId are the release's
    (AppInfoParser), as the recorded 4.1.0 and 4.0.0 shells printed them; 4.4.0
    has no shell on Maven Central, so its pair is kafka-clients-4.4.0.jar's
    kafka/kafka-version.properties, what AppInfoParser reads."""
    flags = [] if version is None else ["--kafka-version", version]
    result = cli.run("shell", *flags, "-s", str(fixture(*SNAPSHOT_358)), "cat", "/local/version", "/local/commitId")
    assert (result.returncode, result.stdout) == (0, expected), result.stderr


def test_an_unknown_kafka_version_is_one_line_naming_the_known_ones() -> None:
    result = cli.run("shell", "--kafka-version", "3.9", "-s", str(fixture(*SNAPSHOT_358)), "ls")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("Error: unknown Kafka version '3.9' (--kafka-version): kraft prints as Kafka 4.0.0, "
                             "4.0.2, 4.1.0, 4.1.1, 4.1.2, 4.2.0, 4.2.1, 4.2.2, 4.3.0, 4.3.1, 4.4.0 (X.Y: its first release)\n")
