"""Acceptance: observers of a quorum of separate voter processes that write
real metadata records (tests/node/metadata_writer.py), through kill -9 of
the leader, snapshots and retention: the observer's image equals the image
rebuilt offline from the leader's directory at the same offset; a late
observer catches up from a snapshot to the same image; ``kraft observe
--follow --format jsonl`` prints every committed record once, in order, and
exits cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from kraft.programs.observer import DiscoveryError, discover, open_observer
from kraft.records.log import metadata_partition_dir
from kraft.image.metadata_source import image_from_directory
from tests.harness import cli
from tests.harness.configs import format_node, load, make_configs, write_configs
from tests.harness.poll import until_async
from tests.node.reconfig_cluster import add_voter, directory_id, remove_voter

REPO = Path(__file__).resolve().parents[2]

#: Small segments, snapshots every ~20 KB, retention that always applies:
#: the log start keeps moving, so a late observer needs FetchSnapshot.
SMALL_LOG = {
    "internal.metadata.log.segment.bytes": "8192",
    "metadata.max.retention.bytes": "1",
    "metadata.log.max.record.bytes.between.snapshots": "20000",
    "controller.quorum.append.linger.ms": "5",
}

#: Bounds that only end a hung test, never a speed requirement: on two
#: loaded cores the voter processes take tens of seconds to start, and the
#: writers (one committed operation at a time, tests/node/metadata_writer.py)
#: slow down with the machine -- the snapshots and retention the late
#: observer needs can take minutes.
HANG_S = 900


class Voters:
    def __init__(self, root: Path, dynamic: bool = False) -> None:
        self.root = root
        if dynamic:
            # KIP-853: node 1 formatted --standalone, 2 and 3 join with AddRaftVoter.
            self.paths, _ = write_configs(root, [1, 2, 3], extra=SMALL_LOG)
            format_node(self.paths[1], "--standalone")
            format_node(self.paths[2])
            format_node(self.paths[3])
        else:
            self.paths = make_configs(root, [1, 2, 3], extra=SMALL_LOG)
        self.ports = {i: load(p).listeners[0].port for i, p in self.paths.items()}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports.values())

    def start(self, node_id: int) -> None:
        out = open(self.root / f"voter-{node_id}.log", "ab")  # noqa: SIM115 - the child owns it
        self.procs[node_id] = subprocess.Popen(
            [sys.executable, "-m", "tests.node.metadata_writer", "--config", str(self.paths[node_id]),
             "--rate", "200"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def kill(self, node_id: int) -> None:
        self.procs[node_id].send_signal(signal.SIGKILL)
        self.procs[node_id].wait()

    def signal_all(self, signum: int) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signum)

    def stop(self) -> None:
        self.signal_all(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def log_dir(self, node_id: int) -> Path:
        return metadata_partition_dir(load(self.paths[node_id]).metadata_log_dir)


def _log_starts_after_zero(log_dir: Path) -> bool:
    """A snapshot exists and the segment at offset 0 is gone (retention ran)."""
    names = os.listdir(log_dir) if log_dir.exists() else []
    return any(n.endswith(".checkpoint") for n in names) and "00000000000000000000.log" not in names


async def _leader_and_hwm(voters: Voters) -> tuple[int, int]:
    """The leader and the high watermark, asked until a leader is known.
    ``discover`` gives up after 15 s without an answer; voter processes
    starting on a loaded machine may not listen by then, so it is asked
    again (the test's HANG_S bound ends a quorum that never comes up)."""
    async def known() -> tuple[int, int] | None:
        try:
            view = await discover([("127.0.0.1", p) for p in voters.ports.values()], timeout_ms=1000)
        except DiscoveryError:
            await trio.sleep(0.4)  # 0.5 s in all before asking again after a failed discovery
            return None
        return (view.leader_id, view.high_watermark) if view.leader_id is not None else None

    return await until_async("a leader", known, interval_s=0.1)


@pytest.mark.slow
async def test_observers_follow_a_process_quorum_through_kills_and_snapshots(tmp_path: Path) -> None:
    voters = Voters(tmp_path)
    for node_id in voters.paths:
        voters.start(node_id)
    cli_err = open(tmp_path / "cli-observer.err", "wb")  # noqa: SIM115
    lines: list[str] = []
    cli_observer: trio.Process | None = None
    waiting = ["the voters to start and elect a leader"]  # named if HANG_S ends the test
    try:
        with trio.fail_after(HANG_S):
            # The processes are up and elected before the CLI starts: a
            # `kraft observe` that finds no controller answering exits
            # (exit status 5), and voters starting on a loaded machine can
            # take longer than its discovery waits.
            await _leader_and_hwm(voters)
            cli_observer = await trio.lowlevel.open_process(
                [sys.executable, "-m", "kraft.cli", "observe", "--bootstrap-controller", voters.bootstrap,
                 "--data-dir", str(tmp_path / "cli-observer"), "--follow", "--format", "jsonl",
                 # Its raft story (leaders followed, snapshots installed) in
                 # cli-observer.err, for whoever reads a hang.
                 "--log-level", "INFO"],
                cwd=REPO, stdout=subprocess.PIPE, stderr=cli_err)

            async def read_cli() -> None:
                buffer = b""
                assert cli_observer.stdout is not None
                while chunk := await cli_observer.stdout.receive_some(65536):
                    buffer += chunk
                    *complete, buffer = buffer.split(b"\n")
                    lines.extend(c.decode() for c in complete)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read_cli)
                async with open_observer(voters.bootstrap, data_dir=tmp_path / "observer") as observer:
                    # Two kill -9 of whoever leads, the victim restarted each time.
                    for _ in range(2):
                        await trio.sleep(3)
                        waiting[0] = "a leader to kill -9"
                        leader_id, _ = await _leader_and_hwm(voters)
                        voters.kill(leader_id)
                        await trio.sleep(2)
                        voters.start(leader_id)
                    # The late observer must need a snapshot: wait (on a loaded
                    # machine the writers are slow) until every voter has
                    # snapshotted and deleted the log's first segment.
                    waiting[0] = "every voter to snapshot and delete its first segment"
                    await until_async(waiting[0], lambda: all(_log_starts_after_zero(voters.log_dir(i))
                                                              for i in voters.paths), interval_s=0.2)

                    async with open_observer(voters.bootstrap, data_dir=tmp_path / "late") as late:
                        voters.signal_all(signal.SIGUSR1)  # stop writing; the nodes keep running
                        await trio.sleep(1)
                        leader_id, hwm = await _leader_and_hwm(voters)
                        waiting[0] = f"the observers to reach offset {hwm - 1}"
                        image = await observer.wait_for_offset(hwm - 1)
                        late_image = await late.wait_for_offset(hwm - 1)
                        assert late.node.log.start_offset > 0  # it started from a snapshot
                        assert late_image == image

                    offline = image_from_directory(voters.log_dir(leader_id), up_to=image.offset)
                    assert offline == image
                    assert len(image.topics) >= 3 and image.offset > 150

                # The CLI observer saw every committed record once, in order.
                waiting[0] = f"kraft observe --follow to print offset {image.offset}"
                def printed() -> bool:
                    if lines and _covered_through(json.loads(lines[-1])) >= image.offset:
                        return True
                    assert cli_observer.poll() is None, f"kraft observe exited with {cli_observer.returncode}: " + (
                        tmp_path / "cli-observer.err").read_text()[-2000:]
                    return False

                await until_async(waiting[0], printed, interval_s=0.1)
                waiting[0] = "kraft observe --follow to exit on SIGINT"
                cli_observer.send_signal(signal.SIGINT)
                assert await cli_observer.wait() == 0
                nursery.cancel_scope.cancel()
    except trio.TooSlowError:
        # What the CLI printed, for whoever reads the failure (the voters'
        # and the observers' directories stay in tmp_path).
        (tmp_path / "cli-observer.jsonl").write_text("".join(f"{line}\n" for line in lines))
        _describe_quorum_at_hang(voters, tmp_path / "quorum-at-hang.txt")
        raise AssertionError(f"still waiting for {waiting[0]} after {HANG_S} s (a hang bound); the CLI's last "
                             f"lines (all in cli-observer.jsonl, its log in cli-observer.err, the leader's view "
                             f"of every replica in quorum-at-hang.txt): {lines[-3:]}") from None
    finally:
        voters.stop()
        if cli_observer is not None and cli_observer.returncode is None:
            cli_observer.kill()
            with trio.move_on_after(10):
                await cli_observer.wait()
        cli_err.close()

    changes = [json.loads(line) for line in lines if line]
    records = [c for c in changes if c.get("type") != "SNAPSHOT"]
    _assert_each_offset_once(changes)
    _assert_each_new_epoch_opens_with_a_leader_change(changes)
    assert all("data" in c for c in records), [c for c in records if "data" not in c][:3]  # each one decoded
    if len(records) == len(changes):
        # It read the log from offset 0, with no snapshot in between: it
        # printed every kind the load writes, and the first leader's
        # LeaderChange. (Started from a snapshot -- the leader may have
        # snapshotted and deleted the log start before the CLI's first Fetch
        # -- the records before the snapshot's end are in no record line.)
        types = {c["type"] for c in records}
        assert {"TOPIC_RECORD", "PARTITION_RECORD", "BEGIN_TRANSACTION_RECORD", "LEADER_CHANGE"} <= types
    assert os.path.exists(tmp_path / "cli-observer" / "meta.properties")


