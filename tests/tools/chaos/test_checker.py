"""The checker (:mod:`kraft.tools.bench.chaos.checker`) on hand-made files'
contents: it must see a lost acknowledged record, a log that disagrees,
two leaders in an epoch, content changed below the high watermark, and a
failed append that is committed; it counts unknown outcomes both ways."""

from __future__ import annotations

from pathlib import Path

from kraft.tools.bench.chaos.checker import Sampler, chaos_ok, check
from kraft.tools.bench.chaos.operations import Operations
from kraft.tools.bench.chaos.segments import NodeFiles


def _stored(values: dict[int, bytes], leaders: dict[int, int] | None = None) -> NodeFiles:
    return NodeFiles(records=dict(values), leaders={e: {n} for e, n in (leaders or {}).items()},
                     end_offset=max(values, default=-1) + 1)


RECORDS = {o: f"quickstart node=1 epoch=1 seq={o}".encode() for o in range(5)}
ACKS = Operations.acknowledged(RECORDS.items())


def test_all_acknowledged_records_on_every_node_is_ok() -> None:
    stored = {n: _stored(RECORDS, {1: 1}) for n in (1, 2, 3, 99)}
    result = check(ACKS, stored, {1, 2, 3}, Sampler())
    assert chaos_ok(result), result
    assert result["acknowledged"] == result["present"] == 5 and result["high_watermark"] == 5


def test_a_record_only_a_minority_holds_is_lost() -> None:
    other = {**RECORDS, 3: b"quickstart node=2 epoch=2 seq=0", 4: b"quickstart node=2 epoch=2 seq=1"}
    stored = {1: _stored(RECORDS), 2: _stored(other), 3: _stored(other), 99: _stored(other)}
    result = check(ACKS, stored, {1, 2, 3}, Sampler())
    assert not chaos_ok(result)
    assert result["lost"] == 2 and [o for o, _ in result["lost_records"]] == [3, 4]
    assert result["missing_on"] == {2: 2, 3: 2, 99: 2}


def test_a_short_log_and_two_leaders_in_an_epoch_fail() -> None:
    short = {o: v for o, v in RECORDS.items() if o < 3}
    stored = {1: _stored(RECORDS, {4: 1}), 2: _stored(RECORDS, {4: 2}), 3: _stored(short), 99: _stored(RECORDS)}
    result = check(ACKS, stored, {1, 2, 3}, Sampler())
    assert result["lost"] == 0
    assert "log ends at 3 < 5" in result["logs_disagree"][3]
    assert result["two_leaders_in_an_epoch"] == {4: [1, 2]}
    assert not chaos_ok(result)


def test_records_out_of_their_leaders_order_fail() -> None:
    swapped = [(0, RECORDS[1]), (1, RECORDS[0])]
    values = {0: RECORDS[1], 1: RECORDS[0]}
    stored = {n: _stored(values) for n in (1, 2, 3)}
    result = check(Operations.acknowledged(swapped), stored, {1, 2, 3}, Sampler())
    assert result["out_of_order_leaders"] == [(1, 1)]
    assert not chaos_ok(result)


def test_a_sample_that_changed_below_the_high_watermark_fails() -> None:
    sampler = Sampler(changed=["node 2: the batch at offset 0 changed below the high watermark 5"])
    stored = {n: _stored(RECORDS) for n in (1, 2, 3)}
    assert not chaos_ok(check(ACKS, stored, {1, 2, 3}, sampler))


def test_unknown_outcomes_count_both_ways_and_a_committed_failure_fails() -> None:
    stored = {n: _stored(RECORDS, {1: 1}) for n in (1, 2, 3)}
    unknown = [RECORDS[4], b"quickstart node=1 epoch=1 seq=99"]
    ops = Operations(ok=list(RECORDS.items())[:4], info=unknown, invoked=6)
    result = check(ops, stored, {1, 2, 3}, Sampler())
    assert (result["info_committed"], result["info_not_committed"]) == (1, 1)
    assert result["operations"] == {"invoked": 6, "ok": 4, "fail": 0, "info": 2}
    assert chaos_ok(result), result
    # A fail operation was refused before it was appended: it can be in no log.
    failed = check(Operations(ok=list(RECORDS.items())[:4], fail=[RECORDS[4]], invoked=5), stored, {1, 2, 3},
                   Sampler())
    assert failed["fail_committed"] == 1 and not chaos_ok(failed)


def _segment(directory: Path, values: list[bytes], epoch: int) -> None:
    from kraft.records.batch import build_data_batch
    from kraft.records.log import metadata_partition_dir

    part = metadata_partition_dir(directory)
    part.mkdir(parents=True, exist_ok=True)
    data = b"".join(build_data_batch([v], base_offset=i, epoch=epoch, timestamp=0) for i, v in enumerate(values))
    (part / "00000000000000000000.log").write_bytes(data)


def test_the_sampler_tolerates_a_cut_off_nodes_tail_but_not_a_changed_committed_batch(tmp_path: Path) -> None:
    dirs = {n: tmp_path / str(n) for n in (1, 2, 3)}
    a, b = [b"r0", b"r1", b"r2"], [b"r0", b"r1", b"x2"]
    for n in (1, 2):
        _segment(dirs[n], a, 1)
    _segment(dirs[3], b, 2)  # a cut-off leader's uncommitted tail at offset 2
    sampler = Sampler()
    sampler.sample(dirs, {1, 2, 3}, hw=3)
    _segment(dirs[3], a, 1)  # it truncated and caught up: fine
    sampler.sample(dirs, {1, 2, 3}, hw=3)
    assert sampler.changed == []
    _segment(dirs[1], b, 2)  # a node that held the committed batch now holds another
    sampler.sample(dirs, {1, 2, 3}, hw=3)
    assert sampler.changed and "node 1: the committed batch at offset 2 changed" in sampler.changed[0]


def test_power_cuts_that_dropped_nothing_fail_the_run() -> None:
    stored = {n: _stored(RECORDS, {1: 1}) for n in (1, 2, 3)}
    result = check(ACKS, stored, {1, 2, 3}, Sampler())
    assert chaos_ok(result)
    assert not chaos_ok({**result, "power_loss_dropped_nothing": True})
