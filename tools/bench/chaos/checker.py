"""The checker: it trusts nothing of kraft. Every node's files are read by
:mod:`.segments` (kafka-python's record-batch reader, CRC checked; no code
of ``kraft.records``), and by real Kafka's ``DumpLogSegments`` too where
its jars are found (:mod:`.kafka_dump`); the client's history comes from
the load's own JSON lines (:mod:`.operations`), never from a node's memory.

During the run :class:`Sampler` takes samples: the high watermark as the
client saw it (one past the highest offset any leader acknowledged as
committed, a lower bound of the real one), the CRC of every batch below it
on every node (a batch's CRC covers its records, so a changed CRC is
changed content) and each voter's ``quorum-state`` (epoch and leader). At
the end :func:`check` holds the run to:

* every record acknowledged as committed (an ``ok`` operation) is at its
  offset in the committed history -- the value a majority of the voters'
  logs hold there, whatever any node's high watermark says -- and on every
  node; an ``info`` operation (outcome unknown) may be there or not, and is
  counted both ways; a ``fail`` operation was never appended and must not be;
* each leader's acknowledged records are in the order it appended them;
* every node's log agrees with the committed history up to the high
  watermark;
* no committed batch (below a sampled high watermark) changed content
  between samples, on a majority or on a node that held it;
* at most one leader per epoch, from the ``quorum-state`` files (sampled
  and final) and the LeaderChange records, not from what the nodes logged;
* no file has a defect kraft's recovery would repair or skip (a torn tail,
  a bad CRC, a missing segment, a snapshot that does not read...).

The independent client's load (:mod:`kraft.tools.bench.chaos_client`) is judged by
:func:`check_client_load`: every ``ok`` client id has its
ClientQuotaRecord in the log of every voter, no client id has two (one
operation applied twice), and no ``fail`` one is in any log; an ``info``
one may be either way, and is counted both ways.

``--load kafka`` (:mod:`.kafka_load`) is judged by :func:`check_kafka_load`
on what Kafka's VerifiableConsumer read back from the brokers: every ``ok``
value read at the partition and offset its acknowledgement named, no value
read that was never sent (none invented, no failed one), none at two
offsets (the idempotent producer writes each once), and in every partition
the values in the order they were sent (one producer, ``enable.idempotence``
keeps a partition's records in send order).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft.tools.bench.chaos.operations import NamedOperations, Operations, SentOperations
from kraft.tools.bench.chaos.segments import NodeFiles, client_quota, read_quorum_state, segment_crcs

__all__ = ["Sampler", "chaos_ok", "check", "check_client_load", "check_kafka_load", "client_ids_set", "client_load_ok", "committed_history", "leaders_per_epoch"]


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
        batches = {n: {b: v for b, v in segment_crcs(d).items() if v[0] < hw} for n, d in dirs.items()}
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
                state = read_quorum_state(dirs[node_id])
                if state is not None and state[1] >= 0:
                    self.leaders.setdefault(state[0], set()).add(state[1])


_DEMO_RECORD = re.compile(rb"node=(\d+) epoch=(\d+) seq=(\d+)")


def _on_node(files: NodeFiles, offset: int, value: bytes) -> bool:
    if offset in files.records:
        return files.records[offset] == value
    # Below the log start: in the record-history snapshot.
    return offset < files.snapshot_offset and value in files.snapshot_records


def committed_history(files: dict[int, NodeFiles], voters: set[int]) -> dict[int, bytes]:
    """At each offset, the value the logs of a majority of the voters hold there."""
    majority = len(voters) // 2 + 1
    committed: dict[int, bytes] = {}
    for offset in {o for n in voters for o in files[n].records}:
        votes = Counter(files[n].records[offset] for n in voters if offset in files[n].records)
        value, count = votes.most_common(1)[0]
        if count >= majority:
            committed[offset] = value
    return committed


def _lost(acks: list[tuple[int, bytes]], committed: dict[int, bytes], files: dict[int, NodeFiles],
          voters: set[int]) -> list[tuple[int, bytes]]:
    majority = len(voters) // 2 + 1
    log_start = min(files[n].snapshot_offset for n in voters)
    return [(o, v) for o, v in acks if committed.get(o) != v
            and not (o < log_start and sum(_on_node(files[n], o, v) for n in voters) >= majority)]


def _out_of_order(acks: list[tuple[int, bytes]]) -> list[tuple[int, int]]:
    """(node, epoch) of each leader whose acknowledged records' offsets do not grow with its sequence."""
    order: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for offset, value in acks:
        m = _DEMO_RECORD.search(value)
        if m:
            order.setdefault((int(m.group(1)), int(m.group(2))), []).append((int(m.group(3)), offset))
    return [k for k, seqs in order.items() if [o for _, o in sorted(seqs)] != sorted(o for _, o in seqs)]


