"""KIP-853 / KIP-642 with real processes on 127.0.0.1: ``kraft node start``
controllers under the demo load (appending while they lead, logging every
record they saw committed), changed with the real ``kraft quorum`` tool.

* grow a --standalone quorum 1 -> 3 -> 5 voters (add-controller), shrink
  it back to 3 removing the leader (remove-controller);
* replace a voter whose disk was wiped: it comes back with a new directory
  id as an observer; add the new key, remove the old one;
* reassign (1, 2, 3) -> (4, 5, 6), the leader among the removed, while
  kill -9 hits random nodes and the tool itself; running the tool again
  finishes the job.

Afterwards every record any process acknowledged as committed is, at its
offset, in the log (or snapshot) of every voter, and describe shows the
target voters."""

from __future__ import annotations

import random
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kraft.messages.json_form import uuid_to_kafka
from tests.harness import cli
from tests.harness.configs import format_node, write_configs
from tests.harness.poll import until
from tests.harness.processes import NodeProcess
from tests.node.reconfig_cluster import directory_id
from tests.node.verify import assert_committed_everywhere, read_stored_log


def quorum(ports: dict[int, int], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    return cli.run("quorum", "--bootstrap-controller", bootstrap, *args, timeout=timeout)


def describe_voters(ports: dict[int, int]) -> list[int]:
    """The voter ids ``kraft quorum describe --status`` prints."""
    for _ in range(100):
        out = quorum(ports, "describe", "--status", timeout=30)
        if out.returncode == 0:
            line = next(l for l in out.stdout.splitlines() if l.startswith("CurrentVoters:"))
            return sorted(int(i) for i in re.findall(r'"id": (\d+)', line))
        time.sleep(0.2)
    raise AssertionError(f"describe keeps failing: {out.stderr}")


def wait_voters(ports: dict[int, int], expected: list[int], timeout_s: float = 60) -> None:
    until(f"voters {expected}", lambda: describe_voters(ports) == expected, timeout_s, interval_s=0.3,
          detail=lambda: f"voters now: {describe_voters(ports)}")


def add_controller(ports: dict[int, int], config: Path) -> str:
    out = quorum(ports, "--command-config", str(config), "add-controller")
    assert out.returncode == 0, out.stderr
    return out.stdout


def committed_acks(procs: dict[int, NodeProcess]) -> dict[int, bytes]:
    acks: dict[int, bytes] = {}
    for p in procs.values():
        for offset, value in p.acks():
            assert acks.setdefault(offset, value) == value, f"offset {offset} acknowledged as two records"
    return acks


def check_stored(procs: dict[int, NodeProcess], root: Path, voters: list[int]) -> None:
    """Every acknowledged record is on every final voter, where it was acknowledged."""
    acks = committed_acks(procs)
    assert len(acks) > 20, "the demo load barely ran"
    logs = {i: read_stored_log(root / f"node-{i}") for i in voters}
    assert_committed_everywhere(acks, logs)


def stop_all(procs: dict[int, NodeProcess]) -> None:
    for p in procs.values():
        p.stop_load()
    time.sleep(1.5)
    codes = {i: p.terminate() for i, p in procs.items()}
    assert all(code in (0, None) for code in codes.values()), (codes, {i: p.output()[-2000:] for i, p in procs.items()})


@pytest.mark.slow
def test_grow_one_three_five_then_shrink_removing_the_leader(tmp_path: Path) -> None:
    ids = [1, 2, 3, 4, 5]
    paths, ports = write_configs(tmp_path, ids)
    format_node(paths[1], "--standalone")
    for i in ids[1:]:
        format_node(paths[i])
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=50) for i in ids}
    try:
        for p in procs.values():
            p.start()
        wait_voters(ports, [1])
        for i in (2, 3):
            out = add_controller(ports, paths[i])
            assert out.startswith(f"Added controller {i} with directory id {uuid_to_kafka(directory_id(tmp_path, i))} "
                                  f"and endpoints: CONTROLLER://127.0.0.1:{ports[i]}")
        assert describe_voters(ports) == [1, 2, 3]
        for i in (4, 5):
            add_controller(ports, paths[i])
        assert describe_voters(ports) == [1, 2, 3, 4, 5]
        # Adding a voter again: Kafka's DUPLICATE_VOTER, one line, exit 1.
        again = quorum(ports, "--command-config", str(paths[5]), "add-controller")
        assert again.returncode == 1 and again.stderr.startswith("DUPLICATE_VOTER"), again.stderr
        assert len(again.stderr.strip().splitlines()) == 1
        # Shrink to three, the leader first among the removed.
        leader = leader_of(ports)
        for i in [leader] + [i for i in (1, 2, 3, 4, 5) if i != leader][:1]:
            out = quorum(ports, "remove-controller", "--controller-id", str(i),
                         "--controller-directory-id", uuid_to_kafka(directory_id(tmp_path, i)))
            assert out.returncode == 0, out.stderr
            # Kafka 4.4's line (the default; 4.0 and 4.1 put two spaces after "Removed").
            assert out.stdout == (f"Removed KRaft controller {i} with directory id "
                                  f"{uuid_to_kafka(directory_id(tmp_path, i))}\n")
        remaining = describe_voters(ports)
        assert len(remaining) == 3 and leader not in remaining
        # An unknown directory id: VOTER_NOT_FOUND; the zero uuid names no
        # directory at all: INVALID_REQUEST (both Kafka's answers).
        bad = quorum(ports, "remove-controller", "--controller-id", str(remaining[0]),
                     "--controller-directory-id", uuid_to_kafka(uuid.uuid4()))
        assert bad.returncode == 1 and bad.stderr.startswith("VOTER_NOT_FOUND"), bad.stderr
        zero = quorum(ports, "remove-controller", "--controller-id", str(remaining[0]),
                      "--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAA")
        assert zero.returncode == 1 and zero.stderr.startswith("INVALID_REQUEST"), zero.stderr
        time.sleep(1)
        stop_all(procs)
        check_stored(procs, tmp_path, remaining)
    finally:
        for p in procs.values():
            p.terminate()


