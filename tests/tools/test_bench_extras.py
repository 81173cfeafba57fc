"""``kraft bench chaos`` takes the ``[chaos]`` extra (issue 45, item 3):
pyfuse3 (its power-loss file system) and matplotlib (its timeline) are
imported only inside a run, and never by ``kraft --help`` or ``kraft bench
--help``, nor are its FUSE and network-namespace modules. A run that mounts
a FUSE disk (power-loss, lying-disk) refuses without pyfuse3 in one line
naming the fix; any other runs without it, and without matplotlib draws no
timeline, saying so. Each case runs a fresh interpreter with the packages
hidden as a user without them meets it: ``sys.modules[name] = None`` in a
sitecustomize on the path, so an import of them fails as if they were not
installed."""

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


def _kraft(args: list[str], tmp_path: Path, hidden: tuple[str, ...] = (),
           timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
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
    return cli.run(*args, timeout=timeout_s, env={**os.environ, "PYTHONPATH": str(site)})


@pytest.mark.parametrize("args", [["--help"], ["bench", "--help"]], ids=["kraft", "bench"])
def test_help_loads_nothing_of_the_chaos_bench(tmp_path: Path, args: list[str]) -> None:
    result = _kraft(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "loaded: []" in result.stdout, result.stdout


PYFUSE3_LINE = "Error: pyfuse3 is not installed: pip install 'kraft[chaos]'"


def _loaded(result: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith("loaded:"))


def _refused_in_one_line(result: subprocess.CompletedProcess[str], line: str) -> None:
    assert result.returncode == errors.EXIT_REFUSED, result.stderr
    assert result.stderr.startswith(line) and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    # Refused before a run: no node, no disk, no namespace was set up.
    assert "kraft.tools.bench.chaos.lazyfs" not in result.stdout


@pytest.mark.parametrize("nemesis", ["power-loss", "lying-disk", "kill,power-loss"])
@pytest.mark.parametrize("hidden", [("pyfuse3",), ("pyfuse3", "matplotlib")], ids=["pyfuse3", "both"])
def test_a_fuse_nemesis_without_pyfuse3_is_one_line_naming_the_extra(tmp_path: Path, nemesis: str,
                                                                       hidden: tuple[str, ...]) -> None:
    """The power-loss disk is served with pyfuse3: asked for by name, refused
    without it on any machine (before whatever else it lacks)."""
    result = _kraft(["bench", "chaos", "--nemesis", nemesis, "--duration", "5"], tmp_path, hidden)
    _refused_in_one_line(result, PYFUSE3_LINE)


def test_the_default_nemeses_without_pyfuse3_are_refused_where_power_loss_would_run(tmp_path: Path) -> None:
    """The default runs power loss where the machine can: there pyfuse3 is
    needed; elsewhere the default skips power loss, and pyfuse3 is not."""
    from kraft.tools.bench.chaos.run import unavailable_reason

    # --duration 2 is refused after the extra's check: no run starts either way.
    result = _kraft(["bench", "chaos", "--duration", "2"], tmp_path, ("pyfuse3",))
    if unavailable_reason("power-loss", package=False) is None:
        _refused_in_one_line(result, PYFUSE3_LINE)
    else:
        assert result.returncode == 2 and "--duration 2 is shorter than one fault" in result.stderr, result.stderr


@pytest.mark.parametrize("args,hidden", [
    (["--nemesis", "kill,pause"], ("pyfuse3", "matplotlib")),
    (["--nemesis", "kill,pause", "--load", "client"], ("pyfuse3", "matplotlib")),
    ([], ("matplotlib",)),
], ids=["kill-pause", "client-load", "default-without-matplotlib"])
def test_a_run_needs_no_package_its_nemeses_do_not_use(tmp_path: Path, args: list[str],
                                                       hidden: tuple[str, ...]) -> None:
    """Only the FUSE disk needs a package of the extra (matplotlib draws the
    optional timeline): these pass the extra's check and stop at the next
    one, --duration 2 being shorter than a fault, with neither package loaded."""
    result = _kraft(["bench", "chaos", *args, "--duration", "2"], tmp_path, hidden)
    assert result.returncode == 2, result.stderr
    assert "--duration 2 is shorter than one fault" in result.stderr and "kraft[chaos]" not in result.stderr
    assert "pyfuse3" not in _loaded(result) and "matplotlib" not in _loaded(result), result.stdout


@pytest.mark.slow
def test_kill_and_pause_run_without_the_extra_and_say_there_is_no_timeline(tmp_path: Path) -> None:
    """A whole run of kill -9 and SIGSTOP with neither package: OK, and its
    notes say why there is no picture, with the fix."""
    result = _kraft(["bench", "chaos", "--nemesis", "kill,pause", "--duration", "5", "--observers", "0",
                     "--append-rate", "20"], tmp_path, ("pyfuse3", "matplotlib"), timeout_s=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no timeline picture: matplotlib is not installed: pip install 'kraft[chaos]'" in result.stdout
    assert "\nOK: " in result.stdout and "timeline:" not in result.stdout
    assert "pyfuse3" not in _loaded(result) and "matplotlib" not in _loaded(result), result.stdout


def test_chaos_help_needs_no_extra(tmp_path: Path) -> None:
    """What the command takes is readable before installing what it needs."""
    result = _kraft(["bench", "chaos", "--help"], tmp_path, ("pyfuse3", "matplotlib"))
    assert result.returncode == 0 and "--nemesis" in result.stdout, result.stderr
