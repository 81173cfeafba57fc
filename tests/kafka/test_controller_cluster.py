"""Issue 41: real Kafka brokers and their clients on a kraft controller
quorum -- three ``kraft node start`` controllers, three real Kafka brokers,
Kafka's own tools and clients, on the oldest and the newest release.

One cluster per release serves the module's tests (its JVMs cost most of
the time); each test leaves it as it found it: its own topics, its own
group ids. What each test asserts is what Kafka's controller answers for
the same step (the class and method in each docstring).
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster
from tests.kafka.kraft_controlled import bootstrap, kraft_controlled, until
from tests.kafka.processes import run_tool
from tests.kafka.releases import ends, ends_and_fixtures, require

pytestmark = pytest.mark.slow

#: Kafka's StandardAuthorizer on every node (the controllers store the ACLs;
#: the brokers enforce them) and no ACL blocking anyone: kafka-acls works,
#: every client may do everything.
_AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
               "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS"}
@pytest.fixture(scope="module", params=ends_and_fixtures())
def kraft_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    release = require(request.param)
    cluster = kraft_controlled(tmp_path_factory.mktemp(f"controller-{release.version}"), release,
                               extra={**_AUTHORIZER, "kraft.witness": "false", "kraft.controller": "true",
                                      # A controller snapshot early (Kafka's default is 20 MiB of records).
                                      "metadata.log.max.record.bytes.between.snapshots": 16384})
    try:
        cluster.start(list(cluster.kraft.values()))
        cluster.start(list(cluster.brokers.values()))
        yield cluster
    finally:
        cluster.close()


_bootstrap = bootstrap


def _tool(cluster: KafkaCluster, name: str, *args: str) -> str:
    return cluster.run_tool(name, "--bootstrap-server", _bootstrap(cluster), *args)


def _failing_tool(cluster: KafkaCluster, name: str, *args: str) -> str:
    done = run_tool(cluster.release, name, "--bootstrap-server", _bootstrap(cluster), *args, work=cluster.root)
    return done.stdout + done.stderr


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_kafka_topics_creates_describes_grows_and_deletes(kraft_cluster: KafkaCluster) -> None:
    """ReplicationControlManager.createTopics (striped placement over the
    three brokers), createPartitions and deleteTopics, through the brokers'
    forwarding (Envelope) as kafka-topics.sh reaches them."""
    c = kraft_cluster
    topic = _topic("orders")
    assert f"Created topic {topic}." in _tool(c, "TopicCommand", "--create", "--topic", topic, "--partitions", "6",
                                               "--replication-factor", "3")
    described = _tool(c, "TopicCommand", "--describe", "--topic", topic)
    rows = [line for line in described.splitlines() if "Partition:" in line]
    assert len(rows) == 6, described
    leaders = {re.search(r"Leader: (\d+)", r).group(1) for r in rows}  # type: ignore[union-attr]
    assert leaders == {"101", "102", "103"}, described  # every broker leads some: the striped placer
    for row in rows:
        replicas = re.search(r"Replicas: ([\d,]+)", row).group(1)  # type: ignore[union-attr]
        isr = re.search(r"Isr: ([\d,]+)", row).group(1)  # type: ignore[union-attr]
        assert sorted(replicas.split(",")) == ["101", "102", "103"], row
        assert sorted(isr.split(",")) == ["101", "102", "103"], row
    _tool(c, "TopicCommand", "--alter", "--topic", topic, "--partitions", "8")
    until("8 partitions", lambda: _tool(c, "TopicCommand", "--describe", "--topic", topic).count("Partition:") == 8)
    _tool(c, "TopicCommand", "--delete", "--topic", topic)
    until("topic deleted", lambda: topic not in _tool(c, "TopicCommand", "--list"))


def test_refusals_carry_kafkas_errors(kraft_cluster: KafkaCluster) -> None:
    """ReplicationControlManager.createTopic's refusals as kafka-topics.sh
    prints them: a replication factor above the registered brokers
    (INVALID_REPLICATION_FACTOR), an invalid name (INVALID_TOPIC_EXCEPTION),
    an invalid config value (INVALID_CONFIG), an existing topic
    (TOPIC_ALREADY_EXISTS)."""
    c = kraft_cluster
    out = _failing_tool(c, "TopicCommand", "--create", "--topic", _topic("wide"), "--replication-factor", "4")
    assert "InvalidReplicationFactorException" in out, out
    assert "only 3 broker(s) are registered" in out, out
    out = _failing_tool(c, "TopicCommand", "--create", "--topic", "bad/name")
    assert "InvalidTopicException" in out or "illegal character" in out, out
    # kafka-topics.sh checks config values itself; kafka-python sends them as given.
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import InvalidConfigurationError

    admin = KafkaAdminClient(bootstrap_servers=_bootstrap(c))
    try:
        with pytest.raises(InvalidConfigurationError, match="retention.ms"):
            admin.create_topics([NewTopic(_topic("cfg"), 1, 1, topic_configs={"retention.ms": "soon"})])
    finally:
        admin.close()
    topic = _topic("twice")
    _tool(c, "TopicCommand", "--create", "--topic", topic)
    out = _failing_tool(c, "TopicCommand", "--create", "--topic", topic)
    assert "TopicExistsException" in out, out
    _tool(c, "TopicCommand", "--delete", "--topic", topic)


def test_kafka_configs_sets_topic_broker_and_cluster_defaults(kraft_cluster: KafkaCluster) -> None:
    """ConfigurationControlManager.incrementalAlterConfigs for a topic, one
    broker and the cluster default, read back by the brokers' DescribeConfigs
    (they answer it from the records the controller wrote)."""
    c = kraft_cluster
    topic = _topic("configs")
    _tool(c, "TopicCommand", "--create", "--topic", topic)
    _tool(c, "ConfigCommand", "--alter", "--entity-type", "topics", "--entity-name", topic,
          "--add-config", "retention.ms=86400000")
    _tool(c, "ConfigCommand", "--alter", "--entity-type", "brokers", "--entity-name", "101",
          "--add-config", "log.cleaner.threads=2")
    _tool(c, "ConfigCommand", "--alter", "--entity-type", "brokers", "--entity-default",
          "--add-config", "log.retention.bytes=1073741824")
    until("topic config", lambda: "retention.ms=86400000" in _tool(
        c, "ConfigCommand", "--describe", "--entity-type", "topics", "--entity-name", topic))
    until("broker config", lambda: "log.cleaner.threads=2" in _tool(
        c, "ConfigCommand", "--describe", "--entity-type", "brokers", "--entity-name", "101"))
    until("cluster default", lambda: "log.retention.bytes=1073741824" in _tool(
        c, "ConfigCommand", "--describe", "--entity-type", "brokers", "--entity-default"))
    _tool(c, "ConfigCommand", "--alter", "--entity-type", "brokers", "--entity-default",
          "--delete-config", "log.retention.bytes")
    _tool(c, "TopicCommand", "--delete", "--topic", topic)


def test_kafka_acls_adds_lists_and_removes(kraft_cluster: KafkaCluster) -> None:
    """AclControlManager.createAcls / deleteAcls; the brokers' StandardAuthorizer
    lists what the controller wrote."""
    c = kraft_cluster
    topic = _topic("acl")
    _tool(c, "AclCommand", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic)
    until("ACL listed", lambda: "User:alice" in _tool(c, "AclCommand", "--list", "--topic", topic))
    _tool(c, "AclCommand", "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
          "--topic", topic)
    until("ACL removed", lambda: "User:alice" not in _tool(c, "AclCommand", "--list", "--topic", topic))


def test_kafka_features_and_metadata_quorum_describe_the_kraft_quorum(kraft_cluster: KafkaCluster) -> None:
    """FeatureControlManager's finalized levels as the brokers report them,
    and the quorum as kafka-metadata-quorum.sh describes it through a broker."""
    c = kraft_cluster
    features = _tool(c, "FeatureCommand", "describe")
    assert "Feature: metadata.version" in features, features
    status = _tool(c, "MetadataQuorumCommand", "describe", "--status")
    assert re.search(r"CurrentVoters:\s+\[", status), status
    leader = int(re.search(r"LeaderId:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    assert leader in (1, 2, 3), status


def test_leader_election_and_reassignment(kraft_cluster: KafkaCluster) -> None:
    """ReplicationControlManager.electLeaders (preferred) and
    alterPartitionReassignments / listPartitionReassignments, with
    kafka-leader-election.sh and kafka-reassign-partitions.sh."""
    c = kraft_cluster
    topic = _topic("moves")
    _tool(c, "TopicCommand", "--create", "--topic", topic, "--replica-assignment", "101:102")
    out = _tool(c, "LeaderElectionCommand", "--election-type", "preferred", "--topic", topic, "--partition", "0")
    # ELECTION_NOT_NEEDED: 101, the preferred replica, leads already.
    assert out.strip() == f"Valid replica already elected for partitions {topic}-0", out
    plan = c.root / f"{topic}.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"%s","partition":0,"replicas":[103,102,101]}]}' % topic)
    _tool(c, "ReassignPartitionsCommand", "--execute", "--reassignment-json-file", str(plan))
    until("reassignment complete", lambda: "is completed" in _tool(
        c, "ReassignPartitionsCommand", "--verify", "--reassignment-json-file", str(plan)))
    described = _tool(c, "TopicCommand", "--describe", "--topic", topic)
    assert "Replicas: 103,102,101" in described, described
    if "Leader: 103" not in described:
        out = _tool(c, "LeaderElectionCommand", "--election-type", "preferred", "--topic", topic, "--partition", "0")
        assert out.strip() == f"Successfully completed leader election (PREFERRED) for partitions {topic}-0", out
    until("103 leads", lambda: "Leader: 103" in _tool(c, "TopicCommand", "--describe", "--topic", topic))
    _tool(c, "TopicCommand", "--delete", "--topic", topic)


def test_kafka_python_and_kcat_produce_and_consume_and_a_group_commits(kraft_cluster: KafkaCluster) -> None:
    """The clients' defaults: an idempotent producer (AllocateProducerIds
    through the brokers), acks=all on RF 3, a consumer group that commits
    its offsets (the group coordinator's topic, created by the controller)."""
    from kafka import KafkaConsumer, KafkaProducer

    c = kraft_cluster
    topic = _topic("clients")
    _tool(c, "TopicCommand", "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "3")
    producer = KafkaProducer(bootstrap_servers=_bootstrap(c), acks="all", enable_idempotence=True)
    for i in range(100):
        producer.send(topic, f"py-{i}".encode())
    producer.flush(timeout=60)
    producer.close()
    kcat = subprocess.run(["kcat", "-b", _bootstrap(c), "-P", "-t", topic, "-X", "enable.idempotence=true"],
                          input="\n".join(f"kcat-{i}" for i in range(50)), text=True, capture_output=True,
                          timeout=120)
    assert kcat.returncode == 0, kcat.stderr
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = KafkaConsumer(topic, bootstrap_servers=_bootstrap(c), group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=20000)
    seen = {m.value.decode() for m in consumer}
    consumer.commit()
    consumer.close()
    assert seen == {f"py-{i}" for i in range(100)} | {f"kcat-{i}" for i in range(50)}
    read = subprocess.run(["kcat", "-b", _bootstrap(c), "-C", "-t", topic, "-e", "-q", "-o", "beginning"],
                          text=True, capture_output=True, timeout=120)
    assert set(read.stdout.split()) == seen, read.stderr
    # --timeout: the describe's wait for FindCoordinator (ConsumerGroupCommand's
    # default of 5 s timed out on a loaded machine).
    groups = _tool(c, "ConsumerGroupCommand", "--describe", "--group", group, "--timeout", "60000")
    assert topic in groups and re.search(rf"{topic}\s+\d+\s+\d+\s+\d+\s+0\b", groups), groups


def test_a_transactional_copy(kraft_cluster: KafkaCluster) -> None:
    """Kafka's TransactionalMessageCopier (its system tests' EOS client):
    the transaction coordinator gets producer ids from the controller and
    its topic from CreateTopics; every message is copied exactly once."""
    c = kraft_cluster
    source, target = _topic("txn-in"), _topic("txn-out")
    for t in (source, target):
        _tool(c, "TopicCommand", "--create", "--topic", t, "--partitions", "1", "--replication-factor", "3")
    produced = run_tool(c.release, "VerifiableProducer", "--bootstrap-server", _bootstrap(c), "--topic", source,
                        "--max-messages", "200", "--acks", "-1", work=c.root, timeout_s=180)
    assert produced.returncode == 0, produced.stderr[-2000:]
    copied = run_tool(c.release, "TransactionalMessageCopier", "--broker-list", _bootstrap(c),
                      "--input-topic", source, "--input-partition", "0", "--output-topic", target,
                      "--transactional-id", f"copier-{uuid.uuid4().hex[:6]}", "--consumer-group", "copier",
                      "--max-messages", "200", "--transaction-size", "50", work=c.root, timeout_s=240)
    assert copied.returncode == 0, copied.stderr[-2000:]
    assert '"remaining":0' in copied.stdout.replace(" ", ""), copied.stdout[-2000:]
    listed = _tool(c, "TransactionsCommand", "list")
    assert "copier-" in listed, listed


def _raw_request(port: int, body: object, version: int) -> object:
    """One request on a fresh connection to a controller listener, as an
    admin client with ``bootstrap.controllers`` sends it (KIP-919)."""
    import socket

    from kraft.wire.codec import decode_response, encode_request
    from kraft.wire.framing import FrameReader

    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"".join(bytes(p) for p in encode_request(body, version, 1, client_id="adminclient-test")))
        reader = FrameReader()
        while (frame := reader.next_frame()) is None:
            data = s.recv(65536)
            assert data, "the controller closed the connection"
            reader.feed(data)
    return decode_response(frame, type(body).API_KEY, version).body  # type: ignore[attr-defined]


def _leader(cluster: KafkaCluster) -> int:
    status = _tool(cluster, "MetadataQuorumCommand", "describe", "--status")
    return int(re.search(r"LeaderId:\s+(\d+)", status).group(1))  # type: ignore[union-attr]


def test_a_standby_answers_not_controller_and_a_restarted_quorum_resumes(kraft_cluster: KafkaCluster) -> None:
    """ControllerApis on a standby: NOT_CONTROLLER on every topic of a
    CreateTopics sent to it. Then every kraft controller restarts (SIGTERM,
    start): each resumes from its snapshot plus the log (Kafka's
    ``MetadataLoader`` after a restart), the brokers keep their topics, and
    a new CreateTopics succeeds through the new active controller."""
    from kraft.messages.generated.create_topics_request import CreatableTopic, CreateTopicsRequest

    c = kraft_cluster
    kept = _topic("kept")
    _tool(c, "TopicCommand", "--create", "--topic", kept, "--partitions", "2", "--replication-factor", "3")
    leader = _leader(c)
    standby = next(i for i in c.kraft if i != leader)
    create = CreateTopicsRequest(topics=[CreatableTopic(name=_topic("direct"), num_partitions=1, replication_factor=1,
                                                        assignments=[], configs=[])], timeout_ms=30000,
                                 validate_only=False)
    answer = _raw_request(c.kraft[standby].port, create, 7)
    assert [t.error_code for t in answer.topics] == [41], answer  # type: ignore[attr-defined]
    snapshots = [p for v in c.kraft.values() for p in (v.folder / "data" / "__cluster_metadata-0").glob("*.checkpoint")
                 if not p.name.startswith("00000000000000000000-")]
    assert snapshots, "no controller snapshot was written (metadata.log.max.record.bytes.between.snapshots)"
    for voter in c.kraft.values():
        assert voter.terminate() == 0, voter.why()
    for voter in c.kraft.values():
        voter.start()
    for voter in c.kraft.values():
        voter.started()
    until("topics kept", lambda: kept in _tool(c, "TopicCommand", "--list"))
    fresh = _topic("after-restart")
    until("CreateTopics after the restart", lambda: f"Created topic {fresh}." in _tool(
        c, "TopicCommand", "--create", "--topic", fresh, "--replication-factor", "3"))
    described = _tool(c, "TopicCommand", "--describe", "--topic", kept)
    assert described.count("Isr:") == 2, described


def test_kafka_features_upgrades_metadata_version(tmp_path: Path) -> None:
    """FeatureControlManager.updateFeatures through the broker's forwarding:
    kafka-features.sh upgrade --metadata on a cluster formatted at 4.2-IV1
    finalizes the newest level, and the brokers report it. The newest
    release only: one more cluster's JVMs.

    Three kraft controllers: the upgrade passes only once every voter has
    registered (``FeatureControlManager.reasonNotSupported``: "controller 2
    has not registered, and may not support this feature"), so the standbys
    register with the active controller, as Kafka's
    ``ControllerRegistrationManager`` does on every controller."""
    release = require(ends()[-1])
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(), kraft_voters=(1, 2, 3), brokers=(101,),
                      extra={"kraft.witness": "false", "kraft.controller": "true"}, release_version="4.2-IV1")
    cluster.format()
    try:
        cluster.start()
        before = _tool(cluster, "FeatureCommand", "describe")
        assert re.search(r"Feature: metadata.version\s.*FinalizedVersionLevel: 4.2-IV1", before), before
        # Until the standbys' registrations are committed the upgrade is refused (and nothing changes).
        until("metadata.version upgraded", lambda: "metadata.version was upgraded to 33." in _failing_tool(
            cluster, "FeatureCommand", "upgrade", "--metadata", "4.4-IV2"))
        until("4.4-IV2 finalized", lambda: re.search(r"FinalizedVersionLevel: 4.4-IV2", _tool(
            cluster, "FeatureCommand", "describe")))
    finally:
        cluster.close()


