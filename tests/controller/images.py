"""Images for the controller's tests, built the way a controller's are:
records replayed through :class:`~kraft.image.builder.ImageBuilder`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kraft.controller.result import RecordAndVersion
from kraft.image.builder import ImageBuilder
from kraft.image.model import MetadataImage
from kraft.messages.generated.config_record import ConfigRecord
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.partition_record import PartitionRecord
from kraft.messages.generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord
from kraft.messages.generated.topic_record import TopicRecord
from kraft.records.metadata import MetadataRecord, encode_metadata_record

#: 4.4-IV2, Kafka 4.4's latest production metadata.version.
LATEST_LEVEL = 33


class ImageSetup:
    """An image under construction, the records that set it up:
    ``ImageSetup().brokers(1, 2, 3).topic("t", [[1, 2, 3]]).image``."""

    def __init__(self, metadata_version: int = LATEST_LEVEL, *, elr: bool = False) -> None:
        self.builder = ImageBuilder()
        self.offset = 0
        self.record(FeatureLevelRecord(name="metadata.version", feature_level=metadata_version), 0)
        if elr:
            self.record(FeatureLevelRecord(name="eligible.leader.replicas.version", feature_level=1), 0)

    def record(self, message: object, version: int) -> ImageSetup:
        # Through the bytes a log holds: a field the version cannot carry fails here.
        self.builder.apply(self.offset, encode_metadata_record(message, version))
        self.offset += 1
        return self

    def apply(self, records: Iterable[RecordAndVersion]) -> MetadataImage:
        """Replay a controller's records; the image after them."""
        for r in records:
            self.record(r.message, r.version)
        return self.image

    def broker(self, broker_id: int, *, rack: str | None = None, fenced: bool = False, epoch: int = 0,
               in_controlled_shutdown: bool = False, dirs: Sequence[uuid.UUID] = ()) -> ImageSetup:
        self.record(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1000), broker_epoch=epoch + broker_id,
            end_points=[], features=[], rack=rack, fenced=fenced, in_controlled_shutdown=in_controlled_shutdown,
            log_dirs=list(dirs)), 3)
        return self

    def brokers(self, *ids: int, fenced: bool = False) -> ImageSetup:
        for broker_id in ids:
            self.broker(broker_id, fenced=fenced)
        return self

    def topic(self, name: str, assignments: Sequence[Sequence[int]], *, isr: Sequence[Sequence[int]] | None = None,
              configs: dict[str, str] | None = None, topic_id: uuid.UUID | None = None,
              leaders: Sequence[int] | None = None) -> ImageSetup:
        """A topic; each partition's ISR is its replicas and its leader the
        first ISR member unless ``isr``/``leaders`` say otherwise."""
        topic_id = topic_id or uuid.uuid5(uuid.NAMESPACE_OID, name)  # the same id in every run
        self.record(TopicRecord(name=name, topic_id=topic_id), 0)
        for key, value in (configs or {}).items():
            self.record(ConfigRecord(resource_type=2, resource_name=name, name=key, value=value), 0)
        for i, replicas in enumerate(assignments):
            members = list(isr[i]) if isr is not None else list(replicas)
            leader = leaders[i] if leaders is not None else members[0] if members else -1
            self.record(PartitionRecord(
                partition_id=i, topic_id=topic_id, replicas=list(replicas), isr=members, removing_replicas=[],
                adding_replicas=[], leader=leader, leader_recovery_state=0, leader_epoch=0,
                partition_epoch=0, directories=[uuid.UUID(int=0)] * len(replicas)), 1)
        return self

    @property
    def image(self) -> MetadataImage:
        return self.builder.image

def replay(records: Iterable[Any], image: MetadataImage | None = None) -> MetadataImage:
    """``image`` (or the empty image) with ``records`` applied: generated
    messages (at their highest version) or RecordAndVersion."""
    b = ImageBuilder(image)
    offset = image.offset + 1 if image is not None else 0
    for r in records:
        message, version = (r.message, r.version) if isinstance(r, RecordAndVersion) else (r, r.HIGHEST_VERSION)
        b.apply(offset, MetadataRecord(message.API_KEY, version, message))
        offset += 1
    return b.image


def features(mv: int = 33, **levels: int) -> list[Any]:
    """FeatureLevelRecords: metadata.version and ``levels`` (underscores for dots)."""
    out: list[Any] = [FeatureLevelRecord(name="metadata.version", feature_level=mv)]
    out += [FeatureLevelRecord(name=k.replace("_", "."), feature_level=v) for k, v in levels.items()]
    return out


def broker(broker_id: int, supported: Mapping[str, tuple[int, int]] | None = None) -> RegisterBrokerRecord:
    ranges = supported if supported is not None else {"metadata.version": (7, 33)}
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1), broker_epoch=10 + broker_id,
        end_points=[BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092 + broker_id, security_protocol=0)],
        features=[BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                  for n, (lo, hi) in ranges.items()],
        rack=None, fenced=False, log_dirs=[uuid.UUID(int=100 + broker_id)])
