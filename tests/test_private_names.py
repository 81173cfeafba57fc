"""No module takes another module's private names (``from x import _y``,
``x._y``): the check of :func:`tests.static_checks.private_name_uses` over
the package and the tests (by hand: ``.venv/bin/python -m tests.static_checks privates``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.static_checks import check_private_names, private_name_uses


def test_no_private_name_crosses_a_module() -> None:
    assert check_private_names() == []


@pytest.mark.parametrize("path,package,source,expected", [
    ("kraft/sim/disklog.py", "kraft.sim", "from kraft.node.snapshots import _batch_ending_at\n",
     ["kraft/sim/disklog.py:1: from kraft.node.snapshots import _batch_ending_at"]),
    ("tools/spark/columnar.py", "kraft.tools.spark", "from .rows import _describe\n",
     ["tools/spark/columnar.py:1: from kraft.tools.spark.rows import _describe"]),
    ("tools/bench/metrics.py", "kraft.tools.bench", "from kraft.tools.bench import quorum\nquorum._measure()\n",
     ["tools/bench/metrics.py:2: kraft.tools.bench.quorum._measure"]),
    ("tools/x.py", "kraft.tools", "import kraft.tools.quickstart as q\nq._free_ports(1)\n",
     ["tools/x.py:2: kraft.tools.quickstart._free_ports"]),
    # A test's private helpers are its own too.
    ("tests/node/test_a.py", "tests.node", "from tests.node.test_b import _config\n",
     ["tests/node/test_a.py:1: from tests.node.test_b import _config"]),
    # A test may reach into the module it tests, and only that one.
    ("tests/records/test_compression.py", "tests.records", "from kraft.records.compression import _xxh32\n", []),
    ("tests/records/test_batch.py", "tests.records", "from kraft.records.compression import _xxh32\n",
     ["tests/records/test_batch.py:1: from kraft.records.compression import _xxh32"]),
    # Dunders, other libraries and public names pass.
    ("kraft/cli.py", "kraft", "from kraft import __version__\nimport os\nos._exit(0)\nfrom trio import _core\n", []),
], ids=["from-import", "relative", "module-attribute", "import-as", "test-helper", "tested-module",
        "untested-module", "allowed"])
def test_the_check_finds_each_form(path: str, package: str, source: str, expected: list[str]) -> None:
    assert private_name_uses(Path(path), source, package) == expected