def _disagree(files: dict[int, NodeFiles], committed: dict[int, bytes], hwm: int) -> dict[int, str]:
    out = {}
    for node_id, f in files.items():
        bad = [o for o in range(min(hwm, f.end_offset)) if o in committed and o in f.records
               and f.records[o] != committed[o]]
        short = f.end_offset < hwm
        if bad or short:
            out[node_id] = f"{len(bad)} offsets differ" + (f", log ends at {f.end_offset} < {hwm}" if short else "")
    return out


def leaders_per_epoch(files: dict[int, NodeFiles], sampler: Sampler) -> dict[int, set[int]]:
    """epoch -> every leader the quorum-state files (sampled and final) and the LeaderChange records name."""
    seen: dict[int, set[int]] = {e: set(ls) for e, ls in sampler.leaders.items()}
    for f in files.values():
        if f.quorum_state is not None and f.quorum_state[1] >= 0:
            seen.setdefault(f.quorum_state[0], set()).add(f.quorum_state[1])
        for epoch, leaders in f.leaders.items():
            seen.setdefault(epoch, set()).update(leaders)
    return seen


def _unknown_outcomes(ops: Operations, committed: dict[int, bytes]) -> dict[str, int]:
    """Info operations both ways (committed or not), and fail operations that are committed (none may be)."""
    values = Counter(committed.values())
    return {"info_committed": sum(1 for v in ops.info if values[v]),
            "info_not_committed": sum(1 for v in ops.info if not values[v]),
            "fail_committed": sum(1 for v in ops.fail if values[v])}


def check(ops: Operations, files: dict[int, NodeFiles], voters: set[int], sampler: Sampler) -> dict[str, Any]:
    """The verdict on the files; ``files`` holds every node (voters and observers)."""
    acks = sorted(set(ops.ok))
    hwm = max((o + 1 for o, _ in acks), default=0)
    committed = committed_history(files, voters)
    lost = _lost(acks, committed, files, voters)
    missing = {n: sum(1 for o, v in acks if not _on_node(f, o, v)) for n, f in files.items()}
    two_leaders = {e: sorted(ls) for e, ls in leaders_per_epoch(files, sampler).items() if len(ls) > 1}
    corrupt = {n: f.problems + ([f"torn tail: {f.torn_tail}"] if f.torn_tail else [])
               for n, f in files.items() if f.problems or f.torn_tail}
    return {
        "acknowledged": len(acks),
        "operations": ops.counts(),
        **_unknown_outcomes(ops, committed),
        "present": sum(1 for o, v in acks if all(_on_node(f, o, v) for f in files.values())),
        "lost": len(lost),
        "lost_records": [(o, v.decode(errors="replace")) for o, v in lost[:20]],
        "missing_on": {n: m for n, m in missing.items() if m},
        "out_of_order_leaders": _out_of_order(acks),
        "logs_disagree": _disagree(files, committed, hwm),
        "two_leaders_in_an_epoch": two_leaders,
        "files_corrupt": corrupt,
        "changed_below_high_watermark": list(sampler.changed),
        "samples": sampler.samples,
        "committed_records": sum(1 for o in committed if o < hwm),
        "high_watermark": hwm,
    }


def chaos_ok(result: dict[str, Any]) -> bool:
    return (result["lost"] == 0 and not result["missing_on"] and not result["out_of_order_leaders"]
            and not result["logs_disagree"] and not result["two_leaders_in_an_epoch"]
            and not result.get("files_corrupt") and not result.get("fail_committed")
            and not result.get("dump_log_disagrees")
            and not result.get("changed_below_high_watermark") and not result.get("stalled")
            and not result.get("power_loss_dropped_nothing") and not result.get("wrong_fail_stops")
            and not result.get("applied_twice") and not result.get("invented")
            and not result.get("out_of_order_partitions"))


