"""Shared test helpers: where the repository's fixtures are."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Files real Kafka wrote or printed, and Kafka's JSON specs: fixtures/README.md
#: says where each came from. Part of the repository, so no test skips on a
#: fresh clone for want of them.
FIXTURES = REPO / "fixtures"


def fixture_path(*parts: str) -> Path:
    """A path under fixtures/ (it must exist: a missing fixture is a defect, not a skip)."""
    path = FIXTURES.joinpath(*parts)
    assert path.exists(), f"fixture missing from the repository: {path}"
    return path


# --- running in parallel (pytest-xdist: ``pytest -n auto``) --------------------------------

# The tests start many short-lived JVMs (Spark's driver, a standalone master
# and its workers), each busy for seconds: with the C1 compiler alone and the
# serial collector they take half the CPU (measured: 30 s -> 16 s for a
# session that reads a fixture and runs a report). Spark's own launch
# scripts read these variables; kraft's commands never set them.
_SHORT_JVM = "-XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:+UseSerialGC"
for _var in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
    os.environ.setdefault(_var, _SHORT_JVM)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers per core: most of the suite's wall time is spent waiting
    (elections, real processes starting, sockets, Spark), not computing."""
    return min(8, 2 * (os.cpu_count() or 1))


#: Test modules whose tests share one module-scoped cluster.
_SHARED_CLUSTER_MODULES = ("tests/kafka/test_controller_cluster.py", "tests/kafka/test_controller_replication.py",
                           "tests/test_readme_transcripts.py")


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Spark's tests on one worker, one JVM at a time: those that share the
    session-scoped ``spark`` fixture, and those that start their own (the
    CLI, a standalone cluster, the README's Spark examples). Side by side,
    each JVM's compiler and collector threads starve the others and every
    test that waits. Every other test is scheduled on its own, to whichever
    worker is free (xdist's ``loadgroup`` would do this with marks, but it
    renames tests in a way pytest 9.2 no longer honours)."""
    from xdist.scheduler import LoadScopeScheduling

    class SparkTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if "spark" in nodeid.lower():
                return "spark"
            module = nodeid.split("::")[0]
            # A module whose tests share a module-scoped cluster (real
            # Kafka brokers on kraft controllers, the transcripts' quorum)
            # runs on one worker: spread out, each worker starts its own.
            return module if module.startswith(_SHARED_CLUSTER_MODULES) else nodeid

    return SparkTogether(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):
        # On a worker: the long tests go first, so none of them starts last
        # and keeps the run waiting after the other workers are done. (Every
        # worker sorts alike: xdist requires the same order everywhere.)
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)



@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A skip inside a trio test keeps its reason. pytest-trio runs the test
    in a nursery, so ``pytest.skip(reason)`` reaches it inside an
    ExceptionGroup, and it skips again with no reason: the report said only
    "Skipped". The group is the new skip's context; its one leaf has the reason."""
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if not report.skipped or excinfo is None or str(excinfo.value):
        return
    context = excinfo.value.__context__
    while isinstance(context, BaseExceptionGroup) and len(context.exceptions) == 1:
        context = context.exceptions[0]
    if isinstance(context, pytest.skip.Exception) and str(context) and isinstance(report.longrepr, tuple):
        # Where the test skipped, not pytest-trio's re-raise.
        path, lineno = report.longrepr[:2]
        tb = context.__traceback__
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename) == item.path:
                path, lineno = item.nodeid.split("::")[0], tb.tb_lineno
            tb = tb.tb_next
        report.longrepr = (str(path), lineno, f"Skipped: {context}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--rewrite-transcripts",
        action="store_true",
        help="write what the replica did back into tests/raft/testdata/*.txt (review the diff)",
    )
