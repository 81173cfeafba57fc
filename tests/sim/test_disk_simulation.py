"""The simulation on real files: every replica runs the node's MetadataLog
(Kafka v2 batches, segments, indexes, leader-epoch-checkpoint, snapshots,
quorum-state) in a directory of its own, and a crash keeps only what the
disk model says was fsynced -- torn tails, lost creations, undone removals --
before the replica restarts through the log's real recovery.

The disk model is tested on its own first (what survives a crash), then a
regression found by it, then seeded runs: a fast subset with every test
run, a thousand seeds in the slow sweep (two worker processes)."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kraft.raft.logops import AppendAsLeader, Batch, Flush, TruncateTo
from kraft.records.log import MetadataLog
from kraft.sim import SimulationConfig, SimulationFailure, simulate
from kraft.sim.disk import DiskModel
from kraft.sim.disklog import DiskLog
from tests.sim.sweeps import sweep_totals

SHAPES = [(3, 1), (5, 2), (3, 0), (1, 1), (4, 1), (2, 1)]


# --- the disk model ----------------------------------------------------------------


def _write(path: Path, data: bytes, *, fsync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def test_a_crash_keeps_what_was_fsynced_and_may_tear_the_rest(tmp_path: Path) -> None:
    model = DiskModel()
    with model.installed():
        model.track(tmp_path)
        _write(tmp_path / "segment", b"flushed|", fsync=True)
        _fsync_dir(tmp_path)
        _write(tmp_path / "segment", b"written after the fsync", fsync=False)
        # Without randomness: the durable state alone.
        assert model.crash_image(tmp_path, None).files == {"segment": b"flushed|"}
        outcomes = {model.crash_image(tmp_path, random.Random(seed)).files["segment"] for seed in range(60)}
    assert all(o.startswith(b"flushed|") and b"flushed|written after the fsync".startswith(o) for o in outcomes)
    assert b"flushed|" in outcomes and b"flushed|written after the fsync" in outcomes
    assert len(outcomes) > 3, "torn tails of several lengths"


def test_creations_and_removals_are_durable_only_after_a_directory_fsync(tmp_path: Path) -> None:
    model = DiskModel()
    with model.installed():
        model.track(tmp_path)
        _write(tmp_path / "old", b"old data", fsync=True)
        _fsync_dir(tmp_path)
        _write(tmp_path / "new", b"new data", fsync=True)
        os.unlink(tmp_path / "old")
        image = model.crash_image(tmp_path, None)
        assert image.files == {"old": b"old data"}, "the unlink and the create are both undone"
        _fsync_dir(tmp_path)
        assert model.crash_image(tmp_path, None).files == {"new": b"new data"}


def test_restore_rewrites_the_directory_and_makes_it_the_durable_state(tmp_path: Path) -> None:
    model = DiskModel()
    with model.installed():
        model.track(tmp_path)
        _write(tmp_path / "a", b"123", fsync=True)
        _fsync_dir(tmp_path)
        _write(tmp_path / "a", b"456", fsync=False)
        model.restore(tmp_path, model.crash_image(tmp_path, None))
        assert (tmp_path / "a").read_bytes() == b"123"
        assert model.crash_image(tmp_path, None).files == {"a": b"123"}


def test_the_model_leaves_os_fsync_as_it_found_it(tmp_path: Path) -> None:
    real = os.fsync
    with DiskModel().installed():
        assert os.fsync is not real
    assert os.fsync is real


# --- crash consistency of the real log ---------------------------------------------------


def test_a_failing_disk_fails_every_fsync_and_makes_nothing_durable(tmp_path: Path) -> None:
    """The fsync fault of the real-process test (tests/node/test_fsync_fault.py)
    in the model: EIO, and the bytes written are no more durable than before."""
    model = DiskModel()
    with model.installed():
        model.track(tmp_path)
        _write(tmp_path / "seg", b"durable", fsync=True)
        _fsync_dir(tmp_path)
        model.fail_fsync(tmp_path)
        with pytest.raises(OSError) as failed:
            _write(tmp_path / "seg", b"+lost", fsync=True)
        assert failed.value.errno == errno.EIO
        with pytest.raises(OSError):
            _fsync_dir(tmp_path)
        assert model.crash_image(tmp_path, None).files == {"seg": b"durable"}
        model.heal_fsync(tmp_path)
        _write(tmp_path / "seg", b"!", fsync=True)
        assert model.crash_image(tmp_path, None).files == {"seg": b"durable+lost!"}


def test_a_truncation_across_segments_stays_truncated_after_a_crash(tmp_path: Path) -> None:
    """Found by the disk simulation: ``MetadataLog.truncate_to`` deleted the
    later segments without making the removal durable, so a crash could bring
    them back behind the truncated active segment -- a hole in the log, and
    the truncated (diverging) records back in it, which recovery took for a
    clean log. Kafka flushes the directory when it renames segments away."""
    model = DiskModel()
    with model.installed():
        log = DiskLog.format(tmp_path / "node", model, lambda: 0, static_voters=(1,), cluster_id="c")
        for i in range(40):
            log.apply(AppendAsLeader(Batch(log.end_offset, 1 + i // 20, (b"r%d" % i,) * 3)))
        log.apply(Flush())
        bases = [s.base_offset for s in log.metadata_log.segments]
        assert len(bases) >= 3, bases
        cut = bases[-2] + 3  # inside the next-to-last segment, same epoch as its tail
        log.apply(TruncateTo(cut))
        expected = [log.entry_at(o) for o in range(log.end_offset)]
        # The durable state alone: every removal not made durable comes back.
        reopened = log.crash_copy(None)
        try:
            assert reopened.end_offset == log.end_offset
            assert [reopened.entry_at(o) for o in range(reopened.end_offset)] == expected
            assert [s.base_offset for s in reopened.metadata_log.segments] == bases[:-1]
        finally:
            reopened.close()


def test_a_flush_that_does_not_reach_the_disk_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks can fail: with ``MetadataLog.flush`` doing nothing, some crash
    loses records the core was told are durable."""
    monkeypatch.setattr(MetadataLog, "flush", lambda self: None)
    reasons = []
    for seed in range(12):
        try:
            simulate(seed, storage="disk")
        except SimulationFailure as failure:
            reasons.append(failure.reason)
    assert any("flushed records survive a crash" in r or "committed" in r for r in reasons), reasons


