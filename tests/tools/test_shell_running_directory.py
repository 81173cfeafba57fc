"""``kraft shell --directory`` on the directory of a running node (issue 26):
it reads without taking or breaking the node's ``.lock`` (Kafka's shell
takes the lock and fails), and shows only what the files prove committed:
up to the latest snapshot, never the tail the node is appending. Run while
a real ``kraft node start`` process appends."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kraft.dirlock import DirectoryLock, DirectoryLockedError, lock_holder
from kraft.image.history import DirectoryHistory
from tests.doctor.helpers import DynamicQuorum, leader_of, poll


def shell(directory: Path, *commands: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraft.cli", "shell", "--directory", str(directory), *commands],
                          capture_output=True, text=True, timeout=120)


def test_a_running_node_s_directory_is_read_up_to_its_latest_snapshot(tmp_path: Path) -> None:
    q = DynamicQuorum(tmp_path, voters=[1], append_rate=40,
                      extra={"metadata.log.max.record.bytes.between.snapshots": "4000"})
    directory = q.dir(1)
    try:
        q.start(1)
        leader_of(q.ports, [1])
        pid = q.procs[1].proc.pid  # type: ignore[union-attr]
        poll("a snapshot past the bootstrap one",
             lambda: any(s > 0 for s, _ in DirectoryHistory(directory).coverage.snapshots))
        assert lock_holder(directory) == pid
        for _ in range(3):  # the node keeps appending and snapshotting meanwhile
            done = shell(directory, "cat", "/image/provenance")
            assert done.returncode == 0, done.stderr
            assert "Traceback" not in done.stderr
            note = re.search(r"in use by process (\d+): .* up to its latest snapshot \(offset (\d+)\)", done.stderr)
            assert note is not None and int(note.group(1)) == pid, done.stderr
            snapshot_end = int(note.group(2))
            shown = re.search(r"offset (\d+)", done.stdout)
            assert shown is not None, done.stdout
            # The image ends inside the snapshot: nothing of the tail after it.
            assert int(shown.group(1)) < snapshot_end, (done.stdout, snapshot_end)
            # The node still holds its lock, and still runs.
            assert q.procs[1].alive and lock_holder(directory) == pid
            try:
                DirectoryLock(directory).acquire()
            except DirectoryLockedError:
                pass
            else:
                raise AssertionError("the node's lock was lost")
        log_end = DirectoryHistory(directory).coverage.log_end
        assert log_end is not None and log_end >= snapshot_end  # there was a tail to leave out
    finally:
        q.stop()
    # Stopped: the directory is read whole, as Kafka's shell would.
    done = shell(directory, "cat", "/image/provenance")
    assert done.returncode == 0 and "in use by" not in done.stderr, done.stderr
