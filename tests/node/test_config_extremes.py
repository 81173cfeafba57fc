"""Every numeric key's minimum and maximum STARTS a node (issue 33, item 3).

The boundary test of issue 26 only parsed each bound; issue 33 found
``metadata.log.segment.bytes`` 14..60 parsed, formatted and then stopped
``node start`` with "a bug in kraft", exit 70. Here a real ``kraft node
start`` runs with every key at its minimum at once, then at its maximum
at once: it must become leader, commit records where the values allow it,
and stop on SIGTERM with exit code 0.

``metadata.log.segment.bytes`` now has Kafka's floor,
``MetadataLogConfig.CONFIG_DEF``'s ``atLeast(8 * 1024 * 1024)``; smaller
segments go through Kafka's testing key ``internal.metadata.log.segment.bytes``
(``KafkaMetadataLog`` prefers it), whose floor is one batch header.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.config import NUMERIC_KEYS, ConfigError, NodeConfig
from kraft.errors import EXIT_CONFIG
from tests.harness import cli
from tests.harness.configs import make_configs
from tests.harness.poll import settle
from tests.harness.processes import NodeProcess

#: Keys whose extreme is not a value a started node can be checked at, and why.
_NOT_STARTED_AT: dict[str, str] = {
    # The node's own id: the voters list names it (make_configs picks the id).
    "node.id": "the node id is set by the cluster helper, at both bounds",
    # A port: 0 means "no fixed metrics port", the maximum is another host's business.
    "metrics.prometheus.port": "a port: 0 is tested as 'none', 65535 may be taken on a shared host",
}


def _values(which: int) -> dict[str, str]:
    return {key: str(spec.bounds[which]) for key, spec in NUMERIC_KEYS.items() if key not in _NOT_STARTED_AT}


def _run(tmp_path: Path, extra: dict[str, str], node_id: int, commits: bool) -> str:
    paths = make_configs(tmp_path, [node_id], extra=extra)
    node = NodeProcess(node_id, paths[node_id], tmp_path, append_rate=50)
    node.start()
    try:
        wanted = (lambda: len(node.acks()) >= 5) if commits else (lambda: "-> Leader" in node.output())

        def alive_and_wanted() -> bool:
            if wanted():
                return True
            assert node.alive, node.output()
            return False

        settle(alive_and_wanted, bool, 120, interval_s=0.2)  # a bound on a loaded machine, not a timing assertion
        assert wanted(), node.output()
    finally:
        code = node.terminate()
    out = node.output()
    assert "bug in kraft" not in out and "Traceback" not in out, out
    assert code == 0, out
    return out


def test_a_node_runs_and_commits_with_every_key_at_its_minimum(tmp_path: Path) -> None:
    extra = _values(0)
    # Kafka's floor; the smallest segments go through the testing key.
    assert extra["metadata.log.segment.bytes"] == str(8 * 1024 * 1024)
    assert extra["internal.metadata.log.segment.bytes"] == "61"
    _run(tmp_path, extra, node_id=0, commits=True)


def test_a_node_runs_with_every_key_at_its_maximum(tmp_path: Path) -> None:
    """Linger at 2^31-1 ms holds appends for weeks, so this one leads and
    stops; the other maxima are those a node commits with (node.id, sizes:
    test_config_ranges)."""
    _run(tmp_path, _values(1), node_id=2**31 - 1, commits=False)


@pytest.mark.parametrize("value", ["14", "60", str(8 * 1024 * 1024 - 1)])
def test_segment_bytes_below_kafkas_floor_is_refused_at_parse(value: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=f"Invalid value {value} for configuration metadata.log.segment.bytes: "
                                          "Value must be at least 8388608"):
        NodeConfig.from_properties({"process.roles": "controller", "node.id": "1",
                                    "listeners": "CONTROLLER://127.0.0.1:9093",
                                    "controller.listener.names": "CONTROLLER",
                                    "controller.quorum.voters": "1@127.0.0.1:9093",
                                    "metadata.log.segment.bytes": value})
    config = tmp_path / "server.properties"
    config.write_text("process.roles=controller\nnode.id=1\nlisteners=CONTROLLER://127.0.0.1:9093\n"
                      "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
                      f"metadata.log.dir={tmp_path / 'data'}\nmetadata.log.segment.bytes={value}\n")
    for command in (["storage", "format", "-c", str(config), "-t", "MkU3OEVBNTcwNTJENDM2Qg"],
                    ["node", "start", "-c", str(config)]):
        result = cli.run(*command)
        assert result.returncode == EXIT_CONFIG, result.stderr
        assert "Value must be at least 8388608" in result.stderr and "bug in kraft" not in result.stderr
    assert not (tmp_path / "data" / "meta.properties").exists()


def test_the_testing_key_takes_a_segment_of_one_batch_header_and_no_less() -> None:
    base = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093"}
    assert NodeConfig.from_properties({**base, "internal.metadata.log.segment.bytes": "61"}).segment_bytes == 61
    assert NodeConfig.from_properties(base).segment_bytes == 1 << 30
    with pytest.raises(ConfigError, match="internal.metadata.log.segment.bytes: Value must be at least 61"):
        NodeConfig.from_properties({**base, "internal.metadata.log.segment.bytes": "60"})
