"""The shell's tree and commands on a built image: what the golden file
(test_kafka_shell_golden.py) cannot reach -- globs, ``cd`` errors, ``ls``
columns, history, ``man``, parse errors, completion, quota entity names.
Kafka's ``shell/.../command/*CommandHandler.java`` and
``metadata/.../image/node/*Node.java`` are the reference."""

from __future__ import annotations

import uuid

import pytest

from kraft.image.builder import ImageBuilder
from kraft.image.commands import ShellExit
from kraft.image.printing import java_double, java_sorted
from kraft.image.session import ShellSession
from kraft.image.tree import build_tree
from tests.image.records import partition, rec, sub, topic

T1 = uuid.UUID(int=0x1111)
T2 = uuid.UUID(int=0x2222)


def _entity(entity_type: str, name: str | None) -> object:
    return sub("ClientQuotaRecord", "EntityData", entity_type=entity_type, entity_name=name)


@pytest.fixture()
def session() -> ShellSession:
    b = ImageBuilder()
    values = [
        rec("FeatureLevelRecord", name="metadata.version", feature_level=21),
        rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=uuid.UUID(int=3),
            end_points=[sub("RegisterBrokerRecord", "BrokerEndpoint", name="PLAINTEXT", host="h", port=9092,
                            security_protocol=0)], features=[], rack="r1", fenced=False),
        topic("foo-request", T1), partition(T1, 0, [1]), partition(T1, 1, [1]),
        topic("bar-request", T2), partition(T2, 0, [1]),
        rec("ConfigRecord", resource_type=2, resource_name="foo-request", name="retention.ms", value="1000"),
        rec("ConfigRecord", resource_type=4, resource_name="", name="log.retention.ms", value="5"),
        rec("ClientQuotaRecord", entity=[_entity("user", None)], key="producer_byte_rate", value=1e7, remove=False),
        rec("ClientQuotaRecord", entity=[_entity("client-id", None), _entity("user", "bob")],
            key="consumer_byte_rate", value=2048.0, remove=False),
        rec("ClientQuotaRecord", entity=[_entity("user", "a(b)")], key="request_percentage", value=0.5,
            remove=False),
    ]
    for offset, value in enumerate(values):
        b.apply(offset, value, epoch=1, timestamp_ms=1_700_000_000_000 + offset)
    return ShellSession(build_tree(b.image, version="9.9", commit_id="abc"))


def test_layout_is_kafka_4s(session: ShellSession) -> None:
    assert session.run("ls /") == "image\nlocal\n"
    assert session.run("ls /image").split() == ["acls", "clientQuotas", "cluster", "configs", "delegationToken",
                                               "features", "producerIds", "provenance", "scram", "topics"]
    assert session.run("ls /image/configs") == "BROKER\nTOPIC:foo-request\n"
    assert session.run("cat /image/configs/BROKER/log.retention.ms") == "5\n"
    assert session.run("cat /image/provenance") == "offset 11, epoch 1, time 2023-11-14T22:13:20.011Z[UTC]\n"
    assert session.run("cat /image/cluster/brokers/1").startswith("BrokerRegistration(id=1, epoch=5, ")
    assert "rack=Optional[r1]" in session.run("cat /image/cluster/brokers/1")


def test_quota_entities_name_their_default_parts(session: ShellSession) -> None:
    """ClientQuotasImageNode: clientId(..)_ip(..)_user(..), parentheses escaped;
    a default part is <default> (Kafka 4.0.0 drops it, colliding with user(bob))."""
    assert session.run("ls /image/clientQuotas") == "clientId(<default>)_user(bob)\nuser(<default>)\nuser(a\\(b\\))\n"
    assert session.run("cat /image/clientQuotas/user(<default>)/producer_byte_rate") == "1.0E7\n"
    assert session.run("cat '/image/clientQuotas/user(a\\(b\\))/request_percentage'") == "0.5\n"


def test_a_glob_that_matches_several_directories_goes_nowhere(session: ShellSession) -> None:
    result = session.run_line("cd /image/topics/byName/*request")
    assert result.failed
    assert result.text == ("cd: /image/topics/byName/*request: matches more than one directory: "
                           "/image/topics/byName/bar-request, /image/topics/byName/foo-request.\n")
    assert session.run("pwd") == "/\n"
    session.run("cd /image/topics/byName/f*")
    assert session.run("pwd") == "/image/topics/byName/foo-request\n"


def test_globs_and_relative_paths(session: ShellSession) -> None:
    assert session.run("ls /image/topics/byName/{foo,bar}-request") == \
        "bar-request:\n0\nid\nname\n\nfoo-request:\n0\n1\nid\nname\n"
    session.run("cd /image/topics")
    assert session.run("ls ../features") == "metadataVersion\nzkMigrationState\n"
    assert session.run("cat byName/foo-request/?a*") == "foo-request\n"
    # Kafka's GlobComponent has no [..] ranges: brackets are literal.
    assert session.run_line("ls /image/topics/byName/[fb]oo-request").failed