def _describe_quorum_at_hang(voters: Voters, out: Path) -> None:
    """The leader's view of every replica while the voters still run
    (``kraft quorum describe --replication``): whether an observer still
    fetches (its log end offset and last fetch time), and its node id
    (``node.id`` in its directory's meta.properties). Best effort: a hang
    report must not fail on it."""
    parts: list[str] = []
    for what in ("--status", "--replication"):
        try:
            done = cli.run("quorum", "--bootstrap-controller", voters.bootstrap, "describe", what, cwd=REPO,
                           timeout=60)
            parts.append(f"$ kraft quorum describe {what} (exit {done.returncode})\n{done.stdout}{done.stderr}")
        except (OSError, subprocess.TimeoutExpired) as e:
            parts.append(f"$ kraft quorum describe {what}: {e}\n")
    out.write_text("\n".join(parts))


def _covered_through(change: dict) -> int:
    """The last offset a line of ``kraft observe --follow --format jsonl``
    accounts for: a record's own offset, or for a SNAPSHOT line the offset
    before its end offset (the stream resumes at the end offset). A CLI that
    fell behind the leader's log start can end its output with a SNAPSHOT line
    (the leader's latest snapshot at its log end): that line covers the
    offsets awaited, it has no ``offset`` of its own."""
    if change.get("type") == "SNAPSHOT":
        return int(change["snapshot"]["endOffset"]) - 1
    return int(change["offset"])


