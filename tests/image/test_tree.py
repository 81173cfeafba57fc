"""The shell's tree and commands (Kafka's metadata shell command handlers
are the reference for layout, output and messages)."""

from __future__ import annotations

import uuid

import pytest

from kraft.image.builder import ImageBuilder
from kraft.image.session import ShellExit, ShellSession
from kraft.image.tree import build_tree, jackson_pretty, java_double
from kraft.messages.json_form import uuid_to_kafka
from tests.image.records import partition, rec, sub, topic

T1 = uuid.UUID(int=0x1111)
T2 = uuid.UUID(int=0x2222)


@pytest.fixture()
def session() -> ShellSession:
    b = ImageBuilder()
    values = [
        rec("FeatureLevelRecord", name="metadata.version", feature_level=21),
        rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=uuid.UUID(int=3),
            end_points=[sub("RegisterBrokerRecord", "BrokerEndpoint", name="PLAINTEXT", host="h", port=9092,
                            security_protocol=0)], features=[], rack=None, fenced=False),
        topic("foo", T1), partition(T1, 0, [1]), partition(T1, 1, [1]), topic("bar", T2), partition(T2, 0, [1]),
        rec("ConfigRecord", resource_type=2, resource_name="foo", name="retention.ms", value="1000"),
        rec("ConfigRecord", resource_type=4, resource_name="", name="log.retention.ms", value="5"),
        rec("ClientQuotaRecord", entity=[sub("ClientQuotaRecord", "EntityData", entity_type="user",
                                             entity_name=None)], key="producer_byte_rate", value=1e7, remove=False),
    ]
    for offset, value in enumerate(values):
        b.apply(offset, value, epoch=1, timestamp_ms=offset)
    return ShellSession(build_tree(b.image, leader="LeaderAndEpoch(leaderId=OptionalInt[1], epoch=1)"))


def test_ls_root_and_topics(session: ShellSession) -> None:
    assert session.run("ls /").split() == ["brokers", "client-quotas", "configs", "features", "local",
                                           "metadataQuorum", "topicIds", "topics"]
    assert session.run("ls /topics") == "bar\nfoo\n"
    assert session.run("ls /topics/foo") == "0\n1\nid\nname\n"


def test_ls_several_targets_prints_intros(session: ShellSession) -> None:
    # LsCommandHandler.printTargets: files first, then "name:" per directory.
    assert session.run("ls /topics/foo/id /topics/bar") == "id\n\nbar:\n0\nid\nname\n"
    assert session.run("ls /topics/foo /topics/bar") == "foo:\n0\n1\nid\nname\n\nbar:\n0\nid\nname\n"


def test_cat_partition_data_is_the_partition_record_json(session: ShellSession) -> None:
    text = session.run("cat /topics/foo/0/data")
    assert text.startswith("{\n  \"partitionId\" : 0,\n  \"topicId\" : \"" + uuid_to_kafka(T1) + "\",")
    assert '"replicas" : [ 1 ]' in text and '"removingReplicas" : [ ]' in text
    assert session.run("cat /topics/foo/id") == uuid_to_kafka(T1) + "\n"


def test_topic_ids_are_the_same_directories(session: ShellSession) -> None:
    assert session.run(f"cat /topicIds/{uuid_to_kafka(T2)}/name") == "bar\n"


def test_configs_quotas_features_brokers(session: ShellSession) -> None:
    assert session.run("cat /configs/topic/foo/retention.ms") == "1000\n"
    assert session.run("cat /configs/broker/<default>/log.retention.ms") == "5\n"
    assert session.run("cat /client-quotas/user/<default>/producer_byte_rate") == "1.0E7\n"
    assert session.run("cat /features/metadata.version") == '{\n  "name" : "metadata.version",\n  "featureLevel" : 21\n}\n'
    assert session.run("cat /brokers/1/isFenced") == "false\n"
    assert '"brokerId" : 1' in session.run("cat /brokers/1/registration")
    assert session.run("cat /metadataQuorum/offset") == "9\n"
    assert session.run("cat /metadataQuorum/leader") == "LeaderAndEpoch(leaderId=OptionalInt[1], epoch=1)\n"


def test_errors_read_like_kafkas(session: ShellSession) -> None:
    assert session.run("cat /nope") == "cat: /nope: No such file or directory.\n"
    assert session.run("cat /topics") == "cat: /topics: Is a directory\n"
    assert session.run("ls /nope") == "ls: /nope: no such file or directory.\n"
    assert session.run("cd /topics/foo/id") == "cd: /topics/foo/id: not a directory.\n"
    assert session.run("cd /nope") == "cd: /nope: no such directory.\n"
    assert session.run("frobnicate").startswith("Unknown command frobnicate.")


def test_cd_pwd_and_relative_paths(session: ShellSession) -> None:
    assert session.run("pwd") == "/\n"
    session.run("cd topics/foo")
    assert session.run("pwd") == "/topics/foo\n"
    assert session.run("cat name") == "foo\n"
    assert session.run("cat ../bar/./name") == "bar\n"
    session.run("cd")
    assert session.run("pwd") == "/\n"


def test_globs(session: ShellSession) -> None:
    assert session.run("cat /topics/*/name") == "bar\nfoo\n"
    assert session.run("cat /topics/{foo,bar}/name") == "bar\nfoo\n"
    assert session.run("ls /topics/f?o") == "0\n1\nid\nname\n"


def test_find_and_tree(session: ShellSession) -> None:
    assert session.run("find /topics/bar") == "/topics/bar\n/topics/bar/0\n/topics/bar/0/data\n/topics/bar/id\n/topics/bar/name\n"
    assert session.run("tree /configs") == "broker:\n  <default>:\n    log.retention.ms:\n      5\n" \
                                           "topic:\n  foo:\n    retention.ms:\n      1000\n"


def test_history_and_exit(session: ShellSession) -> None:
    session.run("pwd")
    session.run("ls /")
    assert session.run("history 2") == "2: ls /\n3: history 2\n"
    with pytest.raises(ShellExit):
        session.run("exit")


def test_path_completion(session: ShellSession) -> None:
    assert session.complete_path("/to") == ["/topicIds/", "/topics/"]
    assert session.complete_path("/topics/f") == ["/topics/foo/"]
    assert session.complete_path("/topics/foo/n") == ["/topics/foo/name"]
    session.run("cd /topics")
    assert session.complete_path("b") == ["bar/"]


def test_jackson_pretty_printer() -> None:
    assert jackson_pretty({}) == "{ }"
    assert jackson_pretty({"a": [], "b": [1, 2], "c": None, "d": True, "e": "x\u00e9"}) == \
        '{\n  "a" : [ ],\n  "b" : [ 1, 2 ],\n  "c" : null,\n  "d" : true,\n  "e" : "x\u00e9"\n}'
    assert jackson_pretty({"l": [{"n": 1}]}) == '{\n  "l" : [ {\n    "n" : 1\n  } ]\n}'


@pytest.mark.parametrize(("value", "text"), [
    (1024.0, "1024.0"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (0.001, "0.001"), (1e-4, "1.0E-4"),
    (-2.5e-5, "-2.5E-5"), (0.0, "0.0"), (9999999.0, "9999999.0"),
])
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text
