"""``kraft shell --directory`` on the directory of a running node (issue 26):
it reads without taking or breaking the node's ``.lock`` (Kafka's shell
takes the lock and fails), and shows the latest snapshot and the segments
after it, with a NOTE that the last records may not be committed yet
(issue 33: stopping at the snapshot showed a quickstart node, which has
none past offset 0, as an empty image). Run while a real ``kraft node
start`` process appends."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kraft.dirlock import DirectoryLock, DirectoryLockedError, lock_holder
from kraft.image.history import DirectoryHistory
from tests.doctor.helpers import DynamicQuorum, leader_of
from tests.harness import cli
from tests.harness.poll import until


def shell(directory: Path, *commands: str) -> subprocess.CompletedProcess[str]:
    return cli.run("shell", "--directory", str(directory), *commands)


def test_a_running_node_s_directory_is_read_past_its_latest_snapshot(tmp_path: Path) -> None:
    q = DynamicQuorum(tmp_path, voters=[1], append_rate=40)  # no snapshot but the bootstrap one (offset 0)
    directory = q.dir(1)
    try:
        q.start(1)
        leader_of(q.ports, [1])
        pid = q.procs[1].proc.pid  # type: ignore[union-attr]
        until("records in the log", lambda: (DirectoryHistory(directory).coverage.log_end or 0) > 20, timeout_s=90)
        assert lock_holder(directory) == pid
        assert [s for s, _ in DirectoryHistory(directory).coverage.snapshots] == [0]
        for _ in range(3):  # the node keeps appending meanwhile
            done = shell(directory, "cat", "/image/provenance")
            assert done.returncode == 0, done.stderr
            assert "Traceback" not in done.stderr
            note = re.search(r"in use by process (\d+): read without locking it; its latest snapshot ends at "
                             r"offset 0, the log after it \(to offset (\d+)\) is read too, and its last records "
                             r"may not be committed yet", done.stderr)
            assert note is not None and int(note.group(1)) == pid, done.stderr
            shown = re.search(r"offset (\d+)", done.stdout)
            assert shown is not None, done.stdout
            # The image holds the segments after the snapshot (the node appends on meanwhile).
            assert int(shown.group(1)) > 20, (done.stdout, done.stderr)
            # The node still holds its lock, and still runs.
            assert q.procs[1].alive and lock_holder(directory) == pid
            try:
                DirectoryLock(directory).acquire()
            except DirectoryLockedError:
                pass
            else:
                raise AssertionError("the node's lock was lost")
    finally:
        q.stop()
    # Stopped: the directory is read whole, as Kafka's shell would.
    done = shell(directory, "cat", "/image/provenance")
    assert done.returncode == 0 and "in use by" not in done.stderr, done.stderr