def test_a_node_that_survives_a_failed_fsync_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks can fail: a shell that carries on after a failed fsync (as
    the node did before fail-stop: skip the rest of the Ready's log
    operations, keep going) lets a leader count records that are durable
    nowhere but its page cache, and some run reports a committed record
    held durably by fewer than a majority."""
    from kraft.sim.simulation import Simulation

    monkeypatch.setattr(Simulation, "_on_disk_error", lambda self, node, during, error: False)
    reasons = []
    for seed in range(24):
        try:
            simulate(seed, storage="disk")
        except SimulationFailure as failure:
            reasons.append(failure.reason)
    assert any("committed records are never lost" in r for r in reasons), reasons


def test_a_replica_that_knows_the_leader_but_not_its_endpoints_learns_them_from_a_fetch() -> None:
    """Found by the fsync-fault sweep (seed 663): an observer whose disk was
    replaced restarts knowing the leader of its epoch (quorum-state) but not
    where it listens (its new log has no voter set), so it stays Unattached
    and asks the bootstrap servers. Their Fetch answers name the leader and
    its endpoints; Kafka's ``KafkaRaftClient.maybeTransition`` adopts a known
    leader's endpoints when they are new ("more endpoints"), so the replica
    must become its follower -- it used to ignore the answers forever and
    the healed cluster never converged."""
    result = simulate(663, voters=1, observers=1, reconfig=True, storage="disk")
    assert result.stats["converged"] == 1


# --- seeded runs -------------------------------------------------------------------------


def _mode(seed: int) -> dict[str, object]:
    if seed % 10 == 3:
        return {"reconfig": True}
    if seed % 10 == 7:
        return {"dynamic": True}
    return {}


def run_disk_seed(seed: int) -> Counter[str] | str:
    """The run's coverage counters, or the failure report (with its replay
    command). The slow sweep drives time from trio's MockClock."""
    voters, observers = SHAPES[seed % len(SHAPES)]
    try:
        return simulate(
            seed, voters=voters, observers=observers, storage="disk", clock="trio", **_mode(seed)
        ).stats  # type: ignore[arg-type]
    except SimulationFailure as failure:
        return str(failure)


