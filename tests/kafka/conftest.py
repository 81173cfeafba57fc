"""Fixtures of the real-Kafka tests: one installed release per test and a
cluster that is always torn down -- a real process that outlives its test
fails that test.

``release`` runs a test on the oldest and the newest release of
``.ci/kafka-releases`` (a cluster scenario: its JVMs cost a minute or more a
release, and what it exercises -- raft, the witness, reconfiguration -- is
one protocol across 4.x); a module comparing tool outputs, which differ from
release to release, overrides it with :func:`every_release` (every listed
release: one JVM call per tool and mode)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kafka import processes
from tests.kafka.releases import KafkaRelease, ends, require


@pytest.fixture(params=ends())
def release(request: pytest.FixtureRequest) -> KafkaRelease:
    return require(request.param)


@pytest.fixture(autouse=True)
def no_process_outlives_its_test() -> Iterator[None]:
    before = list(processes.LIVE)
    yield
    running = processes.reap_leaked(before)
    assert not running, f"still running after the test: {', '.join(running)}"


@pytest.fixture
def kafka_root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def clusters() -> Iterator[list[object]]:
    """Clusters a test builds (append them): each is closed after the test,
    before the leak check."""
    made: list[object] = []
    yield made
    for cluster in made:
        cluster.close()  # type: ignore[attr-defined]
