"""server.properties parsing: Kafka's keys, defaults and value formats."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kraft.config import ConfigError, Endpoint, NodeConfig, VoterSpec, parse_properties

BASE = {
    "process.roles": "controller",
    "node.id": "1",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@localhost:9094,3@[::1]:9095",
}


def test_kafka_defaults() -> None:
    c = NodeConfig.from_properties(BASE)
    assert c.node_id == 1
    assert c.voters == (VoterSpec(1, "127.0.0.1", 9093), VoterSpec(2, "localhost", 9094), VoterSpec(3, "::1", 9095))
    assert c.quorum.election_timeout_ms == 1000 and c.quorum.fetch_timeout_ms == 2000
    assert c.quorum.append_linger_ms == 25 and c.quorum.request_timeout_ms == 2000
    assert c.metadata_log_dir == Path("/tmp/kafka-logs")
    assert c.segment_bytes == 1 << 30 and c.retention_bytes == 100 << 20
    assert c.max_bytes_between_snapshots == 20 << 20
    assert c.security_protocol_map["CONTROLLER"] == "PLAINTEXT"
    assert c.controller_listener == Endpoint("CONTROLLER", "127.0.0.1", 9093)
    assert c.is_voter_candidate and not c.auto_join and c.prometheus_port is None


def test_log_dir_precedence() -> None:
    assert NodeConfig.from_properties({**BASE, "log.dirs": "/a,/b"}).metadata_log_dir == Path("/a")
    assert NodeConfig.from_properties({**BASE, "log.dirs": "/a", "metadata.log.dir": "/m"}).metadata_log_dir == Path("/m")


def test_bootstrap_servers_instead_of_voters() -> None:
    props = {k: v for k, v in BASE.items() if k != "controller.quorum.voters"}
    props["controller.quorum.bootstrap.servers"] = "127.0.0.1:9093, 127.0.0.1:9094"
    c = NodeConfig.from_properties(props)
    assert c.voters == () and c.bootstrap_servers == (("127.0.0.1", 9093), ("127.0.0.1", 9094))


@pytest.mark.parametrize("key,value,message", [
    ("node.id", "one", "Invalid value one for configuration node.id: Not a number of type INT"),
    ("controller.quorum.voters", "1@host", "expected host:port"),
    ("controller.quorum.voters", "1@a:1,1@b:2", "duplicate voter id"),
    ("controller.quorum.voters", "x@a:1", "not an integer"),
    ("controller.quorum.fetch.timeout.ms", "0", "Value must be at least 1"),
    # KafkaConfig.validateValues: a broker-only node is no voter.
    ("process.roles", "broker", "If process.roles contains just the 'broker' role, the node id 1 must not be "
                                "included in the set of voters controller.quorum.voters={1"),
    ("listeners", "CONTROLLER:9093", "NAME://host:port"),
    ("controller.listener.names", "OTHER", "none of OTHER"),
    ("controller.quorum.auto.join.enable", "yes", "true or false"),
    ("listener.security.protocol.map", "CONTROLLER:TLS", "bad entry"),
    # Every port key is range-checked, the key named.
    ("metrics.prometheus.port", "99999", "Invalid value 99999 for configuration metrics.prometheus.port: Value must be no more than 65535"),
    ("listeners", "CONTROLLER://127.0.0.1:70000", "for configuration listeners: port must be between 0 and 65535"),
    ("advertised.listeners", "CONTROLLER://h:65536", "for configuration advertised.listeners: port must be between 0 and 65535"),
    ("controller.quorum.voters", "1@h:99999", "for configuration controller.quorum.voters: port must be between 1 and 65535"),
    # Kafka's wording (ClientUtils.parseAndValidateAddresses), the key named.
    ("controller.quorum.bootstrap.servers", "h:99999", "Invalid url in controller.quorum.bootstrap.servers: h:99999"),
    # KIP-1219's sizes: at least one byte.
    ("controller.quorum.fetch.max.bytes", "0", "for configuration controller.quorum.fetch.max.bytes: Value must be at least 1"),
    ("controller.quorum.fetch.snapshot.max.bytes", "-1", "fetch.snapshot.max.bytes: Value must be at least 1"),
    ("controller.quorum.fetch.max.bytes", "1MB", "for configuration controller.quorum.fetch.max.bytes: Not a number of type INT"),
])
def test_bad_values_name_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        NodeConfig.from_properties({**BASE, key: value})


def test_missing_quorum_is_an_error() -> None:
    props = {k: v for k, v in BASE.items() if k != "controller.quorum.voters"}
    with pytest.raises(ConfigError, match="controller.quorum.voters or controller.quorum.bootstrap.servers"):
        NodeConfig.from_properties(props)


def test_unknown_keys_warn_known_broker_keys_do_not(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kraft.config"):
        NodeConfig.from_properties({**BASE, "num.partitions": "3", "controller.quorum.votrs": "x"})
    assert "controller.quorum.votrs" in caplog.text
    assert "num.partitions" not in caplog.text


def test_the_authorizers_key_is_known(caplog: pytest.LogCaptureFixture) -> None:
    """StandardAuthorizer's ``allow.everyone.if.no.acl.found`` (set beside
    ``authorizer.class.name`` on Kafka's controllers and brokers alike) is a
    Kafka key: no "unknown config key" line for it."""
    with caplog.at_level(logging.WARNING, logger="kraft.config"):
        NodeConfig.from_properties({**BASE, "authorizer.class.name":
                                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                    "allow.everyone.if.no.acl.found": "true"})
    assert "allow.everyone" not in caplog.text


def test_a_near_miss_names_the_key_it_resembles(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kraft.config"):
        NodeConfig.from_properties({**BASE, "controller.quorum.election.timeout.msec": "5000", "zzz.qqq": "1"})
    assert ("ignoring unknown config key controller.quorum.election.timeout.msec: did you mean "
            "controller.quorum.election.timeout.ms? (running with controller.quorum.election.timeout.ms=1000)"
            ) in caplog.text
    assert "ignoring unknown config key zzz.qqq\n" in caplog.text + "\n"


def test_fetch_size_keys_reach_the_raft_core() -> None:
    """KIP-1219 (Kafka 4.3's QuorumConfig): controller.quorum.fetch.max.bytes
    and controller.quorum.fetch.snapshot.max.bytes, default 1 MiB each; the
    core puts them in the Fetch / FetchSnapshot it sends (MaxBytes)."""
    c = NodeConfig.from_properties(BASE)
    assert (c.quorum.fetch_max_bytes, c.quorum.fetch_snapshot_max_bytes) == (1048576, 1048576)
    c = NodeConfig.from_properties({**BASE, "controller.quorum.fetch.max.bytes": "65536",
                                    "controller.quorum.fetch.snapshot.max.bytes": "4096"})
    assert (c.quorum.fetch_max_bytes, c.quorum.fetch_snapshot_max_bytes) == (65536, 4096)


def test_load_takes_a_str_path(tmp_path: Path) -> None:
    path = tmp_path / "c.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in BASE.items()))
    assert NodeConfig.load(str(path)).node_id == 1


def test_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment\n"
        "a=1\n b : 2\nc 3\n"
        "long=one,\\\n    two\n"
        "esc=x\\u0041\\=y\\:z\n"
        "empty=\n"
    )
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "long": "one,two", "esc": "xA=y:z", "empty": ""}


def test_load_reports_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        NodeConfig.load(tmp_path / "missing.properties")


def test_fetch_size_keys_are_what_the_follower_asks_for() -> None:
    """From server.properties to the requests the raft core builds: a
    follower's Fetch and FetchSnapshot carry the configured MaxBytes."""
    from kraft.raft.rpcs import FetchRequest, FetchSnapshotRequest
    from kraft.records.view import OffsetAndEpoch
    from tests.harness.raft_context import RaftTestContext

    quorum = NodeConfig.from_properties({**BASE, "controller.quorum.fetch.max.bytes": "4321",
                                         "controller.quorum.fetch.snapshot.max.bytes": "1234"}).quorum
    ctx = RaftTestContext(local_id=1, voters=[1, 2, 3], config=quorum).start()
    ctx.clear_sent()
    ctx.deliver(ctx.begin_quorum_epoch(leader=2, epoch=5), source=2)
    [fetch] = ctx.assert_sent(FetchRequest)
    assert fetch.message.max_bytes == 4321
    ctx.clear_sent()
    sid = OffsetAndEpoch(4, 3)
    ctx.respond(fetch, ctx.fetch_response(leader=2, epoch=5, snapshot_id=sid))
    [snapshot_fetch] = ctx.assert_sent(FetchSnapshotRequest, destination=2, snapshot_id=sid, position=0)
    assert snapshot_fetch.message.max_bytes == 1234


def test_a_near_miss_of_an_unset_key_does_not_print_an_empty_value(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 26: ``nodeid=1`` without node.id warned ``(running with node.id=)``."""
    props = {k: v for k, v in BASE.items() if k != "node.id"}
    with caplog.at_level(logging.WARNING, logger="kraft.config"), pytest.raises(ConfigError, match='"node.id"'):
        NodeConfig.from_properties({**props, "node.idd": "1"})
    assert "did you mean node.id? (node.id is not set)" in caplog.text
    assert "node.id=)" not in caplog.text


def test_an_observer_is_a_broker_and_a_controller_must_be_a_voter() -> None:
    """KafkaConfig.validateValues: with static voters a controller is one
    of them (validateControllerQuorumVotersMustContainNodeIdForKRaftController);
    a node that follows without voting is process.roles=broker. With
    bootstrap servers (KIP-853) a controller may wait outside the voters."""
    observer = NodeConfig.from_properties({**BASE, "node.id": "100", "process.roles": "broker"})
    assert observer.node_id == 100 and not observer.is_voter_candidate
    with pytest.raises(ConfigError, match=r"the node id 100 must be included in the set of voters "
                                          r"controller.quorum.voters=\{1, 2, 3\}"):
        NodeConfig.from_properties({**BASE, "node.id": "100"})
    dynamic = {k: v for k, v in BASE.items() if k != "controller.quorum.voters"}
    joining = NodeConfig.from_properties({**dynamic, "node.id": "100",
                                          "controller.quorum.bootstrap.servers": "127.0.0.1:9094"})
    assert joining.node_id == 100


@pytest.mark.parametrize("entry,listener,warned", [
    ("1@127.0.0.1:9193", "CONTROLLER://127.0.0.1:9093", True),   # another port
    ("1@10.0.0.9:9093", "CONTROLLER://127.0.0.1:9093", True),    # another host
    ("1@127.0.0.1:9093", "CONTROLLER://127.0.0.1:9093", False),
    # A wildcard host: Kafka advertises the entry's address
    # (KafkaConfig.effectiveAdvertisedControllerListeners).
    ("1@10.0.0.9:9093", "CONTROLLER://0.0.0.0:9093", False),
])
def test_a_voter_entry_that_is_not_the_nodes_listener_is_named(entry: str, listener: str, warned: bool,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """Kafka starts with such a config (it advertises its own listener), so
    kraft does too, with one WARN line naming both addresses."""
    with caplog.at_level(logging.WARNING, logger="kraft.config"):
        NodeConfig.from_properties({**BASE, "listeners": listener,
                                    "controller.quorum.voters": f"{entry},2@localhost:9094"})
    lines = [r.getMessage() for r in caplog.records if "controller.quorum.voters names node 1" in r.getMessage()]
    assert len(lines) == (1 if warned else 0), lines
    if warned:
        assert entry.partition("@")[2] in lines[0] and listener.partition("//")[2] in lines[0]
