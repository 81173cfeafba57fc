"""Whether one node's ``__cluster_metadata`` files are a byte-for-byte copy
of another's, read from the files alone (no kraft code).

What "byte-identical" can cover, and what this checks:

- **Segments, batch by batch.** Two replicas' ``.log`` files need not have
  the same names or boundaries: each rolls segments by its own size and
  time settings, and a copy that began from a snapshot starts its first
  segment there. What Raft makes equal is the batches: every batch both
  hold (the same base offset) must be the same bytes -- header, CRC,
  leader epoch, append time and records, which the leader wrote once and
  a follower stores as fetched. The common range runs from the copy's log
  start to the common end (the shorter log's last batch); the leader's
  uncommitted tail and the batches its retention already deleted are left
  out.
- **Snapshots, file by file.** ``OFFSET-EPOCH.checkpoint`` files of the same
  name must be the same bytes: a copy holds the leader's snapshots only
  when it fetched them (FetchSnapshot); a snapshot a node writes itself
  from its own image is a different file and is not compared (the observer
  runs with Kafka's default of 20 MiB between snapshots, so it writes none
  in a test).

Kafka renames what its retention removes to ``*.deleted`` and deletes it a
minute later (``internal.metadata.delete.delay.millis``), so a leader's
``.deleted`` files count as its own.
"""

from __future__ import annotations

import struct
from pathlib import Path

#: A batch starts with its base offset (int64) and length (int32, the bytes after it).
_HEAD = struct.Struct(">qi")


def partition(data: Path) -> Path:
    return data / "__cluster_metadata-0"


def batches(data: Path) -> dict[int, bytes]:
    """Every whole batch in the node's segments (and ``.log.deleted`` files),
    by base offset."""
    found: dict[int, bytes] = {}
    for segment in sorted([*partition(data).glob("*.log"), *partition(data).glob("*.log.deleted")]):
        raw = segment.read_bytes()
        at = 0
        while at + _HEAD.size <= len(raw):
            base, length = _HEAD.unpack_from(raw, at)
            end = at + _HEAD.size + length
            if length <= 0 or end > len(raw):
                break  # a preallocated or torn tail
            found[base] = raw[at:end]
            at = end
    return found


def snapshots(data: Path) -> dict[str, bytes]:
    """Snapshot files by name (``OFFSET-EPOCH.checkpoint``), ``.deleted`` ones included."""
    files = [*partition(data).glob("*.checkpoint"), *partition(data).glob("*.checkpoint.deleted")]
    return {f.name.removesuffix(".deleted"): f.read_bytes() for f in files}


def log_start(data: Path) -> int:
    """The base offset of the node's first live segment (0 before any retention)."""
    names = sorted(int(p.name.removesuffix(".log")) for p in partition(data).glob("*.log"))
    return names[0] if names else 0


def compare(copy: Path, leader: Path) -> tuple[list[int], list[str]]:
    """The base offsets of the batches both hold and the snapshot names both
    hold; an AssertionError naming the first batch or snapshot that differs."""
    ours, theirs = batches(copy), batches(leader)
    common = sorted(set(ours) & set(theirs))
    for base in common:
        assert ours[base] == theirs[base], f"batch at offset {base} differs from the leader's"
    copied, kept = snapshots(copy), snapshots(leader)
    shared = sorted(set(copied) & set(kept))
    for name in shared:
        assert copied[name] == kept[name], f"snapshot {name} differs from the leader's"
    return common, shared
