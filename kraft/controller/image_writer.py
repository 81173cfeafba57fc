"""A metadata image as the records of a snapshot: Kafka 4.4's
``MetadataImage.write`` with ``ImageWriterOptions`` built from the image.

In Kafka's order: features (metadata.version first, at v0), cluster
(brokers, then controllers), topics (each TopicRecord followed by its
partitions), configs, client quotas, producer ids, ACLs, SCRAM, delegation
tokens. Each record at the version the image's metadata.version picks
(``registerBrokerRecordVersion``, ``partitionRecordVersion``, ...); what that
version cannot carry is left out, as Kafka's ``handleLoss`` does with its
default (log-and-continue) options. kraft.version is the raft layer's and
never written here (Kafka's FeaturesImage holds no kraft.version).

It lives here, not in :mod:`kraft.image`, because record versions come
from :mod:`kraft.controller.metadata_version`, a layer above the image.
"""

from __future__ import annotations

from collections.abc import Iterator

from kraft.controller import metadata_version as mvs
from kraft.controller.result import RecordAndVersion
from kraft.image.model import METADATA_VERSION, ClientQuotaEntity, MetadataImage
from kraft.messages.generated import client_quota_record as cq
from kraft.messages.generated import register_broker_record as rb
from kraft.messages.generated import register_controller_record as rc
from kraft.messages.generated.access_control_entry_record import AccessControlEntryRecord
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.delegation_token_record import DelegationTokenRecord
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.partition_record import PartitionRecord
from kraft.messages.generated.producer_ids_record import ProducerIdsRecord
from kraft.messages.generated.topic_record import TopicRecord
from kraft.messages.generated.user_scram_credential_record import UserScramCredentialRecord

__all__ = ["image_records"]

_KRAFT_VERSION = "kraft.version"
_ELR = "eligible.leader.replicas.version"


def _features(image: MetadataImage, mv: mvs.MetadataVersion) -> Iterator[RecordAndVersion]:
    """``FeaturesImage.writeFeatureLevels``."""
    yield RecordAndVersion(FeatureLevelRecord(name=METADATA_VERSION, feature_level=mv.level), 0)
    for name, level in image.features.finalized.items():
        if name not in (METADATA_VERSION, _KRAFT_VERSION):
            yield RecordAndVersion(FeatureLevelRecord(name=name, feature_level=level), 0)


def _brokers(image: MetadataImage, mv: mvs.MetadataVersion) -> Iterator[RecordAndVersion]:
    """``BrokerRegistration.toRecord``."""
    for b in image.brokers.values():
        record = rb.RegisterBrokerRecord(
            broker_id=b.id, is_migrating_zk_broker=b.is_migrating_zk_broker and mv.level >= 8,
            incarnation_id=b.incarnation_id, broker_epoch=b.epoch,
            end_points=[rb.BrokerEndpoint(name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol)
                        for e in b.listeners],
            features=[rb.BrokerFeature(name=f.name, min_supported_version=f.min_version,
                                       max_supported_version=f.max_version) for f in b.supported_features],
            rack=b.rack, fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown,
            log_dirs=list(b.directories) if mv.is_directory_assignment_supported else [],
            cordoned_log_dirs=(list(b.cordoned_directories) if b.cordoned_directories is not None
                               and mv.is_cordoned_log_dirs_supported else None))
        yield RecordAndVersion(record, mv.register_broker_record_version)


def _controllers(image: MetadataImage, mv: mvs.MetadataVersion) -> Iterator[RecordAndVersion]:
    """``ControllerRegistration.toRecord`` (lost before 3.7-IV0)."""
    if not mv.is_controller_registration_supported:
        return
    for c in image.controllers.values():
        yield RecordAndVersion(rc.RegisterControllerRecord(
            controller_id=c.id, incarnation_id=c.incarnation_id, zk_migration_ready=c.zk_migration_ready,
            end_points=[rc.ControllerEndpoint(name=e.name, host=e.host, port=e.port,
                                              security_protocol=e.security_protocol) for e in c.listeners],
            features=[rc.ControllerFeature(name=f.name, min_supported_version=f.min_version,
                                           max_supported_version=f.max_version) for f in c.supported_features]), 0)


