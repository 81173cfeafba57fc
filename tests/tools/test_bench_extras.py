"""``kraft bench chaos`` installs with the ``[chaos]`` extra (issue 45,
item 3): pyfuse3 (its power-loss file system) and matplotlib (its timeline)
are imported only inside a run, and never by ``kraft --help`` or ``kraft
bench --help``, nor are its FUSE and network-namespace modules. Without the
extra, ``kraft bench chaos`` refuses in one line naming the fix. Each case
runs a fresh interpreter with the packages hidden as a user without them
meets it: ``sys.modules[name] = None`` in a sitecustomize on the path, so an
import of them fails as if they were not installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kraft import errors
from tests.harness import cli

#: What the chaos bench brings that nothing else may load: the extra's
#: packages, the FUSE disk and the network namespaces with their relay.
CHAOS_ONLY = ("pyfuse3", "matplotlib", "kraft.tools.bench.chaos")


def _kraft(args: list[str], tmp_path: Path, hidden: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -m kraft.cli ARGS`` with ``hidden`` made uninstalled, printing
    at exit which of :data:`CHAOS_ONLY` it loaded."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import atexit, sys\n"
        + "".join(f"sys.modules[{name!r}] = None\n" for name in hidden)
        + f"atexit.register(lambda: print('loaded:', sorted(m for m in sys.modules if sys.modules[m] is not None "
          f"and any(m == c or m.startswith(c + '.') for c in {CHAOS_ONLY!r}))))\n",
        encoding="utf-8")
    return cli.run(*args, env={**os.environ, "PYTHONPATH": str(site)})


@pytest.mark.parametrize("args", [["--help"], ["bench", "--help"]], ids=["kraft", "bench"])
def test_help_loads_nothing_of_the_chaos_bench(tmp_path: Path, args: list[str]) -> None:
    result = _kraft(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout, result.stdout


@pytest.mark.parametrize("hidden,line", [
    (("pyfuse3",), "Error: pyfuse3 is not installed: pip install 'kraft[chaos]'"),
    (("matplotlib",), "Error: matplotlib is not installed: pip install 'kraft[chaos]'"),
    (("pyfuse3", "matplotlib"), "Error: pyfuse3 and matplotlib are not installed: pip install 'kraft[chaos]'"),
], ids=["pyfuse3", "matplotlib", "both"])
def test_chaos_without_the_extra_is_one_line_naming_it(tmp_path: Path, hidden: tuple[str, ...], line: str) -> None:
    result = _kraft(["bench", "chaos", "--duration", "5"], tmp_path, hidden)
    assert result.returncode == errors.EXIT_REFUSED, result.stderr
    assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    # Refused before a run: no node, no disk, no namespace was set up.
    assert "kraft.tools.bench.chaos.lazyfs" not in result.stdout


def test_chaos_help_needs_no_extra(tmp_path: Path) -> None:
    """What the command takes is readable before installing what it needs."""
    result = _kraft(["bench", "chaos", "--help"], tmp_path, ("pyfuse3", "matplotlib"))
    assert result.returncode == 0 and "--nemesis" in result.stdout, result.stderr