def leader_of(ports: dict[int, int]) -> int:
    for _ in range(100):
        out = quorum(ports, "describe", "--status", timeout=30)
        if out.returncode == 0:
            return int(re.search(r"LeaderId:\s+(\d+)", out.stdout).group(1))  # type: ignore[union-attr]
        time.sleep(0.2)
    raise AssertionError(out.stderr)


def format_initial(paths: dict[int, Path], ports: dict[int, int], initial: list[int], tmp: Path) -> dict[int, str]:
    """``kraft storage format --initial-controllers`` for ``initial`` (each with
    a fresh ``kraft storage random-uuid`` directory id); the others without."""
    dirs = {}
    for i in initial:
        out = cli.run("storage", "random-uuid", check=True)
        dirs[i] = out.stdout.strip()
    controllers = ",".join(f"{i}@127.0.0.1:{ports[i]}:{dirs[i]}" for i in initial)
    for i, path in paths.items():
        if i in initial:
            format_node(path, "--initial-controllers", controllers)
        else:
            format_node(path)
    for i in initial:
        assert uuid_to_kafka(directory_id(tmp, i)) == dirs[i]
    return dirs


@pytest.mark.slow
def test_replace_a_voter_whose_disk_was_wiped(tmp_path: Path) -> None:
    """KIP-853's disk-failure recovery: the wiped voter restarts with a new
    directory id, as an observer; the old key is removed and the new added."""
    ids = [1, 2, 3]
    paths, ports = write_configs(tmp_path, ids)
    old = format_initial(paths, ports, ids, tmp_path)
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=50) for i in ids}
    try:
        for p in procs.values():
            p.start()
        wait_voters(ports, [1, 2, 3])
        victim = next(i for i in ids if i != leader_of(ports))
        time.sleep(1)
        procs[victim].kill()
        shutil.rmtree(tmp_path / f"node-{victim}")
        format_node(paths[victim])
        new_dir = uuid_to_kafka(directory_id(tmp_path, victim))
        assert new_dir != old[victim]
        procs[victim].start()
        # The new disk cannot be added while the old key holds the id.
        dup = quorum(ports, "--command-config", str(paths[victim]), "add-controller")
        assert dup.returncode == 1 and dup.stderr.startswith("DUPLICATE_VOTER"), dup.stderr
        out = quorum(ports, "remove-controller", "--controller-id", str(victim), "--controller-directory-id", old[victim])
        assert out.returncode == 0, out.stderr
        add_controller(ports, paths[victim])
        status = quorum(ports, "describe", "--status")
        assert f'"id": {victim}, "directoryId": "{new_dir}"' in status.stdout, status.stdout
        assert describe_voters(ports) == [1, 2, 3]
        time.sleep(1)
        stop_all(procs)
        check_stored(procs, tmp_path, ids)
    finally:
        for p in procs.values():
            p.terminate()


