"""One local Spark for the whole test session (local[2], UI off, few shuffle partitions)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.synth import Scenario, write_scenario


def _spark_missing() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]' installs pyspark[sql])"
    if shutil.which("java") is None:
        return "no java on PATH (Spark needs Java 17+)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    missing = _spark_missing()
    if missing:
        pytest.skip(missing)
    from kraft.tools.spark.source import session

    spark = session(
        "local[2]",
        app_name="kraft-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.adaptive.enabled": "true",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """The story of tests/spark/synth.py, written once (read-only for tests)."""
    return write_scenario(tmp_path_factory.mktemp("scenario") / "node1")


@pytest.fixture
def spark_installed() -> None:
    """For tests that start their own Spark (the CLI in a subprocess)."""
    missing = _spark_missing()
    if missing:
        pytest.skip(missing)


@pytest.fixture
def pyarrow_needed() -> None:
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[test]')")


def copy_scenario(scenario: Scenario, dst: Path) -> Path:
    """A writable copy of the scenario's log dir, for tests that damage files."""
    shutil.copytree(scenario.log_dir, dst)
    return dst
