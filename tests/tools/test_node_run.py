"""``kraft node start`` is the product, the bench is not (issue 45, item 3):
the node's run path -- the command, the process it runs, the quickstart's
demo writer -- imports nothing of ``kraft.tools.bench``, and the quorum
bench's voters run through the bench's own hidden entry (``kraft bench
voter``) instead of a bench option of ``kraft node start``. The import
contract in pyproject.toml (``node-run-apart``, tests/test_layers.py) keeps
it so in the code; here a real node process shows it at run time."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraft import errors
from tests.harness import cli
from tests.harness.configs import make_configs

#: A real `kraft node start` (its script's name, so kraft.cli runs as the
#: program), which prints at exit which modules of the bench it had loaded.
_NODE_START = """
import atexit, sys
atexit.register(lambda: print("bench modules:", sorted(m for m in sys.modules if m.startswith("kraft.tools.bench")),
                              flush=True))
sys.argv[0] = "kraft"
from kraft.cli import main
main()
"""

#: Start-up and shutdown on a loaded machine: a hang bound, not a timing assertion.
BOUND_S = 120


def _run_until(args: list[str], text: str) -> str:
    """``kraft ARGS`` until ``text`` is printed, then SIGTERM; all it printed (exit 0 asserted)."""
    proc = subprocess.Popen([sys.executable, "-c", _NODE_START, *args], text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if text in line:
                break
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rest, _ = proc.communicate(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    out = "".join(seen) + rest
    assert text in "".join(seen), out
    assert proc.returncode == 0, out
    return out


@pytest.mark.parametrize("load", [[], ["--demo-append-rate", "20", "--demo-records", "metadata"]],
                         ids=["node", "demo-writer"])
def test_a_running_node_loads_nothing_of_the_bench(tmp_path: Path, load: list[str]) -> None:
    config = make_configs(tmp_path, [1])[1]
    out = _run_until(["node", "start", "-c", str(config), *load],
                     "demo writer started" if load else "-> Leader")
    assert "bench modules: []" in out, out


def test_the_bench_voter_runs_the_node_with_the_bench_load(tmp_path: Path) -> None:
    """The bench's own entry: the same node, the bench's load beside it
    (its ``ready`` line on stdout), which is what loads the bench."""
    config = make_configs(tmp_path, [1])[1]
    out = _run_until(["bench", "voter", "-c", str(config), "--record-size", "10"], '"type": "ready"')
    assert "kraft.tools.bench.load" in out.split("bench modules:")[1], out


def test_node_start_has_no_bench_option(tmp_path: Path) -> None:
    result = cli.run("node", "start", "-c", str(tmp_path / "x.properties"), "--bench-load", "100", timeout=BOUND_S)
    assert result.returncode == errors.EXIT_USAGE
    assert "No such option '--bench-load'" in result.stderr and "Traceback" not in result.stderr
