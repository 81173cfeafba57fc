"""The interoperability table (docs/beside-kafka/interoperability.md) is
generated from what the real-Kafka tests recorded (tests/kafka/interop.py,
tests/kafka/interoperability.json): the page's copy is the generated one,
its columns are the releases of .ci/kafka-releases, every row names a test
of tests/kafka/ that runs on that row's releases, and every cell a test
runs on was recorded. No Kafka runs here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.kafka import interop
from tests.kafka.releases import REPO, listed


def _tests_taking_release() -> dict[str, bool]:
    """Each real-Kafka test (``file::name``) and whether it takes the ``release`` fixture."""
    found = {}
    for path in (REPO / "tests" / "kafka").glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                found[f"{path.name}::{node.name}"] = any(a.arg == "release" for a in node.args.args)
    return found


def test_the_pages_table_is_the_generated_one() -> None:
    page = interop.PAGE.read_text()
    assert page == interop.page_text(page, interop.cells(), listed()), (
        "the interoperability table is stale: run python -m tests.kafka.interop and commit the page")


def test_the_columns_are_the_releases_the_suite_runs() -> None:
    header = interop.table({}, listed()).splitlines()[0]
    assert header == f"| what real Kafka does beside kraft | {' | '.join(listed())} | test |"


def test_every_row_names_a_real_kafka_test_that_runs_on_its_releases() -> None:
    tests = _tests_taking_release()
    assert len({row.key for row in interop.ROWS}) == len(interop.ROWS)
    for row in interop.ROWS:
        assert row.test in tests, row
        # A row over more than the newest release runs on the release fixture.
        assert tests[row.test] or row.scope == "newest", row
        assert row.scope in ("every", "ends", "newest"), row


def test_every_cell_its_test_runs_on_was_recorded() -> None:
    recorded = interop.cells()
    versions = listed()
    assert set(recorded) <= {row.key for row in interop.ROWS}, set(recorded)
    missing = [f"{row.key} on {v}" for row in interop.ROWS for v in versions
               if row.runs_on(v, versions) and not recorded.get(row.key, {}).get(v)]
    assert not missing, "run the real-Kafka tests of these cells (they record them): " + ", ".join(missing)
    stray = [f"{key} on {v}" for key, found in recorded.items() for v in found
             if v not in versions or not next(r for r in interop.ROWS if r.key == key).runs_on(v, versions)]
    assert not stray, "cells of releases the row does not run on: " + ", ".join(stray)


def test_a_test_records_its_cell_or_fails_on_a_stale_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """interop.record: with KRAFT_INTEROP_WRITE the cell is written; without,
    a cell other than the recorded one fails the test that found it."""
    monkeypatch.setattr(interop, "ARTIFACT", tmp_path / "interoperability.json")
    monkeypatch.setenv(interop.WRITE_VAR, "1")
    interop.record("storage-offline", "4.4.0", "yes: 11 runs, 3 refused alike")
    assert interop.cells() == {"storage-offline": {"4.4.0": "yes: 11 runs, 3 refused alike"}}
    monkeypatch.delenv(interop.WRITE_VAR)
    interop.record("storage-offline", "4.4.0", "yes: 11 runs, 3 refused alike")
    with pytest.raises(pytest.fail.Exception, match="the test found 'yes: 11 runs, 4 refused alike'"):
        interop.record("storage-offline", "4.4.0", "yes: 11 runs, 4 refused alike")
    with pytest.raises(KeyError):
        interop.record("no-such-row", "4.4.0", "yes")