def test_a_snapshot_line_accounts_for_the_offsets_below_its_end() -> None:
    """What the CLI's output is waited on with: a SNAPSHOT line at the end
    of the output covers every offset below its end offset (the wait once
    took only record lines, and would never end after a final SNAPSHOT)."""
    snapshot = {"snapshot": {"endOffset": 527, "epoch": 3}, "records": 520, "timestamp": 1, "type": "SNAPSHOT"}
    record = {"offset": 516, "epoch": 3, "timestamp": 1, "type": "NO_OP_RECORD", "version": 0, "data": {}}
    assert _covered_through(snapshot) == 526
    assert _covered_through(record) == 516
    _assert_each_offset_once([record, snapshot])


def _assert_each_offset_once(changes: list[dict]) -> None:
    """Every committed offset is covered exactly once, in order: by its own
    record line or by a SNAPSHOT line. An observer that falls behind the
    leader's log start (retention here is one byte) legitimately reloads from
    a snapshot; the stream then resumes at the snapshot's end offset, and a
    snapshot never moves the stream backwards (that would replay records)."""
    expected: int | None = None
    for change in changes:
        if change.get("type") == "SNAPSHOT":
            end = change["snapshot"]["endOffset"]
            assert expected is None or end >= expected, f"snapshot at {end} replays records from {expected}"
            expected = end
            continue
        offset = change["offset"]
        if expected is not None:
            assert offset == expected, f"record at {offset}, expected {expected}"
        expected = offset + 1
    assert expected is not None


def _assert_each_new_epoch_opens_with_a_leader_change(changes: list[dict]) -> None:
    """Between two record lines with no SNAPSHOT line between them (the
    records of consecutive offsets) the epoch never goes down, and where it
    goes up the line is the new leader's LeaderChange control record (Kafka's
    leader appends it first in its epoch, ``LeaderState.appendStartOfEpochControlRecords``).
    True whether the stream started at offset 0 or from a snapshot."""
    previous: dict | None = None
    for change in changes:
        if change.get("type") == "SNAPSHOT":
            previous = None
            continue
        if previous is not None and change["epoch"] != previous["epoch"]:
            assert change["epoch"] > previous["epoch"], f"epoch went back at offset {change['offset']}"
            assert change["type"] == "LEADER_CHANGE" and change.get("control"), \
                f"epoch {change['epoch']} opens at offset {change['offset']} with {change['type']}"
            assert change["data"]["leaderId"] >= 0
        previous = change