def client_ids_set(files: NodeFiles, key: str) -> Counter[str]:
    """client id -> how many ClientQuotaRecords set ``key`` for it, in the
    latest snapshot and in the segments past it (a record below the
    snapshot's end offset is in the snapshot already)."""
    values = [*files.snapshot_records, *(v for o, v in files.records.items() if o >= files.snapshot_offset)]
    found: Counter[str] = Counter()
    for value in values:
        quota = client_quota(value)
        if quota is not None and not quota[2] and quota[1] == key and set(quota[0]) == {"client-id"}:
            found[quota[0]["client-id"] or ""] += 1
    return found


def check_client_load(ops: NamedOperations, files: dict[int, NodeFiles], voters: set[int],
                      key: str) -> dict[str, Any]:
    """The verdict on the chaos client's history against the voters' logs."""
    on = {n: client_ids_set(files[n], key) for n in voters}
    everywhere = {name for name in ops.ok if all(on[n][name] for n in voters)}
    anywhere = {name for counts in on.values() for name in counts}
    twice = {n: sorted(name for name, c in counts.items() if c > 1) for n, counts in on.items()}
    return {
        "operations": ops.counts(),
        "present": len(everywhere),
        "lost": len(set(ops.ok) - everywhere),
        "lost_records": sorted(set(ops.ok) - everywhere)[:20],
        "missing_on": {n: m for n in voters if (m := sum(1 for name in set(ops.ok) if not on[n][name]))},
        "applied_twice": {n: names[:20] for n, names in twice.items() if names},
        "fail_committed": sum(1 for name in ops.fail if name in anywhere),
        "info_committed": sum(1 for name in ops.info if name in anywhere),
        "info_not_committed": sum(1 for name in ops.info if name not in anywhere),
        "files_corrupt": {n: f.problems for n, f in files.items() if f.problems},
    }


def client_load_ok(result: dict[str, Any]) -> bool:
    return (result["lost"] == 0 and not result["missing_on"] and not result["applied_twice"]
            and not result["fail_committed"] and not result["files_corrupt"])


def _out_of_order_partitions(read: dict[tuple[int, int], str]) -> list[int]:
    """Partitions whose values, by offset, do not grow (VerifiableProducer sends 0, 1, 2...)."""
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for (partition, offset), value in read.items():
        if value.isdigit():
            by_partition.setdefault(partition, []).append((offset, int(value)))
    out = []
    for partition, records in sorted(by_partition.items()):
        values = [v for _, v in sorted(records)]
        if any(a >= b for a, b in zip(values, values[1:])):
            out.append(partition)
    return out


def check_kafka_load(ops: SentOperations, consumed: list[tuple[int, int, str]]) -> dict[str, Any]:
    """The verdict on a producer's history against what the consumer read back."""
    read: dict[tuple[int, int], str] = {}
    changed = []  # one offset read twice with two values: the log changed under the consumer
    for partition, offset, value in consumed:
        if read.setdefault((partition, offset), value) != value:
            changed.append(f"partition {partition} offset {offset}: {read[partition, offset]!r} then {value!r}")
    places: dict[str, set[tuple[int, int]]] = {}
    for where, value in read.items():
        places.setdefault(value, set()).add(where)
    lost = sorted((v for v, where in ops.ok.items() if read.get(where) != v), key=lambda v: (len(v), v))
    fail = set(ops.fail)
    invented = sorted(v for v in places if v not in ops.values and v not in ops.ok)
    return {
        "operations": ops.counts(),
        "present": len(ops.ok) - len(lost),
        "lost": len(lost),
        "lost_records": [f"{v} (acknowledged at partition {ops.ok[v][0]} offset {ops.ok[v][1]}"
                         f"{', read at ' + str(sorted(places[v])) if v in places else ', never read'})"
                         for v in lost[:20]],
        "missing_on": {},
        "read_back": len(read),
        "invented": invented[:20] + changed[:20],
        "applied_twice": {"brokers": sorted((v for v, where in places.items() if len(where) > 1),
                                            key=lambda v: (len(v), v))[:20]} if any(
            len(w) > 1 for w in places.values()) else {},
        "out_of_order_partitions": _out_of_order_partitions(read),
        "fail_committed": sum(1 for v in fail if v in places),
        "info_committed": sum(1 for v in ops.info if v in places),
        "info_not_committed": sum(1 for v in ops.info if v not in places),
    }
