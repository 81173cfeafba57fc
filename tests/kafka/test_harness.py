"""The real-Kafka harness itself: bad input gets one clear line and leaves
nothing running (a download that fails, a port already taken, a JVM that
dies at start), and CI cannot go green without real Kafka."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster, StartError
from tests.kafka import processes
from tests.kafka.processes import Process
from tests.kafka.releases import REPO, KafkaRelease, listed, newest, require, unavailable


def test_a_failed_download_is_one_line_naming_the_coordinates(tmp_path: Path) -> None:
    if shutil.which("mvn") is None:
        unavailable("no mvn on PATH (bash .ci/deps installs Maven)")
    env = {**os.environ, "KRAFT_KAFKA_RELEASES": "4.99.0", "KRAFT_KAFKA_CACHE": str(tmp_path / "cache")}
    done = subprocess.run(["bash", str(REPO / ".ci" / "kafka-jars")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "cannot fetch Apache Kafka 4.99.0 (org.apache.kafka:kafka_2.13:4.99.0, org.apache.kafka:kafka-tools:4.99.0) "
        "from Maven Central: "), done.stderr
    assert not (tmp_path / "cache" / "4.99.0").exists()


def test_every_listed_release_is_installed_with_its_tools() -> None:
    """Each release of .ci/kafka-releases is complete in the cache (a skip,
    and in CI a failure, otherwise) and has the tools the suite runs."""
    assert listed()[:2] == ["4.0.2", "4.1.0"] and len(listed()) >= 3
    for version in listed():
        release = require(version)
        for tool in ("StorageTool", "DumpLogSegments", "MetadataQuorumCommand", "ClusterTool"):
            assert processes.main_class(release, tool)
        if release.shell_missing is None:
            assert processes.main_class(release, "MetadataShell") == "org.apache.kafka.shell.MetadataShell"


def test_a_port_already_taken_is_one_line_and_nothing_is_left_running(tmp_path: Path) -> None:
    release = require(newest())
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(1,), kraft_voters=(), brokers=())
    cluster.format()
    with socket.socket() as taken:
        taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        taken.bind(("127.0.0.1", cluster.controller_ports[1]))
        taken.listen()
        with pytest.raises(StartError) as failure:
            cluster.start()
    message = str(failure.value)
    assert "\n" not in message and message.startswith("Kafka controller 1 (") and "exited with code" in message
    assert f"{cluster.controller_ports[1]}" in message and "Address already in use" in message, message
    assert not any(p.alive for p in cluster.everything())


def test_a_jvm_that_dies_at_start_is_named_with_its_reason(tmp_path: Path) -> None:
    release = require(newest())
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(1,), kraft_voters=(), brokers=())
    cluster.format()
    server = cluster.kafka[1]
    server.config.write_text(server.config.read_text().replace("process.roles=controller", "process.roles=chef"))
    with pytest.raises(StartError) as failure:
        cluster.start()
    message = str(failure.value)
    assert "\n" not in message and "Kafka controller 1" in message and "exited with code 1" in message, message
    assert "chef" in message, message
    assert not server.alive


def test_a_process_that_outlives_its_test_is_killed_and_named() -> None:
    before = list(processes.LIVE)
    sleeper = Process("a sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], Path("/tmp"))
    sleeper.start()
    assert processes.reap_leaked(before) == ["a sleeper"]
    assert not sleeper.alive and sleeper not in processes.LIVE


@pytest.mark.parametrize("ci", ["true", ""])
def test_without_the_jars_a_test_skips_and_under_ci_fails(tmp_path: Path, ci: str) -> None:
    env = {**os.environ, "CI": ci, "KRAFT_KAFKA_CACHE": str(tmp_path / "empty")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           f"{Path(__file__)}::test_every_listed_release_is_installed_with_its_tools", "-rs"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    if ci:
        assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-2000:]
        assert "real Kafka is required in CI: Kafka 4.0.2's jars are not in" in done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout[-2000:]


def test_kafka_release_names_itself() -> None:
    release = KafkaRelease("4.1.0", Path("/nowhere"))
    assert str(release) == "Kafka 4.1.0" and release.minor == (4, 1) and release.classpath == "/nowhere/lib/*"
