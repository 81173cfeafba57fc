"""The independent checker: it reads the nodes' files with the records layer
(and the client's ack logs), never a node's memory.

During the run :class:`Sampler` takes samples: the high watermark as the
client saw it (one past the highest offset any leader acknowledged as
committed, a lower bound of the real one), the CRC of every batch below it
on every node (a batch's CRC covers its records, so a changed CRC is
changed content) and each voter's ``quorum-state`` (epoch and leader). At
the end :func:`check` reads every node's log and holds the run to:

* every acknowledged record is at its offset in the committed history (the
  value a majority of the voters hold there) and on every node;
* each leader's acknowledged records are in the order it appended them;
* every node's log agrees with the committed history up to the high
  watermark;
* no committed batch (below a sampled high watermark) changed content
  between samples, on a majority or on a node that held it;
* at most one leader per epoch (LeaderChange records, quorum-state samples
  and the roles the nodes logged).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Sampler", "Stored", "batch_crcs", "chaos_ok", "check", "read_stored"]


@dataclass
class Stored:
    records: dict[int, bytes]
    snapshot_offset: int
    snapshot_records: list[bytes]
    leaders: dict[int, int]
    end_offset: int


def read_stored(metadata_log_dir: Path) -> Stored:
    """A node's log as the node itself would open it (the node is stopped)."""
    from kraft.records.control import ControlRecordType, decode_control_record
    from kraft.records.log import MetadataLog, metadata_partition_dir

    mlog = MetadataLog.open(metadata_partition_dir(metadata_log_dir))
    try:
        records: dict[int, bytes] = {}
        leaders: dict[int, int] = {}
        for batch in mlog.iter_batches():
            for rec in batch.records():
                if not batch.is_control:
                    records[rec.offset] = bytes(rec.value or b"")
                    continue
                control = decode_control_record(rec)
                if control.type is ControlRecordType.LEADER_CHANGE:
                    leaders.setdefault(batch.partition_leader_epoch, control.message.leader_id)
        sid = mlog.latest_snapshot_id()
        snapshot: list[bytes] = []
        if sid is not None:
            reader = mlog.open_snapshot(sid)
            if reader is not None:
                with reader:
                    snapshot = [bytes(r.value or b"") for r in reader.contents().data_records()]
        return Stored(records, sid.offset if sid is not None else 0, snapshot, leaders, mlog.end_offset)
    finally:
        mlog.close()


def batch_crcs(metadata_log_dir: Path) -> dict[int, tuple[int, int]]:
    """base offset -> (last offset, CRC) of every whole batch in the node's
    segments, read without opening the log (the node keeps writing)."""
    from kraft.records.batch import iter_batches
    from kraft.records.log import metadata_partition_dir

    out: dict[int, tuple[int, int]] = {}
    try:
        segments = sorted(metadata_partition_dir(metadata_log_dir).glob("*.log"))
    except OSError:
        return out
    for segment in segments:
        try:
            data = segment.read_bytes()
        except OSError:
            continue
        try:
            for batch in iter_batches(data):
                out[batch.base_offset] = (batch.last_offset, batch.crc)
        except Exception:  # a torn tail being written: the whole batches before it count
            pass
    return out


