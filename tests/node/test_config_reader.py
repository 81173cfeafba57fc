"""A ``server.properties`` is read as Kafka reads it, by one reader
(:func:`kraft.config.read_properties`) that every command uses:
``java.util.Properties.load(InputStream)`` (Kafka's ``Utils.loadProps``),
which decodes ISO-8859-1, ends a line at ``\\n``, ``\\r`` or ``\\r\\n`` only,
takes ``=``, ``:`` or whitespace as the separator, ``#`` and ``!`` as
comments, a trailing backslash as a continuation and ``\\uXXXX`` escapes
(``Properties.LineReader``, ``Properties.loadConvert``).

Issue 33: one Latin-1 comment gave ``UnicodeDecodeError ... bug in kraft``
(exit 70) from ``node start``, ``doctor --config``, ``node status --config``
and ``recover-quorum --config``, while ``storage format`` read the file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraft.config import ConfigError, NodeConfig, parse_properties, read_properties
from kraft.errors import EXIT_CONFIG, EXIT_INTERNAL
from kraft.records.state_files import PropertiesSyntaxError, format_java_properties, parse_java_properties
from tests.harness import cli
from tests.ports import free_port

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def _no_crash(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode != EXIT_INTERNAL, result.stderr
    assert "Traceback" not in result.stderr and "bug in kraft" not in result.stderr, result.stderr


def _config_bytes(tmp_path: Path, port: int, extra: bytes = b"") -> bytes:
    return (b"# r\xe9plica du contr\xf4leur (Latin-1, as Properties.store writes it)\n"
            b"process.roles=controller\nnode.id=1\n"
            + f"controller.quorum.voters=1@127.0.0.1:{port}\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
              f"metadata.log.dir={tmp_path / 'data'}\n".encode()
            + b"controller.listener.names=CONTROLLER\n" + extra)


def test_the_java_properties_rules() -> None:
    text = ("# hash comment\n! bang comment\n  a = b \nc:d\ne f\ng\t:\th\nlong=one\\\n    two\\\r\n three\n"
            "esc=a\\:b\\u00e9\\t\nempty=\nkey\\ with\\=seps=v\r"
            "cr.only=1\rvalue.with.nel=x\x85y\x0bz\x1cw\n")
    assert parse_java_properties(text) == {
        "a": "b ", "c": "d", "e": "f", "g": "h", "long": "onetwothree", "esc": "a:b\u00e9\t", "empty": "",
        "key with=seps": "v", "cr.only": "1",
        # \x85 (NEL), \x0b, \x1c end a line for Python's str.splitlines, not for Java.
        "value.with.nel": "x\x85y\x0bz\x1cw",
    }


@pytest.mark.parametrize("text", ["a=\\u00g1\n", "a=\\u12\n", "a\\u=1\n"])
def test_a_malformed_unicode_escape_is_refused_as_java_refuses_it(text: str) -> None:
    with pytest.raises(PropertiesSyntaxError, match=r"Malformed \\uxxxx encoding"):
        parse_java_properties(text)
    with pytest.raises(ConfigError, match=r"cannot read the config: Malformed \\uxxxx encoding"):
        parse_properties(text)


_VALUE_CHARS = st.characters(min_codepoint=0, max_codepoint=0xFFFF, exclude_categories=("Cs",))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.text(_VALUE_CHARS, min_size=1, max_size=12), st.text(_VALUE_CHARS, max_size=20),
                       max_size=6))
def test_what_properties_store_writes_reads_back(props: dict[str, str]) -> None:
    """``format_java_properties`` writes what ``Properties.store`` writes
    (Latin-1, everything else as \\uXXXX): read back, it is the same map."""
    text = format_java_properties(props, now=0)
    assert parse_java_properties(text.encode("latin-1").decode("latin-1")) == props


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_a_properties_file_or_one_config_error(data: bytes) -> None:
    """Properties.load reads any byte sequence; the one thing it refuses is
    a malformed \\uXXXX escape. Then NodeConfig.from_properties either
    builds a config or raises a ConfigError naming the problem."""
    try:
        props = parse_properties(data.decode("latin-1"))
    except ConfigError as e:
        assert "Malformed" in str(e)
        return
    try:
        NodeConfig.from_properties(props)
    except ConfigError as e:
        assert str(e) and "\n" not in str(e)


def test_the_reader_takes_latin1_bytes(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_bytes(_config_bytes(tmp_path, 9093, b"kraft.comment=caf\xe9\n"))
    props = read_properties(path)
    assert props["kraft.comment"] == "caf\u00e9" and props["node.id"] == "1"


def test_every_command_reads_a_latin1_config(tmp_path: Path) -> None:
    """The issue's file: one Latin-1 comment. Every command that takes
    --config reads it; none exits 70 or prints a traceback."""
    port = free_port()
    config = tmp_path / "server.properties"
    config.write_bytes(_config_bytes(tmp_path, port, b"metrics.prometheus.port=0\n"))
    formatted = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER_ID)
    assert formatted.returncode == 0, formatted.stderr
    doctor = cli.run("doctor", "--config", str(config))
    _no_crash(doctor)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    status = cli.run("node", "status", "--config", str(config))
    _no_crash(status)
    assert "metrics.prometheus.port is not set (or 0)" in status.stderr
    recover = cli.run("storage", "recover-quorum", "--config", str(config), "--offline")
    _no_crash(recover)
    start = cli.run("node", "start", "-c", str(config), "--override", "node.id=-1")
    assert start.returncode == EXIT_CONFIG, start.stderr  # read, then the override is refused by its value
    assert "Invalid value -1 for configuration node.id" in start.stderr


@pytest.mark.parametrize("command", [("node", "start", "-c"), ("storage", "recover-quorum", "--config"),
                                     ("node", "status", "--config"), ("doctor", "--config")])
def test_a_malformed_escape_is_one_config_line_in_every_command(command: tuple[str, ...], tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(_config_bytes(tmp_path, 9093, b"kraft.comment=C:\\users\\me\n"))
    result = cli.run(*command, str(config))
    _no_crash(result)
    assert "Malformed \\uxxxx encoding" in result.stderr + result.stdout
    if command[0] != "doctor":  # doctor reports it as a finding (config-unreadable), exit 1
        assert result.returncode == EXIT_CONFIG, result.stderr
    else:
        assert result.returncode == 1 and "config-unreadable" in result.stdout, result.stdout


def test_storage_format_refuses_a_malformed_escape_with_the_config_exit_code(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_bytes(_config_bytes(tmp_path, 9093, b"kraft.comment=\\uZZZZ\n"))
    result = cli.run("storage", "format", "-c", str(config), "-t", CLUSTER_ID)
    _no_crash(result)
    assert result.returncode == EXIT_CONFIG and "Malformed \\uxxxx encoding" in result.stderr
    assert not (tmp_path / "data").exists()
