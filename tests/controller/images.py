"""Images for the controller's tests, built the way a broker builds one:
records replayed through :class:`~kraft.image.builder.ImageBuilder`."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from kraft.controller.result import RecordAndVersion
from kraft.image.builder import ImageBuilder
from kraft.image.model import MetadataImage
from kraft.messages.generated.feature_level_record import FeatureLevelRecord
from kraft.messages.generated.register_broker_record import BrokerEndpoint, BrokerFeature, RegisterBrokerRecord
from kraft.records.metadata import MetadataRecord


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
