"""Every numeric key a node reads is checked when the config is parsed, as
Kafka's ``ConfigDef`` checks it (``ConfigDef.parseType`` for the type,
``ConfigDef.Range.ensureValid`` for the range, ``ConfigException``'s
wording), so no value in a config file reaches an encoder: issue 26 found
``node.id=99999999999`` and ``controller.quorum.fetch.max.bytes=99999999999``
accepted by the parser and the node then exiting 70 ("a bug in kraft") when
it encoded a LeaderChangeMessage / FetchRequest.

Each key gets its boundary values: min-1, min, max, max+1 and a non-number;
the invalid ones are also fed to the real ``kraft node start`` and
``kraft storage format``, which must say so in one line and exit with the
configuration exit code.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kraft.config import NUMERIC_KEYS, ConfigError, NodeConfig, check_number
from kraft.errors import EXIT_CONFIG
from tests.harness import cli
from tests.harness.configs import make_configs
from tests.harness.poll import settle
from tests.harness.processes import NodeProcess
from tests.ports import free_port

BASE = {
    "process.roles": "controller",
    "node.id": "1",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
}


def _bounds(key: str) -> tuple[int, int]:
    return NUMERIC_KEYS[key].bounds


def _invalid(key: str) -> list[str]:
    lo, hi = _bounds(key)
    return [str(lo - 1), str(hi + 1), "ten"]


def _props(key: str, value: str) -> dict[str, str]:
    props = {**BASE, key: value}
    if key == "node.id":  # a node id outside the voters is an observer: still a valid config
        props["controller.quorum.voters"] = f"{value}@127.0.0.1:9093" if value.isdigit() else BASE[
            "controller.quorum.voters"]
    return props


@pytest.mark.parametrize("key", sorted(NUMERIC_KEYS))
def test_every_numeric_key_accepts_its_range_and_names_itself_outside_it(key: str) -> None:
    lo, hi = _bounds(key)
    for value in (lo, hi):
        NodeConfig.from_properties(_props(key, str(value)))
        assert check_number(key, str(value)) == value
    for value in _invalid(key):
        with pytest.raises(ConfigError) as caught:
            NodeConfig.from_properties(_props(key, value))
        message = str(caught.value)
        assert message.startswith(f"Invalid value {value} for configuration {key}: "), message
        assert "\n" not in message


def test_int_keys_are_java_ints_and_the_issue_values_are_refused() -> None:
    """Kafka defines node.id and the fetch sizes as INT (KRaftConfigs,
    QuorumConfig): 99999999999 is "Not a number of type INT"."""
    for key in ("node.id", "controller.quorum.fetch.max.bytes", "controller.quorum.fetch.snapshot.max.bytes",
                "socket.request.max.bytes", "metadata.log.segment.bytes"):
        assert _bounds(key)[1] == 2**31 - 1
        with pytest.raises(ConfigError, match=f"Invalid value 99999999999 for configuration {key}: "
                                              "Not a number of type INT"):
            NodeConfig.from_properties(_props(key, "99999999999"))


@pytest.mark.parametrize(("key", "value", "message"), [
    ("controller.quorum.voters", "99999999999@127.0.0.1:9093", "is not an integer from 0 to 2147483647"),
    ("controller.quorum.voters", "1@127.0.0.1:0", "port must be between 1 and 65535"),
    ("controller.quorum.voters", "1@127.0.0.1:65536", "port must be between 1 and 65535"),
    ("listeners", "CONTROLLER://127.0.0.1:65536", "port must be between 0 and 65535"),
    ("max.connections.per.ip.overrides", "127.0.0.1:99999999999", "Not a number of type INT"),
])
def test_ids_and_ports_inside_lists_are_checked_too(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"for configuration {key}: .*{message}"):
        NodeConfig.from_properties({**BASE, key: value})
    NodeConfig.from_properties({**BASE, "listeners": "CONTROLLER://127.0.0.1:0",
                                "controller.quorum.voters": "1@127.0.0.1:65535"})  # Kafka allows a listener on 0


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr and "bug in kraft" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("key", sorted(NUMERIC_KEYS))
def test_node_start_and_storage_format_refuse_a_bad_value_with_the_config_exit_code(key: str,
                                                                                     tmp_path: Path) -> None:
    """The real processes, each with some of the bad values (all of them
    are checked in process above): one line, exit code 3."""
    port = free_port()
    below, above, text = _invalid(key)
    config = tmp_path / "server.properties"
    start = ["node", "start", "-c", str(config)]
    format_ = ["storage", "format", "-c", str(config), "-t", "MkU3OEVBNTcwNTJENDM2Qg"]
    for value, command in ((above, start), (text, start), (below, format_)):
        props = {**BASE, "listeners": f"CONTROLLER://127.0.0.1:{port}",
                 "controller.quorum.voters": f"1@127.0.0.1:{port}", "metadata.log.dir": str(tmp_path / "data"),
                 key: value}
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        result = cli.run(*command)
        assert result.returncode == EXIT_CONFIG, (command, result.stderr)
        line = _one_error_line(result)
        assert line.startswith(f"Error: Invalid value {value} for configuration {key}: "), line
        assert not (tmp_path / "data" / "meta.properties").exists()  # format wrote nothing


def test_a_quorum_runs_with_the_largest_ids_and_sizes_kafka_allows(tmp_path: Path) -> None:
    """node.id and the Fetch/FetchSnapshot sizes at Kafka's INT maximum: the
    values of issue 26's crash, brought into range, are encoded as they are
    (int32 fields of LeaderChangeMessage, Vote, Fetch) by two real voters
    that commit records (a 2-voter commit needs the follower's Fetch)."""
    top = 2**31 - 1
    extra = {key: str(top) for key in ("controller.quorum.fetch.max.bytes",
                                       "controller.quorum.fetch.snapshot.max.bytes", "socket.request.max.bytes")}
    paths = make_configs(tmp_path, [top, top - 1], extra=extra)
    nodes = [NodeProcess(node_id, path, tmp_path, append_rate=20) for node_id, path in paths.items()]
    for node in nodes:
        node.start()
    try:
        def alive_and_committing() -> bool:
            if sum(len(n.acks()) for n in nodes) >= 5:
                return True
            assert all(n.alive for n in nodes), "\n".join(n.output() for n in nodes)
            return False

        settle(alive_and_committing, bool, 120, interval_s=0.2)  # a generous bound on a loaded machine
        assert sum(len(n.acks()) for n in nodes) >= 5, "\n".join(n.output() for n in nodes)
    finally:
        codes = [n.terminate() for n in nodes]
    assert "bug in kraft" not in "".join(n.output() for n in nodes)
    assert codes == [0, 0], "\n".join(n.output() for n in nodes)


@pytest.mark.parametrize(("extra", "names"), [
    ("controller.quorum.request.timeout.ms=", "for configuration controller.quorum.request.timeout.ms: Not a number"),
    ("kraft.witness=maybe", "kraft.witness"),
    ("max.connections.per.ip.overrides=:5", "max.connections.per.ip.overrides"),
])
def test_storage_format_refuses_what_node_start_would(extra: str, names: str, tmp_path: Path) -> None:
    """Found trying bad values by hand: an empty number, a bad witness mode
    or overrides list passed `storage format` and stopped `node start`.
    Kafka's format builds the whole KafkaConfig first; so does ours."""
    props = {**BASE, "metadata.log.dir": str(tmp_path / "data")}
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()) + extra + "\n")
    result = cli.run("storage", "format", "-c", str(config), "-t", "MkU3OEVBNTcwNTJENDM2Qg")
    assert result.returncode == EXIT_CONFIG, result.stderr
    assert names in _one_error_line(result)
    assert not (tmp_path / "data" / "meta.properties").exists()
