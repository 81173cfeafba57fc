"""Crash safety: a real writer process is SIGKILLed mid-append, many times.
Reopening always yields a log that is a prefix of what was written, with
every fsynced (acknowledged) batch present."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraft.records.log import MetadataLog
from tests.records.crash_writer import CONFIG, epoch_of
from tests.records.helpers import value_for

WRITER = Path(__file__).with_name("crash_writer.py")


def _check(directory: Path, durable_end: int) -> MetadataLog:
    log = MetadataLog.open(directory, CONFIG)
    report = str(log.recovery_report)
    assert log.end_offset >= durable_end, f"acknowledged offsets lost: end {log.end_offset} < {durable_end}\n{report}"
    expected = log.start_offset
    for batch in log.iter_batches():
        assert batch.is_valid()
        assert batch.partition_leader_epoch == epoch_of(batch.base_offset), report
        assert log.epoch_for_offset(batch.base_offset) == batch.partition_leader_epoch, report
        for record in batch.records():
            assert record.offset == expected, report
            assert record.value == value_for(record.offset), report
            expected += 1
    assert expected == log.end_offset
    for snapshot in log.snapshot_ids():
        reader = log.open_snapshot(snapshot)
        assert reader is not None
        reader.contents()  # header, records and footer all intact
        reader.close()
    return log


def _run_crashes(tmp_path: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    directory = tmp_path / "__cluster_metadata-0"
    durable_end = 0
    for round_no in range(rounds):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(directory), str(seed * 1000 + round_no)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        target = rng.randint(1, 400)
        assert proc.stdout is not None
        while len(lines) < target:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        time.sleep(rng.uniform(0, 0.02))  # land the kill anywhere in the next operations
        os.kill(proc.pid, signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL, err
        complete = lines + rest.splitlines(keepends=True)
        for line in complete:
            if not line.endswith("\n") or not line.strip():
                continue  # cut off by the kill (a CI run saw a bare newline): not an acknowledgement
            kind, *values = line.split()
            if kind == "acked":
                durable_end = int(values[0])
            elif kind in ("truncating", "truncated"):
                # Offsets removed on purpose are not lost acknowledgements.
                durable_end = min(durable_end, int(values[0]))
        log = _check(directory, durable_end)
        log.close()
    assert durable_end > 0


def test_writer_killed_a_few_times(tmp_path: Path) -> None:
    _run_crashes(tmp_path, rounds=3, seed=1)


@pytest.mark.slow
def test_writer_killed_many_times(tmp_path: Path) -> None:
    _run_crashes(tmp_path, rounds=40, seed=7)