#: What the disk runs must exercise: crashes that tear files and recovery
#: that repairs them, besides the protocol's own paths.
MUST_HAPPEN = ["crashes", "fail-stops", "torn-files", "recovery-repairs", "snapshots-created", "snapshot-installs", "truncations",
               "became-Leader", "converged"]


def test_fast_subset_of_disk_seeds() -> None:
    seeds = range(24)
    totals = sweep_totals([run_disk_seed(seed) for seed in seeds])
    missing = [k for k in MUST_HAPPEN if totals[k] == 0]
    assert not missing, f"the fast subset never exercised {missing}"


def test_a_disk_seed_replays_event_for_event() -> None:
    a = simulate(11, storage="disk")
    b = simulate(11, storage="disk")
    assert (a.digest, a.events, a.end_ms, a.stats) == (b.digest, b.events, b.end_ms, b.stats)
    assert a.stats["crashes"] > 0
    assert simulate(12, storage="disk").digest != a.digest


def test_trio_mock_clock_drives_the_same_run() -> None:
    """Both clocks run one task over one event queue: the same seed gives the
    same run, event for event, whichever drives time."""
    virtual = simulate(5, storage="disk")
    on_trio = simulate(5, storage="disk", clock="trio")
    assert (virtual.digest, virtual.events, virtual.end_ms) == (on_trio.digest, on_trio.events, on_trio.end_ms)


def test_the_replay_command_names_the_storage_and_clock() -> None:
    config = SimulationConfig(seed=42, storage="disk", clock="trio")
    assert config.replay_command() == (
        "python -m kraft.sim --seed 42 --voters 3 --observers 1 --storage disk --clock trio"
    )
    failure = SimulationFailure.at(config, "boom", 1, 1, [])
    assert str(failure).endswith("replay: " + config.replay_command())


def test_a_disk_seed_replays_from_the_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kraft.sim", "--seed", "11", "--storage", "disk"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    expected = simulate(11, storage="disk")
    assert f"seed 11: ok, {expected.events} events, {expected.end_ms}ms virtual" in result.stdout


#: The 1000-seed sweep in quarters: each quarter is its own test, so parallel
#: test workers share the sweep out (a quarter runs in its worker's process).
SWEEP_QUARTERS = 4


@pytest.mark.slow
@pytest.mark.parametrize("quarter", range(SWEEP_QUARTERS))
def test_thousand_disk_seed_sweep(quarter: int) -> None:
    """1000 seeded schedules on real files (one in ten with KIP-853 voter
    changes, one in ten a dynamic quorum), a quarter per test; every quarter
    must exercise crashes, torn files, repairs, snapshots and truncation."""
    seeds = range(quarter, 1000, SWEEP_QUARTERS)
    started = time.perf_counter()
    totals = sweep_totals([run_disk_seed(seed) for seed in seeds])
    missing = [k for k in MUST_HAPPEN if totals[k] == 0]
    assert not missing, f"the sweep never exercised {missing}"
    print(f"{len(seeds)} disk seeds in {time.perf_counter() - started:.0f}s: {dict(totals)}")
