"""Random values to every CLI option and to every config key (issue 33,
item 3): whatever the value, a command answers with a result or one error
line and an exit code of the table (kraft/errors.py); a run that exits 70
("a bug in kraft") or prints a traceback fails.

The options are found by walking the real click tree (a new option is
covered without editing this file). Each command runs in process (click's
runner), in a directory of its own, against 127.0.0.1:1 where it needs a
controller (refused at once), so the examples stay cheap. Left out: the
benchmarks, ``spark`` (a JVM per run), ``quickstart`` and ``node start``
(long-running processes; ``node start``'s values are its config keys,
fuzzed below and started at their bounds in tests/node/test_config_extremes.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.cli import main
from kraft.config import DEFAULTS, NUMERIC_KEYS, ConfigError, NodeConfig
from kraft.errors import EXIT_INTERNAL
from tests.harness import cli

REFUSED = "127.0.0.1:1"
_SKIPPED = ("bench", "spark", "quickstart", "node start")


def _leaves() -> Iterator[tuple[tuple[str, ...], click.Command, list[click.Option]]]:
    """(path, command, options of it and of its groups) for every command."""
    ctx = click.Context(main)

    def walk(cmd: click.Command, path: tuple[str, ...], inherited: list[click.Option]
             ) -> Iterator[tuple[tuple[str, ...], click.Command, list[click.Option]]]:
        own = [p for p in cmd.params if isinstance(p, click.Option) and not p.is_flag and not p.hidden
               and p.name != "help" and not any(o in ("--version",) for o in p.opts)]
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    yield from walk(sub, (*path, name), inherited + own)
        else:
            yield path, cmd, inherited + own

    yield from walk(main, (), [])


def _base(path: tuple[str, ...], work: Path) -> dict[str, str]:
    """The options a command needs to get past its own usage checks."""
    config = work / "server.properties"
    base = {
        "observe": {"--bootstrap-controller": REFUSED},
        "dump-log": {"--files": str(work / "missing.log")},
        "doctor": {"--dir": str(work / "empty")},
        "node status": {"--metrics-address": REFUSED},
        "storage format": {"--cluster-id": "MkU3OEVBNTcwNTJENDM2Qg", "--config": str(config)},
        "storage recover-quorum": {"--config": str(config)},
        "quorum remove-controller": {"--controller-id": "1", "--controller-directory-id": "K4WGSctTSGGjZPak68seiQ"},
    }.get(" ".join(path), {})
    if path[0] in ("quorum", "features") and path[-1] not in ("version-mapping", "feature-dependencies"):
        base = {"--bootstrap-controller": REFUSED, **base}
    return base


def _args(path: tuple[str, ...], option: click.Option, value: str, work: Path) -> list[str]:
    options = {**_base(path, work), option.opts[0]: value}
    group_opts = {"--bootstrap-controller", "--bootstrap-server", "--command-config"}
    head = [path[0]]
    tail = list(path[1:])
    for name, v in options.items():
        if path[0] in ("quorum", "features") and name in group_opts:
            head += [name, v]
        else:
            tail += [name, v]
    return head + tail


CASES = [(path, option) for path, _, options in _leaves()
         if not any(" ".join(path).startswith(s) for s in _SKIPPED) for option in options]

#: Values people type by mistake, and anything at all.
_VALUES = st.one_of(
    st.sampled_from(["", "-1", "0", "1", "99999999999", "1e9", "nan", "x", REFUSED, "[::1]:9093", "a=b", "=",
                     "1@127.0.0.1:1", "1@h:1:AAAAAAAAAAAAAAAAAAAAAA", ",", "4.1", "3.9", "kraft.version=9",
                     "\\u00e9", "\u00e9", " "]),
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.text(max_size=24),
    st.binary(max_size=24).map(lambda b: b.decode("latin-1")),
)


def _safe(value: str) -> str:
    """Keep paths inside the test's directory (a value is also a path to some options)."""
    return value.replace("\x00", "").replace("..", "_").lstrip("/~")


@pytest.mark.parametrize(("path", "option"), CASES, ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in CASES])
def test_any_value_of_any_option_is_an_answer_or_one_error_line(path: tuple[str, ...], option: click.Option,
                                                                tmp_path: Path) -> None:
    work = tmp_path
    (work / "empty").mkdir()
    (work / "server.properties").write_text(
        "process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:0\n"
        "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@127.0.0.1:1\n"
        f"metadata.log.dir={work / 'data'}\n")
    cwd = os.getcwd()
    os.chdir(work)  # relative paths a value names land here
    try:
        @settings(max_examples=6, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(_VALUES.map(_safe))
        def run(value: str) -> None:
            result = cli.invoke(_args(path, option, value, work), catch_exceptions=True)
            output = result.output + (result.stderr if result.stderr_bytes is not None else "")
            assert result.exit_code != EXIT_INTERNAL, output
            assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
            assert "Traceback" not in output and "bug in kraft" not in output, output

        run()
    finally:
        os.chdir(cwd)


_BASE_CONFIG = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:9093",
                "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093"}
_KEYS = sorted(set(DEFAULTS) | set(NUMERIC_KEYS) | set(_BASE_CONFIG))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(_KEYS), st.one_of(_VALUES, st.integers().map(str)))
def test_any_value_of_any_key_is_a_config_or_one_config_error(key: str, value: str) -> None:
    """Every key a node reads, any value: NodeConfig or a one-line ConfigError
    naming the key (never another exception: exit 70)."""
    try:
        NodeConfig.from_properties({**_BASE_CONFIG, key: value})
    except ConfigError as e:
        message = str(e)
        assert message and "\n" not in message
        # Kafka's voters check names the node id as "the node id N" (KafkaConfig.validateValues).
        assert key in message or key in ("controller.listener.names", "listeners") \
            or (key == "node.id" and "the node id" in message), (key, message)


@pytest.mark.parametrize("command", [["observe", "--bootstrap-controller", "127.0.0.1:1"],
                                     ["shell", "--bootstrap-controller", "127.0.0.1:1"],
                                     ["node", "status", "--metrics-address", "127.0.0.1:1"]])
@pytest.mark.parametrize("timeout", ["1e300", "nan", "-1"])
def test_a_timeout_out_of_kafkas_range_is_a_usage_error(command: list[str], timeout: str) -> None:
    """``--timeout 1e300`` overflowed trio's clock ("timestamp out of range
    for platform time_t", exit 70, found by the property test above); nan
    passes any range check. Each is now a usage error naming the range."""
    result = cli.invoke([*command, "--timeout", timeout])
    assert result.exit_code == 2, result.output
    assert "Invalid value for '--timeout'" in result.output and "Traceback" not in result.output, result.output
