"""A node always stops (issue 33, item 2).

``controller.quorum.fetch.timeout.ms=1`` made a lone voter spin at 100% CPU
in the shell's step loop without ever yielding to trio, so SIGTERM and
SIGINT were never handled and only ``kill -9`` ended it. Two fixes, each
tested here on a real process:

- the shell's loop yields to the event loop on every turn, whatever the
  core's timers say (a core handed ``fetch_timeout_ms=1`` directly, below
  anything the parser lets through, still stops on SIGTERM);
- the value is raised at parse to the follower's fetch wait with one WARN
  line (Kafka's ``QuorumConfig.CONFIG_DEF`` defines the timeouts with no
  validator, so refusing would reject a file Kafka starts with; see
  :func:`kraft.config._fetch_timeout_ms`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.config import MIN_FETCH_TIMEOUT_MS, NodeConfig
from tests.harness.configs import make_configs

#: The node's own shutdown bound (KraftNode.shutdown: 5 s, plus 1 s for the
#: shell) and start-up on a loaded machine: a bound, not a timing assertion.
STOP_BOUND_S = 60

_RUN_WITH_CORE_TIMEOUT = """
import dataclasses, sys, trio
from kraft.config import NodeConfig
from kraft.tools.log_format import setup_logging
from kraft.tools.node_run import run_node
setup_logging("INFO")
config = NodeConfig.load(sys.argv[1])
config = dataclasses.replace(config, quorum=dataclasses.replace(config.quorum, fetch_timeout_ms=1))
trio.run(run_node, config)
"""


def _read_until(proc: subprocess.Popen[str], text: str) -> str:
    """Read the node's output until ``text`` (the process is bounded by
    ``STOP_BOUND_S`` in the caller's finally)."""
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"{text!r} never came:\n{''.join(seen)}")


def _stop(proc: subprocess.Popen[str], sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        out, _ = proc.communicate(timeout=STOP_BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"the node ignored {sig.name}: killed with -9\n{out}") from None
    return proc.returncode, out


def _start_and_stop(config: Path, wait_text: str) -> str:
    """`kraft node start`, SIGTERM once ``wait_text`` came; all it printed
    (exit code 0 asserted)."""
    proc = subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "-c", str(config)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    before = ""
    try:
        before = _read_until(proc, wait_text)
    finally:
        code, out = _stop(proc)
    assert code == 0, before + out
    return before + out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_core_with_a_1_ms_fetch_timeout_still_stops_on_a_signal(sig: signal.Signals, tmp_path: Path) -> None:
    """The issue's wedge, with the parser's clamp bypassed: the core's
    timers are always due, and the node still handles the signal."""
    paths = make_configs(tmp_path, [1])
    proc = subprocess.Popen([sys.executable, "-c", _RUN_WITH_CORE_TIMEOUT, str(paths[1])], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _read_until(proc, "-> Leader")
    finally:
        code, out = _stop(proc, sig)
    assert code == 0, out
    assert "shutdown completed" in out, out


def test_a_lone_voter_hands_over_nothing_and_exits_at_once(tmp_path: Path) -> None:
    """With no other voter to hand leadership to, SIGTERM's shutdown
    completes at once (the issue saw 5 s and "shutdown timed out")."""
    out = _start_and_stop(make_configs(tmp_path, [1])[1], "-> Leader")
    assert "shutdown completed" in out and "timed out" not in out, out


def test_a_fetch_timeout_below_the_fetch_wait_is_raised_with_one_warning(tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    """Why clamp and not refuse: Kafka's QuorumConfig.CONFIG_DEF defines
    controller.quorum.fetch.timeout.ms as an INT with no validator (Kafka
    starts with 1); but a follower's Fetch waits up to
    KafkaRaftClient.MAX_FETCH_WAIT_MS (500 ms) at the leader, so any
    shorter fetch timeout expires on every idle fetch and the voters elect
    again and again. The node runs with 500 and says so once."""
    paths = make_configs(tmp_path, [1], extra={"controller.quorum.fetch.timeout.ms": "1"})
    with caplog.at_level("WARNING", logger="kraft.config"):
        config = NodeConfig.load(paths[1])
    assert config.quorum.fetch_timeout_ms == MIN_FETCH_TIMEOUT_MS == 500
    warnings = [r.getMessage() for r in caplog.records if "fetch.timeout.ms" in r.getMessage()]
    assert len(warnings) == 1 and "using 500" in warnings[0], warnings
    caplog.clear()
    with caplog.at_level("WARNING", logger="kraft.config"):
        assert NodeConfig.load(paths[1], {"controller.quorum.fetch.timeout.ms": "500"}).quorum.fetch_timeout_ms == 500
    assert not caplog.records


def test_a_node_started_with_a_1_ms_fetch_timeout_runs_and_stops(tmp_path: Path) -> None:
    """The issue's exact config, through `kraft node start`: it warns once,
    leads, and SIGTERM ends it."""
    paths = make_configs(tmp_path, [1], extra={"controller.quorum.fetch.timeout.ms": "1"})
    out = _start_and_stop(paths[1], "-> Leader")
    assert out.count("controller.quorum.fetch.timeout.ms=1 is below") == 1, out


def test_a_voter_that_does_not_lead_has_nothing_to_hand_over_and_exits_at_once(tmp_path: Path) -> None:
    """One voter of three, the others never started: it cannot lead, so it
    has nothing to hand over. It said "shutdown timed out" after 5 s; only
    a leader (or a resigned one whose EndQuorumEpoch is out) waits now."""
    out = _start_and_stop(make_configs(tmp_path, [1, 2, 3])[1], "at start-up")
    assert "shutdown completed" in out and "timed out" not in out, out
