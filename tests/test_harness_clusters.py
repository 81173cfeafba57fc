"""The tests' clusters and node configs come from one harness (tests/harness/):
no test file defines a cluster class or a config writer of its own.

The rules, read from each file's syntax tree (every ``.py`` under ``tests/``
but ``tests/harness/``):

- a *cluster class* is a class whose name ends in ``Cluster``;
- a *config writer* is a function, other than a test (``test_*``), that
  both names a quorum key (the string ``"controller.quorum.voters"`` or
  ``"controller.quorum.bootstrap.servers"``) and writes a file
  (``.write_text(...)`` or ``.writelines(...)``). A test function that
  writes its own one-off config is left alone: that config is what it
  tests (a bad value, a missing key), not a harness.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HARNESS = TESTS / "harness"
QUORUM_KEYS = frozenset({"controller.quorum.voters", "controller.quorum.bootstrap.servers"})
FILE_WRITES = frozenset({"write_text", "writelines"})


def checked_files() -> Iterator[Path]:
    for path in sorted(TESTS.rglob("*.py")):
        if HARNESS not in path.parents:
            yield path


def cluster_classes(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name.endswith("Cluster")]


def config_writers(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("test_")
            and _names_a_quorum_key(node) and _writes_a_file(node)]


def _names_a_quorum_key(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Constant) and node.value in QUORUM_KEYS for node in ast.walk(function))


def _writes_a_file(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FILE_WRITES
               for node in ast.walk(function))


Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def _found(kind: str, find: Callable[[ast.AST], Sequence[Definition]]) -> list[str]:
    found = []
    for path in checked_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in find(tree):
            found.append(f"{path.relative_to(TESTS.parent)}:{node.lineno}: {kind} {node.name}")
    return found


def test_no_test_file_defines_a_cluster_class() -> None:
    assert _found("cluster class", cluster_classes) == [], (
        "a cluster for tests lives in tests/harness/ (inprocess, processes, kafka_cluster); "
        "a class that is no cluster gets a name that says what it is")


def test_no_test_file_defines_a_config_writer() -> None:
    assert _found("config writer", config_writers) == [], (
        "node configs are written by tests/harness/configs.py (node_properties, write_properties, make_configs, ...)")


def test_the_rules_catch_what_they_name() -> None:
    """Both rules fire on a small sample, and leave a test's own config alone."""
    sample = ast.parse(
        "class FakeCluster: ...\n"
        "def configs(path):\n"
        "    path.write_text('controller.quorum.voters=1@h:1\\n')\n"
        "    return {'controller.quorum.voters': '1@h:1'}\n"
        "def test_a_bad_value(path):\n"
        "    path.write_text({'controller.quorum.voters': 'x'}['controller.quorum.voters'])\n")
    assert [c.name for c in cluster_classes(sample)] == ["FakeCluster"]
    assert [f.name for f in config_writers(sample)] == ["configs"]