def test_kafkas_dump_log_and_shell_read_the_kraft_controllers_files_as_kraft_does(kraft_cluster: KafkaCluster,
                                                                                   tmp_path: Path) -> None:
    """Real ``kafka-dump-log.sh --cluster-metadata-decoder`` and the real
    metadata shell (where the release published one: 4.0.2, 4.1.0) on what
    a kraft controller wrote -- its segments and
    its latest snapshot, copied at one moment -- answer what kraft's own
    dump-log and shell answer, byte for byte."""
    import shutil

    from tests.kafka import live_tools
    from tests.kafka.releases import listed

    c = kraft_cluster
    topic = _topic("read")
    _tool(c, "TopicCommand", "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "3")
    source = c.kraft[1].folder / "data" / "__cluster_metadata-0"
    until("a controller snapshot", lambda: [p for p in source.glob("*.checkpoint")
                                             if not p.name.startswith("00000000000000000000-")])
    copy = tmp_path / "__cluster_metadata-0"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("*.lock", "*.deleted", "quorum-state*"))
    files = sorted(copy.glob("*.log")) + sorted(copy.glob("*.checkpoint"))
    decoded = ""
    for mode in (("--cluster-metadata-decoder",), ("--deep-iteration",)):
        theirs = live_tools.real_dump(c.release, mode, files, tmp_path)
        ours = live_tools.kraft_dump(c.release, mode, files)
        assert theirs.rc == 0 and ours.rc == 0, theirs.stderr[-1000:] + ours.stderr
        for expected, actual in ((theirs.stdout, ours.stdout), (theirs.stderr, ours.stderr)):
            assert not live_tools.first_difference(expected, actual), live_tools.first_difference(expected, actual)
        decoded = decoded or theirs.stdout
    assert f'"name":"{topic}"' in decoded and "REGISTER_BROKER_RECORD" in decoded
    real = live_tools.shell_release(c.release, [require(v) for v in listed()])
    if real is not c.release:
        # Maven Central has no metadata shell of this release (4.4.0): an
        # older line's shell cannot load this release's metadata.version.
        return
    snapshot = max((p for p in copy.glob("*.checkpoint") if not p.name.startswith("00000000000000000000-")),
                   key=lambda p: p.name)
    commands = "ls /image/topics/byName\ncat /image/features/metadataVersion\nls /image/cluster/brokers\n"
    theirs_shell = live_tools.real_shell(real, snapshot, commands, tmp_path)
    ours_shell = live_tools.kraft_shell(c.release, snapshot, commands)
    assert live_tools.answers(ours_shell.stdout)[1:] == live_tools.answers(theirs_shell.stdout)[1:], (
        theirs_shell.stdout, theirs_shell.stderr, ours_shell.stdout)
    assert "101\n102\n103\n" in theirs_shell.stdout, theirs_shell.stdout