def _quorum_state(metadata_log_dir: Path) -> tuple[int, int] | None:
    from kraft.records.log import metadata_partition_dir

    try:
        data = json.loads((metadata_partition_dir(metadata_log_dir) / "quorum-state").read_text())
        return int(data["leaderEpoch"]), int(data["leaderId"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Sampler:
    """Samples taken while the faults run (see the module's docstring).

    A batch below the high watermark the client saw is committed; a
    committed batch is on the disk of a majority of the voters and no
    leader may replace it, so at every sample the batch a majority holds at
    such an offset is the committed one. A lagging or cut-off node may hold
    another there for a while (its own high watermark is lower) and must
    replace it; what must never happen is that the committed batch changes,
    or that a node which held it later holds something else there.
    """

    #: base offset -> (last offset, CRC) of the committed batches seen so far.
    committed: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: node -> base offsets at which the node has held the committed batch.
    held: dict[int, set[int]] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    leaders: dict[int, set[int]] = field(default_factory=dict)
    samples: int = 0

    def _report(self, text: str) -> None:
        if len(self.changed) < 20:
            self.changed.append(text)

    def sample(self, dirs: dict[int, Path], voters: set[int], hw: int) -> None:
        self.samples += 1
        batches = {n: {b: v for b, v in batch_crcs(d).items() if v[0] < hw} for n, d in dirs.items()}
        majority = len(voters) // 2 + 1
        votes: Counter[tuple[int, tuple[int, int]]] = Counter(
            (base, v) for n in voters if n in batches for base, v in batches[n].items())
        for (base, value), count in votes.items():
            if count < majority:
                continue
            before = self.committed.setdefault(base, value)
            if before != value:
                self._report(f"the committed batch at offset {base} changed below the high watermark {hw} "
                             f"(crc {before[1]:#x} -> {value[1]:#x} on a majority)")
        for node_id, mine in batches.items():
            held = self.held.setdefault(node_id, set())
            for base, value in mine.items():
                committed = self.committed.get(base)
                if committed is None:
                    continue
                if value == committed:
                    held.add(base)
                elif base in held:
                    self._report(f"node {node_id}: the committed batch at offset {base} changed below the high "
                                 f"watermark {hw} (crc {committed[1]:#x} -> {value[1]:#x})")
            if node_id in voters:
                state = _quorum_state(dirs[node_id])
                if state is not None and state[1] >= 0:
                    self.leaders.setdefault(state[0], set()).add(state[1])


_DEMO_RECORD = re.compile(rb"node=(\d+) epoch=(\d+) seq=(\d+)")


def check(acks: list[tuple[int, bytes]], stored: dict[int, Stored], voters: set[int], sampler: Sampler,
          logged_leaders: dict[int, set[int]]) -> dict[str, Any]:
    """The verdict on the files; ``stored`` holds every node (voters and observers)."""
    acks = sorted(set(acks))
    hwm = max((o + 1 for o, _ in acks), default=0)

    def on_node(s: Stored, offset: int, value: bytes) -> bool:
        if offset in s.records:
            return s.records[offset] == value
        # Below the log start: in the record-history snapshot.
        return offset < s.snapshot_offset and value in s.snapshot_records

    # The committed history: at each offset, the value a majority of the voters hold.
    majority = len(voters) // 2 + 1
    committed: dict[int, bytes] = {}
    offsets = {o for n in voters for o in stored[n].records}
    for offset in offsets:
        votes = Counter(stored[n].records[offset] for n in voters if offset in stored[n].records)
        value, count = votes.most_common(1)[0]
        if count >= majority:
            committed[offset] = value
    lost = [(o, v) for o, v in acks if committed.get(o) != v
            and not (o < min(stored[n].snapshot_offset for n in voters)
                     and sum(on_node(stored[n], o, v) for n in voters) >= majority)]
    missing = {n: [(o, v) for o, v in acks if not on_node(s, o, v)] for n, s in stored.items()}
    # Each leader's acknowledged records, in its append order, have growing offsets.
    order: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for offset, value in acks:
        m = _DEMO_RECORD.search(value)
        if m:
            order.setdefault((int(m.group(1)), int(m.group(2))), []).append((int(m.group(3)), offset))
    out_of_order = [k for k, seqs in order.items() if [o for _, o in sorted(seqs)] != sorted(o for _, o in seqs)]
    disagree = {}
    for node_id, s in stored.items():
        bad = [o for o in range(min(hwm, s.end_offset)) if o in committed and o in s.records
               and s.records[o] != committed[o]]
        short = s.end_offset < hwm
        if bad or short:
            disagree[node_id] = f"{len(bad)} offsets differ" + (f", log ends at {s.end_offset} < {hwm}" if short else "")
    seen: dict[int, set[int]] = {e: set(ls) for e, ls in sampler.leaders.items()}
    for epoch, leaders in logged_leaders.items():
        seen.setdefault(epoch, set()).update(leaders)
    for s in stored.values():
        for epoch, leader in s.leaders.items():
            seen.setdefault(epoch, set()).add(leader)
    two_leaders = {e: sorted(ls) for e, ls in seen.items() if len(ls) > 1}
    present = sum(1 for o, v in acks if all(on_node(s, o, v) for s in stored.values()))
    return {
        "acknowledged": len(acks),
        "present": present,
        "lost": len(lost),
        "lost_records": [(o, v.decode(errors="replace")) for o, v in lost[:20]],
        "missing_on": {n: len(m) for n, m in missing.items() if m},
        "out_of_order_leaders": out_of_order,
        "logs_disagree": disagree,
        "two_leaders_in_an_epoch": two_leaders,
        "changed_below_high_watermark": list(sampler.changed),
        "samples": sampler.samples,
        "committed_records": sum(1 for o in committed if o < hwm),
        "high_watermark": hwm,
    }


def chaos_ok(result: dict[str, Any]) -> bool:
    return (result["lost"] == 0 and not result["missing_on"] and not result["out_of_order_leaders"]
            and not result["logs_disagree"] and not result["two_leaders_in_an_epoch"]
            and not result.get("changed_below_high_watermark") and not result.get("stalled"))
