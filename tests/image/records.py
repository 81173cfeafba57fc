"""Small builders of metadata record values for the image tests."""

from __future__ import annotations

import importlib
import re
import uuid
from typing import Any

from kraft.records.metadata import encode_metadata_record
from kraft.records.varint import uvarint


def _module_of(name: str) -> str:
    # TopicRecord -> topic_record, KRaftVersionRecord -> k_raft_version_record
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def message(type_name: str, /, **fields: Any) -> Any:
    module = importlib.import_module(f"kraft.messages.generated.{_module_of(type_name)}")
    return getattr(module, type_name)(**fields)


def rec(type_name: str, /, **fields: Any) -> bytes:
    """The framed value of a metadata record (``MetadataRecordSerde``), at its highest version."""
    return encode_metadata_record(message(type_name, **fields))


def raw_record(api_key: int, version: int, payload: bytes = b"\x00") -> bytes:
    """A frame with any type id and version (what a newer Kafka might write)."""
    return uvarint(1) + uvarint(api_key) + uvarint(version) + payload


def sub(type_name: str, struct: str, /, **fields: Any) -> Any:
    """A nested struct of a generated message, e.g. ``sub("RegisterBrokerRecord", "BrokerEndpoint", ...)``."""
    module = importlib.import_module(f"kraft.messages.generated.{_module_of(type_name)}")
    return getattr(module, struct)(**fields)


def topic(name: str, topic_id: uuid.UUID) -> bytes:
    return rec("TopicRecord", name=name, topic_id=topic_id)


def partition(topic_id: uuid.UUID, pid: int, replicas: list[int], *, leader: int | None = None,
              isr: list[int] | None = None, **extra: Any) -> bytes:
    return rec("PartitionRecord", partition_id=pid, topic_id=topic_id, replicas=replicas,
               isr=list(replicas) if isr is None else isr, leader=replicas[0] if leader is None else leader,
               leader_epoch=0, partition_epoch=0, **extra)
