"""leader-epoch-checkpoint: Kafka's file format and LeaderEpochFileCache rules (KIP-101)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.records.epoch_cache import EpochEntry, LeaderEpochCache, format_checkpoint, parse_checkpoint
from kraft.records.errors import StateFileError
from tests.conftest import fixture_path


def test_fixture_checkpoints_parse_and_format_identically() -> None:
    files = sorted(fixture_path().rglob("leader-epoch-checkpoint"))
    assert files
    for path in files:
        text = path.read_text()
        assert format_checkpoint(parse_checkpoint(text)) == text
    node1 = LeaderEpochCache.load(fixture_path("kafka-3.5-three-node", "node1", "__cluster_metadata-0",
                                              "leader-epoch-checkpoint"))
    assert len(node1) == 59 and node1.latest_entry == EpochEntry(190, 30637)


def _cache(tmp_path: Path, *pairs: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, offset in pairs:
        cache.assign(epoch, offset)
    return cache


def test_end_offset_for_follows_kafka(tmp_path: Path) -> None:
    # KIP-101: the end offset of an epoch is the start offset of the next one.
    cache = _cache(tmp_path, (2, 10), (4, 30), (7, 50))
    assert cache.end_offset_for(7, 80) == (7, 80)  # latest epoch -> log end offset
    assert cache.end_offset_for(4, 80) == (4, 50)
    assert cache.end_offset_for(5, 80) == (4, 50)  # unknown epoch between known ones -> floor epoch
    assert cache.end_offset_for(1, 80) == (1, 10)  # below every epoch
    assert cache.end_offset_for(9, 80) == (-1, -1)  # above every epoch
    assert cache.end_offset_for(-1, 80) == (-1, -1)


def test_assign_is_idempotent_and_keeps_monotonicity(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (1, 0), (2, 10))
    assert not cache.assign(2, 15)  # same epoch, later offset: no change
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 10)]
    assert cache.assign(2, 5)  # same epoch, earlier offset: replaces
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 5)]
    assert cache.assign(3, 3)  # an offset before later entries removes them
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(3, 3)]
    # Every change is on disk at once.
    assert LeaderEpochCache.load(tmp_path / "leader-epoch-checkpoint").entries == cache.entries


def test_truncation_from_both_ends(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (1, 0), (2, 10), (3, 20))
    cache.truncate_from_end(15)
    assert cache.entries == [EpochEntry(1, 0), EpochEntry(2, 10)]
    cache.truncate_from_start(12)  # the epoch covering the new start moves to it
    assert cache.entries == [EpochEntry(2, 12)]
    assert cache.epoch_for_offset(12) == 2 and cache.epoch_for_offset(5) is None


@pytest.mark.parametrize("text, reason", [
    ("", "missing"), ("1\n0\n", "version"), ("0\n2\n1 0\n", "expected 2"), ("0\n1\n1\n", "epoch offset"),
    ("0\n2\n3 5\n2 9\n", "increasing"), ("0\nx\n", "integer"),
])
def test_malformed_checkpoint(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    with pytest.raises(StateFileError, match=reason):
        LeaderEpochCache.load(path)
