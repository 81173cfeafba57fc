"""The image on metadata logs and snapshots real Kafka wrote (fixtures/).

The strongest check of the replay rules: Kafka writes its snapshots from its
own image, so replaying the log up to a snapshot must give exactly the
snapshot's state -- and replaying a whole directory from offset 0 must give
what its latest snapshot plus the tail gives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.image.builder import ImageBuilder
from kraft.image.model import ConfigResource, ConfigResourceType
from kraft.image.metadata_source import (
    image_from_checkpoint,
    image_from_directory,
    image_from_items,
    partition_dir,
    read_directory,
    read_segments,
)
from tests.conftest import fixture_path


def fixture(*parts: str) -> Path:
    return fixture_path(*parts)


def test_replaying_the_log_gives_kafkas_own_snapshot() -> None:
    """Kafka 3.5 node1: log 0..28868 replayed == 00000000000000028869-0000000189.checkpoint."""
    pdir = partition_dir(fixture("kafka-3.5-three-node", "node1"))
    builder = ImageBuilder()
    replayed = image_from_items(read_segments(pdir, 0, 28868), builder)
    snapshot = image_from_checkpoint(pdir / "00000000000000028869-0000000189.checkpoint")
    assert replayed == snapshot  # provenance included: offset 28868, epoch 189, its append time
    assert snapshot.offset == 28868 and snapshot.provenance.epoch == 189
    assert not builder.warnings


@pytest.mark.parametrize("parts", [
    ("kafka-3.5-three-node", "node1"),
    ("kafka-3.5-three-node", "node2"),
    ("kafka-3x-single-node",),
    ("kafka-3.9-single-node", "commit-dcd6e71", "data"),
])
def test_snapshot_plus_tail_equals_full_replay(parts: tuple[str, ...]) -> None:
    path = fixture(*parts)
    full = image_from_items(read_directory(path, use_snapshot=False))
    fast = image_from_directory(path)
    assert full == fast and full.offset > 0


def test_single_node_3x_image() -> None:
    image = image_from_directory(fixture("kafka-3x-single-node"))
    assert image.offset == 4928
    assert sorted(t.name for t in image.topics.values()) == [
        "Retry.TestTopicPatient", "TestTopicPatient", "__consumer_offsets",
        "batch2.work.notification.SHR_PROD.persistence", "subscription.matching.SHR_PROD.persistence"]
    assert sum(len(t.partitions) for t in image.topics.values()) == 54
    assert image.features.metadata_version == 19
    assert sorted(image.brokers) == [1] and sorted(image.controllers) == [1]
    assert image.brokers[1].listeners[0].name == "PLAINTEXT"
    offsets = image.configs[ConfigResource(ConfigResourceType.TOPIC, "__consumer_offsets")]
    assert offsets["cleanup.policy"] == "compact"


def test_three_node_35_image() -> None:
    image = image_from_directory(fixture("kafka-3.5-three-node", "node1"))
    assert sorted(image.brokers) == [1, 2, 3]
    assert image.features.metadata_version == 11
    assert "payment-create-request" in image.topic_ids_by_name
    assert image.producer_ids.next_producer_id == 1000


def test_dynamic_quorum_41_snapshot() -> None:
    pdir = partition_dir(fixture("kafka-4.1-standalone-dynamic"))
    image = image_from_checkpoint(pdir / "00000000000000007206-0000000001.checkpoint")
    assert image.features.levels() == {"eligible.leader.replicas.version": 1, "group.version": 1,
                                       "metadata.version": 27, "transaction.version": 2}
    assert sorted(t.name for t in image.topics.values()) == ["SD", "__consumer_offsets"]
    assert ConfigResource(ConfigResourceType.BROKER, "") in image.configs


def test_bootstrap_transaction_in_a_39_log() -> None:
    """Kafka 3.9 writes its bootstrap records inside Begin/EndTransaction."""
    builder = ImageBuilder()
    image = image_from_directory(fixture("kafka-3.9-single-node", "commit-dcd6e71", "data"), builder=builder)
    assert image.features.metadata_version == 21 and not builder.in_transaction and not builder.warnings


def test_reading_never_writes(tmp_path: Path) -> None:
    """The shared fixtures are read-only: nothing in the directory changes."""
    path = fixture("kafka-3.9-single-node", "commit-4bef72a", "data")
    before = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*")}
    image_from_directory(path)
    assert {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*")} == before
