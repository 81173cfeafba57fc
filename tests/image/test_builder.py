"""Replay rules of the image builder, record type by record type (Kafka's
``MetadataDelta`` and the per-area deltas are the reference)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

import pytest

from kraft.image.builder import MIGRATING_DIRECTORY, ImageBuilder
from kraft.image.model import (
    ClientQuotaEntity,
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
    PartitionRegistration,
)
from kraft.records.view import OffsetAndEpoch
from tests.image.records import partition, raw_record, rec, sub, topic

T1 = uuid.UUID(int=0x1111)
T2 = uuid.UUID(int=0x2222)
D1, D2, D3 = (uuid.UUID(int=0x1000 + i) for i in range(3))


def build(*values: bytes) -> ImageBuilder:
    b = ImageBuilder()
    for offset, value in enumerate(values):
        b.apply(offset, value, epoch=1, timestamp_ms=1000 + offset)
    return b


def change(pid: int = 0, topic_id: uuid.UUID = T1, **fields: object) -> bytes:
    return rec("PartitionChangeRecord", partition_id=pid, topic_id=topic_id, **fields)


def partitions_of(image: MetadataImage, name: str) -> Mapping[int, PartitionRegistration]:
    topic_image = image.topic(name)
    assert topic_image is not None, name
    return topic_image.partitions


# ----------------------------------------------------------------- topics


def test_topic_and_partitions() -> None:
    image = build(topic("foo", T1), partition(T1, 0, [1, 2, 3]), partition(T1, 1, [2, 3, 1])).image
    foo = image.topic("foo")
    assert foo is not None and foo.id == T1 and sorted(foo.partitions) == [0, 1]
    p1 = foo.partitions[1]
    assert (p1.replicas, p1.isr, p1.leader, p1.leader_epoch, p1.partition_epoch) == ((2, 3, 1), (2, 3, 1), 2, 0, 0)
    # PartitionRegistration.defaultToMigrating: no directories -> MIGRATING per
    # replica, all zeros (Kafka 4.0.0's shell prints directories=[AAAAAAAAAAAAAAAAAAAAAA]).
    assert p1.directories == (MIGRATING_DIRECTORY,) * 3
    assert MIGRATING_DIRECTORY == uuid.UUID(int=0)
    assert image.offset == 2 and image.provenance.timestamp_ms == 1002


def test_partition_change_keeps_what_it_does_not_name() -> None:
    """PartitionRegistration.merge: null lists and leader -2 mean unchanged,
    but the partition epoch always goes up."""
    b = build(topic("foo", T1), partition(T1, 0, [1, 2, 3], directories=[D1, D2, D3]), change(isr=[1, 2]))
    p = partitions_of(b.image, "foo")[0]
    assert p.isr == (1, 2) and p.replicas == (1, 2, 3) and p.leader == 1
    assert (p.leader_epoch, p.partition_epoch) == (0, 1)
    assert p.directories == (D1, D2, D3)


def test_leader_change_bumps_the_leader_epoch() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1, 2, 3]), change(leader=2), change(leader=-1))
    p = partitions_of(b.image, "foo")[0]
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (-1, 2, 2)


def test_leader_recovery_state_minus_one_is_no_change() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1, 2]), change(leader=2, leader_recovery_state=1))
    assert partitions_of(b.image, "foo")[0].leader_recovery_state == 1
    b.apply(3, change(isr=[2]))
    assert partitions_of(b.image, "foo")[0].leader_recovery_state == 1
    b.apply(4, change(leader_recovery_state=0))
    assert partitions_of(b.image, "foo")[0].leader_recovery_state == 0


def test_reassignment_replaces_replicas_and_directories() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1, 2], directories=[D1, D2]),
              change(replicas=[1, 2, 3], adding_replicas=[3], directories=[D1, D2, D3]),
              change(replicas=[2, 3], adding_replicas=[], removing_replicas=[], directories=[D2, D3]))
    p = partitions_of(b.image, "foo")[0]
    assert (p.replicas, p.adding_replicas, p.directories) == ((2, 3), (), (D2, D3))


def test_replicas_without_directories_become_migrating() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1, 2]), change(replicas=[1, 2, 3]))
    assert partitions_of(b.image, "foo")[0].directories == (MIGRATING_DIRECTORY,) * 3


def test_elr_fields_and_clear_elr() -> None:
    b = build(topic("foo", T1), topic("bar", T2),
              partition(T1, 0, [1, 2, 3], eligible_leader_replicas=[2], last_known_elr=[3]),
              partition(T2, 0, [1, 2], eligible_leader_replicas=[2]),
              change(eligible_leader_replicas=[2, 3]))
    assert partitions_of(b.image, "foo")[0].elr == (2, 3)
    b.apply(5, rec("ClearElrRecord", topic_name="foo"))
    foo0 = partitions_of(b.image, "foo")[0]
    assert (foo0.elr, foo0.last_known_elr, foo0.partition_epoch) == ((), (), 2)
    assert partitions_of(b.image, "bar")[0].elr == (2,)
    b.apply(6, rec("ClearElrRecord", topic_name=""))  # empty name: every topic
    assert partitions_of(b.image, "bar")[0].elr == ()
    assert partitions_of(b.image, "foo")[0].partition_epoch == 2  # nothing to clear: untouched


def test_remove_topic_removes_its_configs() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1]),
              rec("ConfigRecord", resource_type=ConfigResourceType.TOPIC, resource_name="foo",
                  name="cleanup.policy", value="compact"),
              rec("ConfigRecord", resource_type=ConfigResourceType.BROKER, resource_name="",
                  name="log.retention.ms", value="1"),
              rec("RemoveTopicRecord", topic_id=T1))
    image = b.image
    assert image.topic("foo") is None and not image.topics and not image.topic_ids_by_name
    assert list(image.configs) == [ConfigResource(ConfigResourceType.BROKER, "")]


def test_a_change_to_a_missing_partition_is_skipped_with_a_warning() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1]))
    before = b.image
    b.apply(2, change(pid=7, isr=[1]))
    b.apply(3, change(topic_id=T2, isr=[1]))
    assert b.image.content_equals(before) and b.image.offset == 3
    assert any("unable to find partition" in w for w in b.warnings)
    assert any("no topic with id" in w for w in b.warnings)


# ----------------------------------------------------------------- cluster


def _broker(broker_id: int, epoch: int = 10, **extra: object) -> bytes:
    return rec("RegisterBrokerRecord", broker_id=broker_id, broker_epoch=epoch, incarnation_id=uuid.UUID(int=7),
               end_points=[sub("RegisterBrokerRecord", "BrokerEndpoint", name="PLAINTEXT", host="h", port=9092,
                               security_protocol=0)],
               features=[sub("RegisterBrokerRecord", "BrokerFeature", name="metadata.version",
                             min_supported_version=1, max_supported_version=27)],
               rack=None, fenced=True, log_dirs=[D1], **extra)


def test_broker_registration_fencing_and_unregistration() -> None:
    b = build(_broker(1), _broker(2), rec("UnfenceBrokerRecord", id=1, epoch=10))
    image = b.image
    assert not image.brokers[1].fenced and image.brokers[2].fenced
    assert image.brokers[1].listeners[0].port == 9092 and image.brokers[1].directories == (D1,)
    b.apply(3, rec("FenceBrokerRecord", id=1, epoch=10))
    assert b.image.brokers[1].fenced
    # BrokerRegistrationChangeRecord: fenced -1 unfences, 0 leaves it; 1 = in controlled shutdown.
    b.apply(4, rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=10, fenced=-1,
                   in_controlled_shutdown=1, log_dirs=[D2, D3]))
    two = b.image.brokers[2]
    assert (two.fenced, two.in_controlled_shutdown, two.directories) == (False, True, (D2, D3))
    b.apply(5, rec("BrokerRegistrationChangeRecord", broker_id=2, broker_epoch=10, fenced=0))
    assert not b.image.brokers[2].fenced
    b.apply(6, rec("UnregisterBrokerRecord", broker_id=1, broker_epoch=10))
    assert sorted(b.image.brokers) == [2]


def test_controller_registration() -> None:
    b = build(rec("RegisterControllerRecord", controller_id=3000, incarnation_id=uuid.UUID(int=5),
                  zk_migration_ready=False,
                  end_points=[sub("RegisterControllerRecord", "ControllerEndpoint", name="CONTROLLER", host="c",
                                  port=9093, security_protocol=0)], features=[]))
    assert b.image.controllers[3000].listeners[0].name == "CONTROLLER"
    b.apply(1, rec("UnregisterControllerRecord", controller_id=3000))
    assert not b.image.controllers


# ----------------------------------------------------------------- configs, features, quotas ...


def test_config_null_value_deletes_and_empty_resources_disappear() -> None:
    b = build(rec("ConfigRecord", resource_type=4, resource_name="1", name="a", value="x"),
              rec("ConfigRecord", resource_type=4, resource_name="1", name="b", value="y"),
              rec("ConfigRecord", resource_type=4, resource_name="1", name="a", value=None))
    assert dict(b.image.configs[ConfigResource(4, "1")]) == {"b": "y"}
    b.apply(3, rec("ConfigRecord", resource_type=4, resource_name="1", name="b", value=None))
    assert not b.image.configs


def test_feature_levels() -> None:
    b = build(rec("FeatureLevelRecord", name="metadata.version", feature_level=21),
              rec("FeatureLevelRecord", name="group.version", feature_level=1),
              rec("FeatureLevelRecord", name="kraft.version", feature_level=1))
    assert b.image.features.metadata_version == 21
    assert b.image.features.levels() == {"group.version": 1, "kraft.version": 1, "metadata.version": 21}
    b.apply(3, rec("FeatureLevelRecord", name="group.version", feature_level=0))
    assert dict(b.image.features.finalized) == {"kraft.version": 1}


def test_client_quotas_are_keyed_by_the_whole_entity() -> None:
    def quota(entity: list[tuple[str, str | None]], key: str, value: float, remove: bool = False) -> bytes:
        return rec("ClientQuotaRecord", entity=[sub("ClientQuotaRecord", "EntityData", entity_type=t, entity_name=n)
                                                for t, n in entity], key=key, value=value, remove=remove)

    b = build(quota([("user", "alice"), ("client-id", None)], "producer_byte_rate", 1024.0),
              quota([("client-id", None), ("user", "alice")], "consumer_byte_rate", 2048.0),
              quota([("user", None)], "request_percentage", 50.0))
    entity = ClientQuotaEntity.of({"user": "alice", "client-id": None})
    assert dict(b.image.client_quotas[entity]) == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    b.apply(3, quota([("user", None)], "request_percentage", 0.0, remove=True))
    assert ClientQuotaEntity.of({"user": None}) not in b.image.client_quotas


def test_scram_secrets_stay_out_of_json_and_repr() -> None:
    """The image keeps salt and keys (Kafka's shell prints them with cat), but
    its JSON form and repr (logs, kraft observe) never show them."""
    salt, stored, server = b"SALT-secret-1", b"STORED-secret-2", b"SERVER-secret-3"
    b = build(rec("UserScramCredentialRecord", name="alice", mechanism=1, salt=salt, stored_key=stored,
                  server_key=server, iterations=4096),
              rec("UserScramCredentialRecord", name="bob", mechanism=2, salt=salt, stored_key=stored,
                  server_key=server, iterations=8192))
    cred = b.image.scram[1]["alice"]
    assert (cred.user, cred.mechanism, cred.iterations) == ("alice", 1, 4096)
    assert (cred.salt, cred.stored_key, cred.server_key) == (salt, stored, server)
    text = json.dumps(b.image.to_json()) + repr(b.image)
    import base64

    for secret in (salt, stored, server):
        assert base64.b64encode(secret).decode() not in text and secret.decode() not in text
    b.apply(2, rec("RemoveUserScramCredentialRecord", name="bob", mechanism=2))
    assert list(b.image.scram) == [1]


def test_acls_producer_ids_and_delegation_tokens() -> None:
    acl_id = uuid.UUID(int=99)
    b = build(rec("AccessControlEntryRecord", id=acl_id, resource_type=2, resource_name="foo", pattern_type=3,
                  principal="User:alice", host="*", operation=3, permission_type=3),
              rec("ProducerIdsRecord", broker_id=1, broker_epoch=5, next_producer_id=1000),
              rec("DelegationTokenRecord", owner="User:alice", requester="User:alice", renewers=["User:bob"],
                  issue_timestamp=1, max_timestamp=3, expiration_timestamp=2, token_id="tok-1"))
    image = b.image
    assert image.acls[acl_id].principal == "User:alice"
    assert image.producer_ids.next_producer_id == 1000
    assert image.delegation_tokens["tok-1"].renewers == ("User:bob",)
    b.apply(3, rec("RemoveAccessControlEntryRecord", id=acl_id))
    b.apply(4, rec("RemoveDelegationTokenRecord", token_id="tok-1"))
    assert not b.image.acls and not b.image.delegation_tokens


def test_no_op_moves_the_offset_only() -> None:
    b = build(topic("foo", T1))
    before = b.image
    b.apply(1, rec("NoOpRecord"), epoch=2, timestamp_ms=5)
    assert b.image.content_equals(before) and b.image.provenance.offset == 1 and b.image.provenance.epoch == 2


# ----------------------------------------------------------------- transactions (KIP-868)


def test_records_of_a_transaction_apply_together_at_its_end() -> None:
    b = build(topic("before", T2), rec("BeginTransactionRecord", name="create foo"), topic("foo", T1),
              partition(T1, 0, [1]))
    assert b.in_transaction and b.last_offset == 3
    # Readers never see half a transaction: the image stays before it began.
    assert b.image.offset == 0 and b.image.topic("foo") is None
    b.apply(4, rec("EndTransactionRecord"))
    assert b.image.offset == 4 and 0 in partitions_of(b.image, "foo")


def test_an_aborted_transaction_leaves_no_trace() -> None:
    b = build(rec("BeginTransactionRecord", name="t"), topic("foo", T1), rec("AbortTransactionRecord", reason="x"))
    assert b.image.topic("foo") is None and b.image.offset == 2 and not b.in_transaction


def test_end_without_begin_is_ignored_with_a_warning() -> None:
    b = build(rec("EndTransactionRecord"), topic("foo", T1))
    assert b.image.topic("foo") is not None and any("without a transaction" in w for w in b.warnings)


# ----------------------------------------------------------------- newer Kafka


def test_unknown_types_and_newer_versions_are_skipped_and_warned_once() -> None:
    b = build(topic("foo", T1))
    before = b.image
    b.apply(1, raw_record(200, 0))
    b.apply(2, raw_record(200, 0))
    b.apply(3, raw_record(2, 9))  # TopicRecord v9: newer than ours
    assert b.image.content_equals(before) and b.image.offset == 3
    assert b.skipped_newer == {(200, 0): 2, (2, 9): 1}
    assert len([w for w in b.warnings if "type 200" in w]) == 1


def test_undecodable_bytes_are_skipped() -> None:
    b = build(topic("foo", T1), b"\x07garbage")
    assert b.image.topic("foo") is not None and b.image.offset == 1 and b.warnings


# ----------------------------------------------------------------- images are values


def test_an_image_never_changes_after_it_is_handed_out() -> None:
    b = build(topic("foo", T1), partition(T1, 0, [1, 2]),
              rec("ConfigRecord", resource_type=2, resource_name="foo", name="a", value="1"))
    first = b.image
    snapshot = json.dumps(first.to_json())
    b.apply(3, change(isr=[2], leader=2))
    b.apply(4, topic("bar", T2))
    b.apply(5, rec("ConfigRecord", resource_type=2, resource_name="foo", name="a", value="2"))
    assert json.dumps(first.to_json()) == snapshot
    assert partitions_of(b.image, "foo")[0].leader == 2 and partitions_of(first, "foo")[0].leader == 1
    with pytest.raises(TypeError):
        first.topics[T2] = None  # type: ignore[index]


def test_load_snapshot_replaces_the_state() -> None:
    b = build(topic("old", T2), partition(T2, 0, [1]))
    image = b.load_snapshot(OffsetAndEpoch(50, 3), [topic("foo", T1), partition(T1, 0, [1])], timestamp_ms=77)
    assert [t.name for t in image.topics.values()] == ["foo"]
    assert (image.provenance.offset, image.provenance.epoch, image.provenance.timestamp_ms) == (49, 3, 77)
    b.apply(50, change(isr=[1], leader=-1), epoch=3)
    assert b.image.offset == 50


def test_equal_content_in_any_order_compares_equal() -> None:
    a = build(topic("foo", T1), topic("bar", T2), partition(T1, 0, [1])).image
    b = build(topic("bar", T2), topic("foo", T1), partition(T1, 0, [1])).image
    assert a.content_equals(b) and a == b


# ----------------------------------------------------------------- the batch fast path


def _one_by_one(batches: list[list[bytes]]) -> ImageBuilder:
    b = ImageBuilder()
    offset = 0
    for epoch, values in enumerate(batches):
        for value in values:
            b.apply(offset, value, epoch=epoch, timestamp_ms=1000 + epoch)
            offset += 1
    return b


def _by_batch(batches: list[list[bytes]]) -> ImageBuilder:
    b = ImageBuilder()
    offset = 0
    for epoch, values in enumerate(batches):
        b.apply_batch(offset, epoch, 1000 + epoch, values)
        offset += len(values)
    return b


def test_apply_batch_replays_as_record_by_record_does() -> None:
    """apply_batch reads common records straight from their bytes and skips
    NoOpRecords it has seen; every other shape (transactions, unknown types,
    newer versions, garbage, a corrupt NoOpRecord, records that do not apply)
    must leave the same image, offsets, counts and warnings as apply()."""
    no_op = rec("NoOpRecord")
    batches = [
        [topic("foo", T1), partition(T1, 0, [1, 2]), no_op, no_op],
        [no_op, change(0, leader=2), change(7, leader=2), no_op + b"\x00"],  # missing partition; trailing byte
        [rec("BeginTransactionRecord", name="t"), topic("bar", T2), no_op],
        [partition(T2, 0, [3]), rec("EndTransactionRecord"), no_op],
        [raw_record(200, 0), raw_record(2, 9), b"\x07garbage", no_op],
        [rec("BeginTransactionRecord", name="u"), topic("baz", uuid.UUID(int=3))],
        [rec("AbortTransactionRecord", reason="x"), rec("ConfigRecord", resource_type=2, resource_name="foo",
                                                        name="retention.ms", value="1")],
        [rec("BeginTransactionRecord", name="open"), topic("qux", uuid.UUID(int=4))],
    ]
    a, b = _one_by_one(batches), _by_batch(batches)
    assert b.image.content_equals(a.image)
    assert (b.image.provenance, b.last_offset, b.in_transaction) == (a.image.provenance, a.last_offset, a.in_transaction)
    assert b.image.offset == 21  # the open transaction holds the image before it began
    assert (b.records_applied, b.skipped_newer, b.warnings) == (a.records_applied, a.skipped_newer, a.warnings)
    assert any("undecodable" in w for w in b.warnings) and any("partition" in w for w in b.warnings)


def test_apply_batch_takes_memoryviews_too() -> None:
    no_op = rec("NoOpRecord")
    values = [topic("foo", T1), no_op, no_op]
    b = ImageBuilder()
    b.apply_batch(0, 1, 1000, [memoryview(v) for v in values])
    b.apply_batch(3, 1, 1000, [memoryview(bytearray(v)) for v in values[1:]])  # writable: unhashable
    assert b.image.topic("foo") is not None and b.image.offset == 4 and b.records_applied == 5