def test_a_new_epoch_in_the_stream_must_open_with_a_leader_change() -> None:
    """What the CLI's stream is held to, whether it began at offset 0 or
    from a snapshot: a SNAPSHOT line may skip epochs, consecutive records may not."""
    def record(offset: int, epoch: int, type_: str = "NO_OP_RECORD") -> dict:
        out = {"offset": offset, "epoch": epoch, "timestamp": 1, "type": type_, "version": 0, "data": {}}
        if type_ == "LEADER_CHANGE":
            out.update(control=True, data={"leaderId": 2})
        return out

    snapshot = {"snapshot": {"endOffset": 10, "epoch": 4}, "records": 9, "timestamp": 1, "type": "SNAPSHOT"}
    _assert_each_new_epoch_opens_with_a_leader_change(
        [snapshot, record(10, 6), record(11, 6), record(12, 7, "LEADER_CHANGE"), record(13, 7)])
    with pytest.raises(AssertionError, match="epoch 7 opens at offset 12 with NO_OP_RECORD"):
        _assert_each_new_epoch_opens_with_a_leader_change([record(11, 6), record(12, 7), record(13, 7)])
    with pytest.raises(AssertionError, match="epoch went back at offset 12"):
        _assert_each_new_epoch_opens_with_a_leader_change([record(11, 6), record(12, 5, "LEADER_CHANGE")])


async def _add(voters: Voters, node_id: int) -> None:
    from kraft.raft.errors import Errors

    while True:
        leader_id, _ = await _leader_and_hwm(voters)
        body = await add_voter(("127.0.0.1", voters.ports[leader_id]), node_id, directory_id(voters.root, node_id),
                               voters.ports[node_id])
        # DUPLICATE_VOTER: an earlier attempt whose answer timed out (on a
        # loaded machine the commit can outlast the request) went through.
        if body.error_code in (Errors.NONE, Errors.DUPLICATE_VOTER):
            return
        await trio.sleep(0.2)


@pytest.mark.slow
async def test_observer_follows_a_process_quorum_through_reconfiguration(tmp_path: Path) -> None:
    """A dynamic quorum of processes: grown from one controller to three while
    observed, its leader killed, then a voter removed; the observer's image
    equals the leader's files at the same offset."""
    from kraft.raft.errors import Errors

    voters = Voters(tmp_path, dynamic=True)
    for node_id in voters.paths:
        voters.start(node_id)
    try:
        with trio.fail_after(HANG_S):
            await _leader_and_hwm(voters)
            async with open_observer(f"127.0.0.1:{voters.ports[1]}", data_dir=tmp_path / "observer") as observer:
                assert observer.view is not None and observer.view.is_dynamic
                await trio.sleep(2)
                await _add(voters, 2)
                await _add(voters, 3)
                await trio.sleep(2)
                leader_id, _ = await _leader_and_hwm(voters)
                voters.kill(leader_id)
                await trio.sleep(2)
                voters.start(leader_id)
                await trio.sleep(2)
                leader_id, _ = await _leader_and_hwm(voters)
                victim = next(i for i in (3, 2, 1) if i != leader_id)
                while True:
                    leader_id, _ = await _leader_and_hwm(voters)
                    body = await remove_voter(("127.0.0.1", voters.ports[leader_id]), victim,
                                              directory_id(voters.root, victim))
                    # VOTER_NOT_FOUND: an earlier attempt whose answer timed
                    # out (the commit outlasted the request) went through.
                    if body.error_code in (Errors.NONE, Errors.VOTER_NOT_FOUND):
                        break
                    await trio.sleep(0.2)
                await trio.sleep(2)
                voters.signal_all(signal.SIGUSR1)
                await trio.sleep(1)
                leader_id, hwm = await _leader_and_hwm(voters)
                image = await observer.wait_for_offset(hwm - 1)
                assert victim not in observer.node.raft_driver.core.voters.voter_ids
                assert len(observer.node.raft_driver.core.voters.voter_ids) == 2
                offline = image_from_directory(voters.log_dir(leader_id), up_to=image.offset)
                assert offline == image and len(image.topics) >= 3
    finally:
        voters.stop()