def _topics(image: MetadataImage, mv: mvs.MetadataVersion) -> Iterator[RecordAndVersion]:
    """``TopicImage.write`` and ``PartitionRegistration.toRecord``."""
    elr = image.features.finalized.get(_ELR, 0) >= 1  # ImageWriterOptions.isEligibleLeaderReplicasEnabled
    for topic in image.topics.values():
        yield RecordAndVersion(TopicRecord(name=topic.name, topic_id=topic.id), 0)
        for pid, p in topic.partitions.items():
            record = PartitionRecord(
                partition_id=pid, topic_id=topic.id, replicas=list(p.replicas), isr=list(p.isr),
                removing_replicas=list(p.removing_replicas), adding_replicas=list(p.adding_replicas),
                leader=p.leader, leader_recovery_state=p.leader_recovery_state, leader_epoch=p.leader_epoch,
                partition_epoch=p.partition_epoch,
                directories=list(p.directories) if mv.is_directory_assignment_supported else [])
            if elr and p.elr:
                record.eligible_leader_replicas = list(p.elr)
            if elr and p.last_known_elr:
                record.last_known_elr = list(p.last_known_elr)
            yield RecordAndVersion(record, mv.partition_record_version)


def _quota_entity(entity: ClientQuotaEntity) -> list[cq.EntityData]:
    return [cq.EntityData(entity_type=t, entity_name=n) for t, n in entity.entries]


def _data(image: MetadataImage, mv: mvs.MetadataVersion) -> Iterator[RecordAndVersion]:
    """Configs, client quotas, producer ids, ACLs, SCRAM and delegation tokens."""
    for resource, configs in image.configs.items():
        for name, value in configs.items():
            yield RecordAndVersion(ConfigRecord(resource_type=resource.type, resource_name=resource.name, name=name,
                                                value=value), 0)
    for entity, quotas in image.client_quotas.items():
        for key, quota in quotas.items():
            yield RecordAndVersion(cq.ClientQuotaRecord(entity=_quota_entity(entity), key=key, value=quota,
                                                        remove=False), 0)
    if image.producer_ids.next_producer_id >= 0:
        yield RecordAndVersion(ProducerIdsRecord(broker_id=-1, broker_epoch=-1,
                                                 next_producer_id=image.producer_ids.next_producer_id), 0)
    for acl_id, a in image.acls.items():
        yield RecordAndVersion(AccessControlEntryRecord(
            id=acl_id, resource_type=a.resource_type, resource_name=a.resource_name, pattern_type=a.pattern_type,
            principal=a.principal, host=a.host, operation=a.operation, permission_type=a.permission_type), 0)
    if mv.is_scram_supported:
        for mechanism, users in image.scram.items():
            for user, s in users.items():
                yield RecordAndVersion(UserScramCredentialRecord(
                    name=user, mechanism=mechanism, salt=s.salt, stored_key=s.stored_key, server_key=s.server_key,
                    iterations=s.iterations), 0)
    if mv.is_delegation_token_supported:
        for t in image.delegation_tokens.values():
            yield RecordAndVersion(DelegationTokenRecord(
                owner=t.owner, requester=t.requester, renewers=list(t.renewers), issue_timestamp=t.issue_timestamp_ms,
                max_timestamp=t.max_timestamp_ms, expiration_timestamp=t.expiration_timestamp_ms,
                token_id=t.token_id), 0)


def image_records(image: MetadataImage) -> list[RecordAndVersion]:
    """The image's snapshot records (module docstring). An image without a
    metadata.version is written at the minimum one, 3.3-IV3."""
    mv = mvs.by_level(image.features.metadata_version or mvs.MINIMUM.level)
    return [*_features(image, mv), *_brokers(image, mv), *_controllers(image, mv), *_topics(image, mv),
            *_data(image, mv)]
