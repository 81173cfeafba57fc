"""Images of real Kafka directories at any offset or time, and what changed
between two of them (``kraft shell --directory DIR --at``/``diff``)."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraft.image.changes import LogItem
from kraft.image.history import DirectoryHistory
from kraft.image.session import ShellSession
from kraft.image.tree import build_tree
from tests.conftest import fixture_path


def history(*parts: str) -> DirectoryHistory:
    return DirectoryHistory(fixture_path(*parts))


def diff(h: DirectoryHistory, a: str, b: str) -> list[str]:
    session = ShellSession(build_tree(h.image()), images=h, tree_of=build_tree)
    result = session.run_line(f"diff {a} {b}")
    assert not result.failed, result.text
    return result.text.splitlines()


def test_coverage_of_a_directory_with_snapshots_and_the_whole_log() -> None:
    h = history("kafka-4.0-real", "controller1")
    assert h.coverage.bounds() == (0, 513)
    assert h.resolve("0") == 0 and h.resolve("513") == 513
    with pytest.raises(ValueError, match=r"offset 514 is outside what .* covers \(offsets 0\.\.513\)"):
        h.resolve("514")
    with pytest.raises(ValueError, match="offset -1 is outside"):
        h.resolve("-1")
    assert h.image_at("303").features.finalized.get("eligible.leader.replicas.version") is None
    assert h.image_at("304").features.finalized["eligible.leader.replicas.version"] == 1


def test_a_directory_of_snapshots_only_covers_their_offsets() -> None:
    """kafka-4.1: the segment itself was not committed upstream, only snapshots."""
    h = history("kafka-4.1-standalone-dynamic")
    assert h.coverage.log_end is None
    assert h.resolve("7205") == 7205
    with pytest.raises(ValueError, match="outside"):
        h.resolve("7000")
    assert h.image_at("7205").topic("SD") is not None


def test_at_a_time_is_the_last_record_appended_by_then() -> None:
    h = history("kafka-3.5-three-node", "node1")
    # TopicRecord payment-create-request at 5440 (…59.261), delivery-create-request at 5443 (…59.336).
    offset = h.resolve("2025-01-22T07:08:59.300Z")
    assert 5440 <= offset < 5443
    assert sorted(h.image(offset).topic_ids_by_name) == ["payment-create-request"]
    assert h.resolve("2025-01-22T07:08:59.300") == offset  # no zone: UTC
    with pytest.raises(ValueError, match="is before anything"):
        h.resolve("2020-01-01T00:00:00Z")
    with pytest.raises(ValueError, match="neither an offset nor an ISO-8601 time"):
        h.resolve("soon")


def test_a_batch_straddling_the_offset_is_cut_there() -> None:
    h = history("kafka-4.0-real", "controller1")
    # ACLs at 172 and 173 are in one batch: at 172 only the first exists.
    assert len(h.image(172).acls) == 1 and len(h.image(173).acls) == 2


def test_diff_quotas_scram_acls_and_a_deleted_topic() -> None:
    lines = diff(history("kafka-4.0-real", "controller1"), "134", "198")
    assert "+ /image/clientQuotas/user(alice)/consumer_byte_rate: 2097152.0" in lines
    assert "+ /image/clientQuotas/user(<default>)/request_percentage: 50.0" in lines
    assert any(line.startswith("+ /image/scram/SCRAM-SHA-256/alice: ScramCredentialData(salt=6370336f") for line in lines)
    assert any(line.startswith("+ /image/scram/SCRAM-SHA-512/bob: ") for line in lines)
    assert sum(line.startswith("+ /image/acls/byId/") for line in lines) == 6
    assert "- /image/topics/byName/doomed/name: doomed" in lines
    assert sum(line.startswith("- /image/topics/byName/doomed/") for line in lines) == 4 + 2  # 4 partitions, id, name
    assert not any(line.startswith("+ /image/topics") for line in lines)


def test_diff_broker_shutdown_fencing_and_features() -> None:
    h = history("kafka-4.0-real", "controller1")
    shutdown = diff(h, "438", "505")
    assert shutdown[0] == "~ /image/cluster/brokers/4"
    assert "inControlledShutdown=false" in shutdown[1] and "fenced=false" in shutdown[1]
    assert "inControlledShutdown=true" in shutdown[2] and "fenced=true" in shutdown[2]
    assert diff(h, "303", "304") == ["+ /image/features/finalized_eligible.leader.replicas.version: 1"]
    assert diff(h, "304", "304") == []


def test_diff_leader_and_isr_changes_on_kafka_35() -> None:
    lines = diff(history("kafka-3.5-three-node", "node1"), "28000", "30637")
    changed = [i for i, line in enumerate(lines) if line.startswith("~ /image/topics/byName/__consumer_offsets/")]
    assert changed, lines[:20]
    before, after = lines[changed[0] + 1], lines[changed[0] + 2]
    assert before.startswith("    - PartitionRegistration(") and after.startswith("    + PartitionRegistration(")
    assert before != after


def test_a_torn_tail_is_reported_not_fatal(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    source = fixture_path("kafka-3x-single-node")
    copy = tmp_path / "meta"
    shutil.copytree(source, copy)
    segment = next((copy).rglob("00000000000000000000.log"))
    size = segment.stat().st_size
    with open(segment, "r+b") as f:
        f.truncate(size - 30)  # tear the last batch
    caplog.set_level(logging.WARNING, "kraft.image")
    h = DirectoryHistory(copy)
    image = h.image()
    assert 4800 < image.offset < 4928  # everything before the torn batch
    assert any("the readable log ends there" in r.getMessage() or "stray bytes" in r.getMessage()
               for r in caplog.records)
    assert h.coverage.log_end == image.offset


@pytest.mark.parametrize("parts,end", [
    (("kafka-3x-single-node",), 4928),
    (("kafka-3.5-three-node", "node2"), 30636),
    (("kafka-3.9-single-node", "commit-dcd6e71", "data"), 4534),
    (("kafka-3.9-single-node", "commit-4bef72a", "data"), 245532),
    (("kafka-4.0-real", "broker4"), 505),
    (("kafka-4.0-real", "combined-static"), 128),
    (("kafka-4.1-standalone-dynamic",), 7205),
])
def test_every_shared_directory_opens_to_its_end(parts: tuple[str, ...], end: int) -> None:
    from kraft.image.builder import ImageBuilder

    h = history(*parts)
    builder = ImageBuilder()
    image = h.image(None, builder)
    assert image.offset == end and not builder.warnings
    bounds = h.coverage.bounds()
    assert bounds is not None and bounds[1] == end


def test_loading_a_directory_leaves_the_cyclic_collector_as_it_was(tmp_path: Path) -> None:
    """The load pauses Python's cyclic GC (the image holds no cycles) and
    restores it, also when the load fails."""
    import gc

    from kraft.image.metadata_source import image_from_items

    assert gc.isenabled()
    image_from_items(iter([]))
    assert gc.isenabled()

    def broken() -> Iterator[LogItem]:
        assert not gc.isenabled()
        raise OSError("disk gone")
        yield  # pragma: no cover

    with pytest.raises(OSError):
        image_from_items(broken())
    assert gc.isenabled()
    gc.disable()
    try:
        image_from_items(iter([]))
        assert not gc.isenabled()
    finally:
        gc.enable()
