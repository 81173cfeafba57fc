"""The README's ``kraft doctor`` transcript on a running quorum, run as
written against one: three voters (1, 2, 3, formatted with
``--initial-controllers``) and two observers (4, 5, formatted with
``--no-initial-controllers``), real ``kraft node start`` processes whose
directories are ``node-1`` ... ``node-5`` (tests/doctor/helpers.py).

Two substitutions this test owns: the voter addresses the README shows
become this quorum's, and each command runs in the directory that holds
the nodes' directories (the README's ``--dir node-2`` is relative to it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doctor.helpers import DynamicQuorum, bootstrap
from tests.harness import cli
from tests.harness.poll import until
from tests.test_readme import delegated_blocks, readme_block, run_example

pytestmark = pytest.mark.slow

HERE = "tests/doctor/test_readme_doctor.py"
#: The README's voters 1, 2, 3, in the order it lists them.
README_VOTERS = ("127.0.0.1:56243", "127.0.0.1:33459", "127.0.0.1:35205")
#: What the README's offline command passes as --max-bytes-since-snapshot.
THRESHOLD = 4000


def _block() -> int:
    [line] = [line for line, test in delegated_blocks().items() if test == HERE]
    return line


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DynamicQuorum]:
    q = DynamicQuorum(tmp_path_factory.mktemp("kq"), voters=[1, 2, 3], spares=[4, 5], append_rate=20)
    try:
        q.start(1, 2, 3, 4, 5)
        yield q
    finally:
        q.stop()


def _snapshot_far_behind_everywhere(q: DynamicQuorum) -> bool:
    """Every directory the README reads holds more than THRESHOLD bytes of
    log past its latest snapshot (the leader's demo records get there)."""
    out = cli.run("doctor", *(a for i in (2, 4, 5) for a in ("--dir", str(q.dir(i)))),
                  "--max-bytes-since-snapshot", str(THRESHOLD), timeout=120)
    return out.stdout.count("WARNING snapshot-far-behind") == 3


def _healthy(q: DynamicQuorum) -> bool:
    """The online doctor finds nothing (the observers caught up too)."""
    return cli.run("doctor", "--bootstrap-controller", bootstrap(q.ports, [1, 2, 3]), timeout=120).returncode == 0


def test_the_doctor_transcript_runs_as_written(quorum: DynamicQuorum, tmp_path: Path) -> None:
    # Bounds for a loaded machine (the demo writer slows down with it),
    # never a timing assertion.
    until("every directory past the README's snapshot threshold", lambda: _snapshot_far_behind_everywhere(quorum),
         timeout_s=600)
    until("a healthy quorum", lambda: _healthy(quorum), timeout_s=600)
    addresses = {readme: f"127.0.0.1:{quorum.ports[i]}" for readme, i in zip(README_VOTERS, (1, 2, 3))}

    def adapt(command: str) -> str:
        command = re.sub("|".join(map(re.escape, README_VOTERS)), lambda m: addresses[m.group()], command)
        return f"cd {shlex.quote(str(quorum.root))} && {command}"

    out = run_example("console", readme_block(_block()), tmp_path, adapt=adapt)
    assert "healthy: leader" in out and out.count("WARNING snapshot-far-behind") == 3, out
