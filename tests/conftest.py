"""Shared test helpers: where ../shared is, and a skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Resolved: ../shared may be a symlink, and the tools print resolved paths
# (dump-log's "file") -- paths are compared resolved.
SHARED = (REPO.parent / "shared").resolve()


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or a skip naming what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference material not present: {path} (tests that need ../shared skip without it)")
    return path


# --- running in parallel (pytest-xdist: ``pytest -n auto``) --------------------------------


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers per core: most of the suite's wall time is spent waiting
    (elections, real processes starting, sockets, Spark), not computing."""
    return min(8, 2 * (os.cpu_count() or 1))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # Spark on one worker (``--dist loadgroup``): the tests that use the
        # session-scoped ``spark`` fixture share one JVM, and those that start
        # their own (the CLI, a standalone cluster, the README's Spark
        # examples) run one at a time. Side by side, each JVM's compiler and
        # collector threads starve the others' and every test that waits.
        if _uses_spark(item):
            item.add_marker(pytest.mark.xdist_group("spark"))
    if hasattr(config, "workerinput"):
        # On a worker: the long tests go first, so none of them starts last
        # and keeps the run waiting after the other workers are done. (Every
        # worker sorts alike: xdist requires the same order everywhere.)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def _uses_spark(item: pytest.Item) -> bool:
    if item.nodeid.startswith("tests/spark/") or "spark" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)  # the README's examples: the code is a parameter
    code = callspec.params.get("code") if callspec is not None else None
    return isinstance(code, str) and "spark" in code.lower()
