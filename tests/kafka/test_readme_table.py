"""The interoperability table (docs/beside-kafka/interoperability.md) is filled in by real-Kafka tests:
its columns are the releases of .ci/kafka-releases, and every row names a
test of tests/kafka/ that takes the ``release`` fixture (every listed
release for the tool comparisons, the oldest and newest for the cluster
scenarios: tests/kafka/conftest.py)."""

from __future__ import annotations

import ast
import re

from tests.kafka.releases import REPO, listed

#: The page of the documentation site that holds the table.
PAGE = REPO / "docs" / "beside-kafka" / "interoperability.md"


def _table() -> list[list[str]]:
    section = PAGE.read_text()
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def _tests_taking_release() -> set[str]:
    found = set()
    for path in (REPO / "tests" / "kafka").glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(a.arg == "release" for a in node.args.args):
                found.add(f"{path.name}::{node.name}")
    return found


def test_the_columns_are_the_releases_the_suite_runs() -> None:
    header = _table()[0]
    assert header[1:-1] == listed(), header and header[-1] == "test"


def test_every_row_names_a_real_kafka_test_that_runs_on_every_release() -> None:
    rows = _table()[2:]
    assert rows
    tests = _tests_taking_release()
    for row in rows:
        named = re.fullmatch(r"`(test_\w+\.py::test_\w+)`", row[-1])
        assert named is not None and named.group(1) in tests, row
        # "yes", or what the release did instead ("pinned": its tool fails on that input).
        assert all(cell for cell in row[1:-1]), row