def test_errors_read_as_kafkas(session: ShellSession) -> None:
    assert session.run("cd /image/provenance") == "cd: /image/provenance: not a directory.\n"
    assert session.run("cd /nope") == "cd: /nope: no such directory.\n"
    assert session.run("find /nope") == "find: /nope: no such file or directory.\n"
    assert session.run("tree /nope") == "tree: /nope: No such file or directory.\n"
    assert session.run("cat") == "too few arguments\n"
    assert session.run("ls -l") == "unrecognized arguments: '-l'\n"
    assert session.run("frob").startswith("invalid choice: 'frob' (choose from 'cat', 'cd', ")
    assert session.run("l") == "invalid choice: 'l': did you mean 'ls'?\n"
    assert session.run("man nope") == "man: unknown command nope. Type help to get a list of commands.\n"


def test_non_interactive_commands_are_kafkas_commands_false(session: ShellSession) -> None:
    """Commands(false): the shell-only commands are not offered on the command line."""
    argv = ShellSession(session.state.root(), interactive=False)
    assert argv.run("pwd").startswith("invalid choice: 'pwd' (choose from 'cat', 'diff', 'find', 'ls', 'tree')")
    assert argv.run("ls /local") == "commitId\nversion\n"


def test_find_tree_and_cat(session: ShellSession) -> None:
    assert session.run("find /local") == "/local\n/local/commitId\n/local/version\n"
    assert session.run("find /image/topics/byName/bar-request") == (
        "/image/topics/byName/bar-request\n/image/topics/byName/bar-request/0\n"
        "/image/topics/byName/bar-request/id\n/image/topics/byName/bar-request/name\n")
    assert session.run("tree /local") == "commitId:\n  abc\nversion:\n  9.9\n"
    assert session.run("cat /local/version /image") == "9.9\ncat: /image: Is a directory\n"


def test_ls_columns_on_a_terminal(session: ShellSession) -> None:
    """LsCommandHandler.calculateColumnSchema: column-major, widest fitting layout."""
    session.state.screen_width = 40
    # 3 columns of 4 (14 + 17 + 8 = 39 <= 40); 4 columns would need 51. Every
    # column but the last is padded, even where it ends early (as Kafka's).
    assert session.run("ls /image") == ("acls          delegationToken  scram\n"
                                        "clientQuotas  features         topics\n"
                                        "cluster       producerIds      \n"
                                        "configs       provenance       \n")


def test_history_numbers_from_zero_and_exit(session: ShellSession) -> None:
    session.run_line("pwd")
    session.run_line("ls /")
    assert session.run("history 2") == "    1  ls /\n    2  history 2\n"
    with pytest.raises(ShellExit):
        session.run_line("exit")


def test_completion_of_commands_and_paths(session: ShellSession) -> None:
    assert session.complete("h") == ["help", "history"]
    assert session.complete("man t") == ["tree"]
    assert session.complete("ls /im") == ["/image/"]
    assert session.complete("cat /image/topics/byName/f") == ["/image/topics/byName/foo-request/"]
    assert session.complete("cat /local/") == ["/local/commitId", "/local/version"]
    session.run("cd /image")
    assert session.complete("ls fea") == ["features/"]
    assert session.complete("cd features ") == []  # cd takes one path


def test_java_text_forms() -> None:
    assert [java_double(x) for x in (1024.0, 1e7, 1e-4, 0.001, 123456.789, -0.0)] == \
        ["1024.0", "1.0E7", "1.0E-4", "0.001", "123456.789", "-0.0"]
    # String.compareTo orders UTF-16 code units: U+FF5E sorts after a surrogate pair (U+1F600).
    assert java_sorted(["\uff5e", "\U0001f600", "a"]) == ["a", "\U0001f600", "\uff5e"]


@pytest.mark.parametrize("level,name", [(7, "3.3-IV3"), (11, "3.5-IV2"), (19, "3.7-IV4"), (21, "3.9-IV0"),
                                        (25, "4.0-IV3"), (26, "4.1-IV0"), (27, "4.1-IV1"), (28, "4.2-IV0"),
                                        (29, "4.2-IV1")])
def test_metadata_versions_33_to_42_open(level: int, name: str) -> None:
    """MetadataVersion.java: IBP_3_3_IV3(7) .. IBP_4_2_IV1(29); 4.0.0 knows up to 4.1-IV0."""
    b = ImageBuilder()
    b.apply(0, rec("FeatureLevelRecord", name="metadata.version", feature_level=level), epoch=1, timestamp_ms=0)
    b.apply(1, topic("t", T1), epoch=1, timestamp_ms=0)
    session = ShellSession(build_tree(b.image))
    assert session.run("cat /image/features/metadataVersion") == f"Optional[{name}]\n"
    assert session.run("ls /image/topics/byName") == "t\n"


def test_broker_directories_print_in_uuid_order() -> None:
    """BrokerRegistration's constructor sorts directories with Uuid.compareTo
    (signed 64-bit halves: a high bit set sorts first)."""
    high, low, mid = uuid.UUID(int=(1 << 127) | 5), uuid.UUID(int=7), uuid.UUID(int=(1 << 64) | 1)
    b = ImageBuilder()
    b.apply(0, rec("RegisterBrokerRecord", broker_id=1, broker_epoch=5, incarnation_id=uuid.UUID(int=3),
                   end_points=[], features=[], rack=None, fenced=False, log_dirs=[mid, low, high]),
            epoch=1, timestamp_ms=0)
    text = ShellSession(build_tree(b.image)).run("cat /image/cluster/brokers/1")
    from kraft.messages.json_form import uuid_to_kafka

    order = ", ".join(uuid_to_kafka(u) for u in (high, low, mid))
    assert text.endswith(f"directories=[{order}])\n")
