"""``kraft shell`` as a user runs it (a real subprocess), on Kafka's files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import shared_path


def kraft(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraft.cli", *args], input=stdin, capture_output=True, text=True,
                          timeout=120)


def test_one_shot_ls_and_cat_on_a_kafka_directory() -> None:
    directory = shared_path("fixtures", "kafka-3x-single-node")
    ls = kraft("shell", "--directory", str(directory), "ls", "/topics")
    assert ls.returncode == 0, ls.stderr
    assert ls.stdout.split() == ["Retry.TestTopicPatient", "TestTopicPatient", "__consumer_offsets",
                                 "batch2.work.notification.SHR_PROD.persistence",
                                 "subscription.matching.SHR_PROD.persistence"]
    cat = kraft("shell", "--directory", str(directory), "cat", "/topics/TestTopicPatient/0/data",
                "/configs/topic/__consumer_offsets/cleanup.policy", "/features/metadata.version")
    assert cat.returncode == 0, cat.stderr
    assert '"partitionId" : 0' in cat.stdout and "compact\n" in cat.stdout and '"featureLevel" : 19' in cat.stdout


def test_a_snapshot_file() -> None:
    snapshot = shared_path("fixtures", "kafka-4.1-standalone-dynamic", "__cluster_metadata-0",
                           "00000000000000007206-0000000001.checkpoint")
    result = kraft("shell", "--snapshot", str(snapshot), "ls", "/features", "/topics")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("features:\neligible.leader.replicas.version\ngroup.version\nmetadata.version\n"
                             "transaction.version\n\ntopics:\nSD\n__consumer_offsets\n")


def test_commands_on_stdin() -> None:
    directory = shared_path("fixtures", "kafka-3.5-three-node", "node1")
    result = kraft("shell", "-d", str(directory), stdin="cd /brokers\nls\npwd\ncat 2/isFenced\nexit\nls /\n")
    assert result.returncode == 0, result.stderr
    # The log ends with the three brokers fenced (BrokerRegistrationChangeRecord fenced=1).
    assert result.stdout == "1\n2\n3\n/brokers\ntrue\n"


def test_one_source_is_required(tmp_path: Path) -> None:
    result = kraft("shell", "ls")
    assert result.returncode == 2 and "exactly one of" in result.stderr
    (tmp_path / "empty").mkdir()
    result = kraft("shell", "--directory", str(tmp_path / "empty"), "ls")
    assert result.returncode == 1 and "neither __cluster_metadata-0" in result.stderr