@pytest.mark.slow
def test_reassign_to_new_voters_while_nodes_and_the_tool_are_killed(tmp_path: Path) -> None:
    """KIP-642: (1, 2, 3) -> (4, 5, 6), the leader among the removed; kill -9
    hits a random node now and then, and the tool itself; the same command,
    run again, resumes until describe shows the target."""
    ids = [1, 2, 3, 4, 5, 6]
    paths, ports = write_configs(tmp_path, ids)
    format_initial(paths, ports, [1, 2, 3], tmp_path)
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=40) for i in ids}
    rng = random.Random(7)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports.values())
    command = [sys.executable, "-m", "kraft.cli", "quorum", "--bootstrap-controller", bootstrap, "reassign",
               "--voters", "4,5,6", "--state-file", str(tmp_path / "reassign.json"), "--timeout-ms", "60000"]
    for i in (4, 5, 6):
        command += ["--controller-config", str(paths[i])]
    tool_log = tmp_path / "tool.out"
    try:
        for p in procs.values():
            p.start()
        wait_voters(ports, [1, 2, 3])
        assert leader_of(ports) in (1, 2, 3)
        finished = False
        runs = 0
        kills: list[str] = []
        deadline = time.monotonic() + 150
        while not finished and time.monotonic() < deadline:
            runs += 1
            with open(tool_log, "a") as out:
                tool = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
            if runs == 1:
                time.sleep(rng.uniform(0.8, 1.5))
                if tool.poll() is None:
                    # kill -9 the tool mid-way; the next run resumes.
                    tool.send_signal(signal.SIGKILL)
                    tool.wait()
                    kills.append("tool")
                    continue
            if runs == 2:
                # kill -9 the leader, then a random node, each coming back,
                # while the tool works.
                time.sleep(0.3)
                for victim_id in (leader_of(ports), rng.choice(ids)):
                    procs[victim_id].kill()
                    kills.append(f"node {victim_id}")
                    time.sleep(rng.uniform(0.3, 1.0))
                    procs[victim_id].start()
            try:
                finished = tool.wait(timeout=90) == 0
            except subprocess.TimeoutExpired:
                tool.kill()
                tool.wait()
        assert "tool" in kills and any(k.startswith("node") for k in kills), kills
        output = tool_log.read_text()
        assert finished, output
        assert "Reassignment complete. CurrentVoters: [4:" in output
        assert describe_voters(ports) == [4, 5, 6]
        assert leader_of(ports) in (4, 5, 6)
        time.sleep(1.5)
        stop_all(procs)
        check_stored(procs, tmp_path, [4, 5, 6])
    finally:
        for p in procs.values():
            p.terminate()
