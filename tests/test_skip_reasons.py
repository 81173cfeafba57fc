"""A test that skips says why (issue 33: 7 tests skipped with the bare
reason "Skipped"). pytest-trio runs each async test in a nursery, so a
``pytest.skip(reason)`` inside one reached it wrapped in an ExceptionGroup
and it skipped again without the reason; tests/conftest.py gives the reason
back. Checked on a real pytest run of a small test file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

TRIO_TEST = '''
import pytest
import trio


async def test_skips_inside_a_nursery() -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep, 0)
        pytest.skip("simulating a full disk needs a size-limited tmpfs")
'''


def test_a_skip_inside_a_trio_test_keeps_its_reason_and_place(tmp_path: Path) -> None:
    test_file = tmp_path / "test_trio_skip.py"
    test_file.write_text(TRIO_TEST)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "-o", "trio_mode=true", "--rootdir", str(tmp_path), str(test_file)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert line.endswith("test_trio_skip.py:9: simulating a full disk needs a size-limited tmpfs"), line
