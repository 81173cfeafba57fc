"""The CLI entry point: Kafka's tool names as aliases, a light --help, and
the top-level handler that turns every failure into one line and the exit
code of its class (kraft/errors.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from kraft import errors
from kraft.cli import ALIASES, COMMANDS, KraftGroup
from tests.harness import cli


def test_kafka_tool_names_answer_as_the_commands_they_stand_for() -> None:
    for alias, name in ALIASES.items():
        assert name in COMMANDS
        result = cli.invoke([alias, "--help"])
        assert result.exit_code == 0, result.output
        assert f"Usage: main {alias}" in result.output
    listed = cli.invoke(["--help"]).output
    assert all(f"\n  {alias} " not in listed for alias in ALIASES)  # hidden, named in the short help instead
    flat = " ".join(listed.split())
    assert "alias metadata-quorum" in flat and "alias metadata-shell" in flat
    for kafka_name in ("dump-log", "storage", "features"):
        assert kafka_name in COMMANDS


def test_help_imports_nothing_heavy() -> None:
    code = ("import sys\nfrom kraft.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('trio', 'pyarrow', 'pyspark', 'prometheus_client', 'kraft.node') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr


def _group_raising(exc: BaseException) -> click.Group:
    @click.group(cls=KraftGroup)
    @click.option("--debug", is_flag=True)
    def root(debug: bool) -> None:
        pass

    @root.command("boom")
    def boom() -> None:
        raise exc

    return root


@pytest.mark.parametrize(("exc", "code", "text"), [
    (errors.ConfigurationError("x.y: bad value"), errors.EXIT_CONFIG, "Error: x.y: bad value"),
    (errors.StorageError("dir is locked"), errors.EXIT_STORAGE, "Error: dir is locked"),
    (errors.NetworkError("port in use"), errors.EXIT_NETWORK, "Error: port in use"),
    (ExceptionGroup("nursery", [errors.NetworkError("port 1 in use")]), errors.EXIT_NETWORK,
     "Error: port 1 in use"),
    (PermissionError(13, "Permission denied", "/data/x"), errors.EXIT_STORAGE,
     "Error: Permission denied: /data/x (check the path, its permissions and free disk space)"),
    (RuntimeError("oops\nsecond line"), errors.EXIT_INTERNAL,
     "Error: unexpected RuntimeError: oops second line -- this is a bug in kraft"),
])
def test_one_line_and_the_exit_code_of_the_class(exc: BaseException, code: int, text: str) -> None:
    result = cli.invoke(["boom"], command=_group_raising(exc))
    assert result.exit_code == code
    assert result.stderr.startswith(text) and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_debug_adds_the_traceback() -> None:
    result = cli.invoke(["--debug", "boom"], command=_group_raising(RuntimeError("oops")))
    assert result.exit_code == errors.EXIT_INTERNAL
    assert "Traceback" in result.stderr and result.stderr.rstrip().splitlines()[-1].startswith("Error: unexpected")


def test_click_exits_pass_through() -> None:
    result = cli.invoke(["boom"], command=_group_raising(click.ClickException("usage-ish")))
    assert result.exit_code == 1 and result.stderr == "Error: usage-ish\n"


def test_dash_h_is_help_everywhere() -> None:
    """Kafka's tools take ``-h`` (issue 26: ``kraft -h`` was refused). The
    root sets help_option_names; every command and subcommand inherits it.
    Checked in a fresh process, as a user meets it: click caches a command's
    help option the first time it parses, so a command another test invoked
    on its own in this process would keep only ``--help``."""
    script = """
import json, sys
from tests.harness.cli import invoke
from tests.test_cli_startup import HELP_PATHS
bad = []
for path in HELP_PATHS:
    short = invoke([*path, "-h"])
    long = invoke([*path, "--help"])
    if short.exit_code != 0 or short.output != long.output:
        bad.append([path, short.exit_code, short.output])
print(json.dumps(bad))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                            cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize(("typed", "meant"), [
    (["stroage"], "storage"), (["obsreve"], "observe"), (["metadata-quorom"], "metadata-quorum"),
    (["storage", "fromat"], "format"), (["bench", "shel"], "shell"),
])
def test_a_mistyped_command_gets_a_suggestion(typed: list[str], meant: str) -> None:
    """A fresh process: click suggested only among the commands already
    loaded, which in a test process may be all of them."""
    result = cli.run(*typed)
    assert result.returncode == errors.EXIT_USAGE
    assert f"No such command '{typed[-1]}'." in result.stderr and f"'{meant}'" in result.stderr, result.stderr


def test_a_hidden_command_is_never_suggested() -> None:
    """``kraft bench voter`` is run by ``kraft bench quorum``, not by hand:
    a near miss of it gets no suggestion, as ``--help`` does not list it."""
    result = cli.run("bench", "votr")
    assert result.returncode == errors.EXIT_USAGE
    assert "No such command 'votr'." in result.stderr and "voter" not in result.stderr, result.stderr


@pytest.fixture
def refused_address() -> Iterator[str]:
    """A loopback port bound but not listening: a connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("command", [["observe", "--timeout", "2"], ["shell", "--timeout", "3"], ["observe"],
                                     ["shell"]])
def test_a_refused_bootstrap_controller_is_named_at_once(command: list[str], refused_address: str) -> None:
    """Issue 26: observe took 16 s past its --timeout 2, shell said "the
    observer did not catch up" and hid the refused connection. Both now
    say which address refused, in one line, with the network exit code."""
    args = [*command, "--bootstrap-controller", refused_address]
    if command[0] == "shell":
        args.append("ls")
    result = cli.run(*args)
    assert result.returncode == errors.EXIT_NETWORK, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: Cannot reach any of the bootstrap controllers: "), lines
    assert f"{refused_address} (connection refused)" in lines[0]
    assert "catch up" not in result.stderr


@pytest.mark.parametrize("command", [["quorum", "--bootstrap-controller", "{a}", "describe", "--status"],
                                     ["features", "--bootstrap-controller", "{a}", "describe"]])
def test_the_quorum_tools_exit_with_the_network_code_when_nobody_answers(command: list[str],
                                                                         refused_address: str) -> None:
    result = cli.invoke([a.format(a=refused_address) for a in command])
    assert result.exit_code == errors.EXIT_NETWORK and refused_address in result.stderr, result.stderr


def test_an_observer_override_out_of_range_is_a_config_error(refused_address: str) -> None:
    """Checked as the node's own config is (Kafka's INT range), before any connection."""
    result = cli.run("observe", "--bootstrap-controller", refused_address,
                     "--override", "controller.quorum.fetch.max.bytes=99999999999")
    assert result.returncode == errors.EXIT_CONFIG, result.stderr
    assert result.stderr.startswith("Error: Invalid value 99999999999 for configuration "
                                    "controller.quorum.fetch.max.bytes: Not a number of type INT"), result.stderr
