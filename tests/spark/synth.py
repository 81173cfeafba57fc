"""Metadata directories for the Spark tests, written by the real log code.

:func:`write_scenario` lays out ``<root>/meta.properties``,
``<root>/bootstrap.checkpoint`` and ``<root>/__cluster_metadata-0`` with
several segments (batches of every compression codec), their indexes, and
snapshots (compressed too), holding a story whose events the report tests
know: brokers register and unfence, topic ``orders`` is created with 3
partitions, gets 2 more, its leaders move, broker 3 is fenced, a config is set
then deleted, metadata.version goes 21 -> 22, topic ``payments`` is created
and deleted, and a new controller is elected once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path
from typing import Any

from kraft.messages import registry
from kraft.records.batch import Record, build_batch
from kraft.records.compression import Compression
from kraft.records.control import build_control_batch
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.log_config import LogConfig
from kraft.records.metadata import encode_metadata_record
from kraft.records.snapshot import BOOTSTRAP_FILE_NAME, SnapshotWriter
from kraft.records.state_files import MetaProperties
from kraft.records.view import OffsetAndEpoch

CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)
BASE_TS = 1_700_000_000_000
HOUR_MS = 3_600_000
ORDERS = uuid.UUID("5f2b1c3e-0000-4000-8000-00000000a001")
PAYMENTS = uuid.UUID("5f2b1c3e-0000-4000-8000-00000000a002")


def message(spec: str, /, **fields: Any) -> Any:
    return registry.message_class(spec)(**fields)


def value(spec: str, version: int | None = None, /, **fields: Any) -> bytes:
    return encode_metadata_record(message(spec, **fields), version)


def leader_change(leader: int, voters: tuple[int, ...] = (1, 2, 3)) -> Any:
    from kraft.messages.generated import leader_change_message as lcm

    return lcm.LeaderChangeMessage(
        version=0, leader_id=leader, voters=[lcm.Voter(voter_id=v) for v in voters],
        granting_voters=[lcm.Voter(voter_id=v) for v in voters],
    )


def partition(topic: uuid.UUID, pid: int, replicas: list[int]) -> bytes:
    return value("PartitionRecord", 0, partition_id=pid, topic_id=topic, replicas=replicas, isr=replicas,
                 leader=replicas[0], leader_epoch=0, partition_epoch=0)


def register(broker: int) -> bytes:
    from kraft.messages.generated import register_broker_record as rb

    return value("RegisterBrokerRecord", 1, broker_id=broker, incarnation_id=uuid.UUID(int=broker), broker_epoch=100 + broker,
                 end_points=[rb.BrokerEndpoint(name="PLAINTEXT", host=f"b{broker}", port=9092, security_protocol=0)],
                 rack=f"r{broker}", fenced=True)


@dataclass
class Scenario:
    log_dir: Path
    partition_dir: Path
    cluster_id: str
    #: every .log and .checkpoint written
    files: list[Path] = field(default_factory=list)


def story(noops: int) -> list[tuple[int, int, list[bytes] | Any]]:
    """``(epoch, hour, values | LeaderChange message)`` in log order."""
    noop = value("NoOpRecord", 0)
    steps: list[tuple[int, int, Any]] = [
        (1, 0, leader_change(1)),
        (1, 0, [value("FeatureLevelRecord", 0, name="metadata.version", feature_level=21)]),
        (1, 0, [register(1), register(2), register(3)]),
        (1, 0, [value("UnfenceBrokerRecord", 0, id=b, epoch=100 + b) for b in (1, 2, 3)]),
        (1, 1, [value("TopicRecord", 0, name="orders", topic_id=ORDERS)] + [partition(ORDERS, p, [1, 2, 3]) for p in range(3)]),
        (1, 1, [value("ConfigRecord", 0, resource_type=2, resource_name="orders", name="retention.ms", value="3600000")]),
    ]
    steps += [(1, 2, [noop] * 3) for _ in range(noops // 2)]
    steps += [
        (2, 3, leader_change(2)),
        (2, 3, [value("PartitionChangeRecord", 0, partition_id=0, topic_id=ORDERS, leader=2, isr=[2, 3])]),
        (2, 3, [value("PartitionChangeRecord", 0, partition_id=1, topic_id=ORDERS, isr=[1, 2])]),
        (2, 4, [partition(ORDERS, 3, [2, 3, 1]), partition(ORDERS, 4, [3, 1, 2])]),
        (2, 4, [value("BrokerRegistrationChangeRecord", 0, broker_id=3, broker_epoch=103, fenced=1)]),
        (2, 4, [value("PartitionChangeRecord", 0, partition_id=2, topic_id=ORDERS, leader=1, isr=[1, 2])]),
        (2, 5, [value("ConfigRecord", 0, resource_type=2, resource_name="orders", name="retention.ms", value=None)]),
        (2, 5, [value("FeatureLevelRecord", 0, name="metadata.version", feature_level=22)]),
        (2, 6, [value("TopicRecord", 0, name="payments", topic_id=PAYMENTS), partition(PAYMENTS, 0, [1, 2, 3])]),
        (2, 7, [value("RemoveTopicRecord", 0, topic_id=PAYMENTS)]),
    ]
    steps += [(2, 8, [noop] * 3) for _ in range(noops - noops // 2)]
    return steps


def write_scenario(
    root: Path,
    *,
    cluster_id: str = "scenarioClusterA_0001",
    node_id: int = 1,
    noops: int = 400,
    segment_bytes: int = 16 * 1024,
) -> Scenario:
    """Write the story into ``root`` (see the module doc)."""
    root.mkdir(parents=True, exist_ok=True)
    MetaProperties(1, cluster_id, node_id).write(root / "meta.properties")
    partition_dir = metadata_partition_dir(root)
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=512, flush_on_append=False,
                       retention_bytes=-1, retention_ms=-1)
    codecs = cycle(CODECS)
    noop = value("NoOpRecord", 0)
    removal = value("RemoveTopicRecord", 0, topic_id=PAYMENTS)
    snapshot_values: list[bytes] = []
    with MetadataLog.open(partition_dir, config) as log:
        for i, (epoch, hour, item) in enumerate(story(noops)):
            ts = BASE_TS + hour * HOUR_MS + i
            if isinstance(item, list):
                records = [Record(j, ts, None, v) for j, v in enumerate(item)]
                data = build_batch(records, base_offset=0, partition_leader_epoch=epoch, compression=next(codecs))
                # A snapshot restates state: no NoOps, no removals.
                snapshot_values.extend(v for v in item if v != noop and v != removal)
            else:
                data = build_control_batch([item], base_offset=0, partition_leader_epoch=epoch, timestamp=ts)
            log.append_as_leader(data, epoch)
        log.flush()
        end = log.end_offset
    # Snapshots as a controller takes them: one mid-log, one at the end, compressed.
    for sid, codec in ((OffsetAndEpoch(end // 2, 1), Compression.LZ4), (OffsetAndEpoch(end, 2), Compression.ZSTD)):
        with SnapshotWriter(partition_dir, sid, last_contained_log_timestamp=BASE_TS + sid.offset,
                            compression=codec, max_batch_size=512, clock_ms=lambda: BASE_TS) as writer:
            writer.append(snapshot_values)
            writer.freeze()
    with SnapshotWriter(root, OffsetAndEpoch(0, 0), last_contained_log_timestamp=BASE_TS, clock_ms=lambda: BASE_TS,
                        final_name=BOOTSTRAP_FILE_NAME) as writer:
        writer.append([value("FeatureLevelRecord", 0, name="metadata.version", feature_level=21)])
        writer.freeze()
    scenario = Scenario(root, partition_dir, cluster_id)
    scenario.files = sorted(p for p in partition_dir.iterdir() if p.suffix in (".log", ".checkpoint")) + [root / BOOTSTRAP_FILE_NAME]
    return scenario
