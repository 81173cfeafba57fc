"""A metadata image written as snapshot records (Kafka 4.4's ``MetadataImage.write``
with ``ImageWriterOptions``) and read back: the same image, on images real Kafka
wrote (fixtures/)."""

from __future__ import annotations

import pytest

from kraft.controller.image_writer import image_records
from kraft.image.decode import decode_metadata_value
from kraft.image.metadata_source import image_from_checkpoint, image_from_directory, read_checkpoint
from kraft.image.model import MetadataImage
from tests.conftest import fixture_path
from tests.controller.images import replay

FIXTURES = [
    ("kafka-4.0-real", "controller1"),
    ("kafka-4.0-real", "combined-static"),
    ("kafka-3.9-single-node", "commit-4bef72a", "data"),
    ("kafka-3.5-three-node", "node1"),
    ("kafka-3x-single-node",),
]


def _without_zk_state(image: MetadataImage) -> dict[str, object]:
    out = image.to_json(include_provenance=False)
    out["features"]["zkMigrationState"] = None  # type: ignore[index]  # Kafka 4.x writes no ZkMigrationStateRecord
    return out


@pytest.mark.parametrize("parts", FIXTURES)
def test_written_image_reads_back_equal(parts: tuple[str, ...]) -> None:
    # MetadataImage.write: replaying its records into an empty image gives the same content.
    image = image_from_directory(fixture_path(*parts))
    records = image_records(image)
    assert _without_zk_state(replay(records)) == _without_zk_state(image)
    assert records[0].message.name == "metadata.version" and records[0].version == 0


SNAPSHOTS = [
    ("kafka-4.0-real", "controller1", "__cluster_metadata-0", "00000000000000000358-0000000001.checkpoint"),
    ("kafka-4.0-real", "combined-static", "__cluster_metadata-0", "00000000000000000118-0000000001.checkpoint"),
    ("kafka-4.1-standalone-dynamic", "__cluster_metadata-0", "00000000000000007206-0000000001.checkpoint"),
]


def _runs(records: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    """Consecutive records of one type and version, counted."""
    out: list[tuple[str, int, int]] = []
    for name, version in records:
        if out and out[-1][:2] == (name, version):
            out[-1] = (name, version, out[-1][2] + 1)
        else:
            out.append((name, version, 1))
    return out


@pytest.mark.parametrize("parts", SNAPSHOTS)
def test_same_records_as_kafkas_own_snapshot(parts: tuple[str, ...]) -> None:
    # Kafka 4.x's SnapshotGenerator -> MetadataImage.write: the same records, in the same runs of
    # type and version, as the snapshot real Kafka wrote for that image.
    path = fixture_path(*parts)
    theirs = [decode_metadata_value(v) for v in read_checkpoint(path).values]
    ours = image_records(image_from_checkpoint(path))
    assert _runs([(type(r.message).__name__, r.version) for r in ours]) == \
        _runs([(type(r.message).__name__, r.version) for r in theirs])
    assert sorted(repr(r.message) for r in ours) == sorted(repr(r.message) for r in theirs)
