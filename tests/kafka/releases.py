"""Which real Kafka releases are installed, and where their jars are.

``.ci/kafka-releases`` lists the releases the suite runs against;
``.ci/kafka-jars`` fetches each one's jars by Maven coordinates into
``$KRAFT_KAFKA_CACHE`` (default ``~/.cache/kraft/kafka``), one folder per
release with ``lib/*.jar`` and, once complete, a ``complete`` file. A test
that needs a release it cannot find skips with the reason -- except under
``CI=true``, where the same reason fails the test: CI can never go green
without real Kafka.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RELEASES_FILE = REPO / ".ci" / "kafka-releases"


#: Overrides the list, as for ``.ci/kafka-jars`` (space-separated): a run on other releases.
RELEASES_VAR = "KRAFT_KAFKA_RELEASES"


def listed() -> list[str]:
    """The releases ``.ci/kafka-releases`` names (or ``$KRAFT_KAFKA_RELEASES``), oldest first."""
    override = os.environ.get(RELEASES_VAR, "").split()
    if override:
        return sorted(override, key=lambda v: tuple(int(p) for p in v.split(".")))
    lines = RELEASES_FILE.read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def cache_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kraft" / "kafka"
    return Path(os.environ.get("KRAFT_KAFKA_CACHE") or default)


@dataclass(frozen=True)
class KafkaRelease:
    """One installed release: ``java -cp {classpath}`` runs its classes."""

    version: str
    home: Path

    @property
    def classpath(self) -> str:
        return str(self.home / "lib" / "*")

    @property
    def shell_missing(self) -> str | None:
        """Why this release has no metadata shell (``kafka-shell`` is not
        published on Maven Central for every release), or None."""
        why = self.home / "no-shell"
        return why.read_text().strip() if why.exists() else None

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    def __str__(self) -> str:
        return f"Kafka {self.version}"


def unavailable(reason: str, needed: str = "real Kafka") -> None:
    """Skip with ``reason``; under ``CI=true`` fail with it instead (CI has
    ``needed``: it runs as root with the jars fetched)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{needed} is required in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require(version: str) -> KafkaRelease:
    """The installed release ``version``, or a skip (a failure in CI) naming what is missing."""
    if shutil.which("java") is None:
        unavailable("no java on PATH (bash .ci/deps installs Java 17)")
    home = cache_dir() / version
    if not (home / "complete").exists():
        unavailable(f"Kafka {version}'s jars are not in {home} (bash .ci/kafka-jars fetches them)")
    return KafkaRelease(version, home)


def newest() -> str:
    return listed()[-1]


def ends() -> list[str]:
    """The oldest and the newest listed release: where the cluster scenarios run."""
    versions = listed()
    return sorted({versions[0], versions[-1]}, key=versions.index)


#: The release whose outputs the fixtures store: the controller's end-to-end
#: module runs on it too (issue 41: 4.0.x, 4.1.0 and 4.4.0).
FIXTURES_RELEASE = "4.1.0"


def ends_and_fixtures() -> list[str]:
    """:func:`ends` and :data:`FIXTURES_RELEASE` when it is listed, oldest first."""
    versions = listed()
    return sorted({*ends(), *([FIXTURES_RELEASE] if FIXTURES_RELEASE in versions else [])}, key=versions.index)


def every_release(request: pytest.FixtureRequest) -> KafkaRelease:
    """The ``release`` fixture of a module comparing tool outputs, over every
    listed release: ``release = pytest.fixture(params=listed())(every_release)``."""
    return require(request.param)
