"""A corrupt batch in the middle of a voter's segment, end to end with real
processes: the node refuses to start (recovery never truncates valid data,
``records/recovery.py``) with ONE line naming the file, the byte position,
the offset and the commands that fix it; running exactly those commands
(KIP-853: a fresh directory, ``remove-controller`` of the old directory id,
``add-controller`` of the new one) gives the quorum its third voter back."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.errors import EXIT_STORAGE
from kraft.records.state_files import MetaProperties, random_kafka_uuid, uuid_to_kafka
from tests.node.procs import NodeProcess
from tests.node.quorum_status import describe_status, wait_for
from tests.node.reconfig_cluster import format_node, write_configs

#: Bound of each wait: ends a hung test, not a speed requirement.
HANG_S = 90


def _kraft_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a `kraft` that is this checkout, as an operator's shell has it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "kraft"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kraft.cli "$@"\n')
    shim.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def _corrupt_middle_batch(segment: Path) -> int:
    """Flip a byte inside a batch in the middle of the segment (its CRC then
    fails, and CRC-valid batches follow it): the byte position changed."""
    data = bytearray(segment.read_bytes())
    position = len(data) // 2
    data[position] ^= 0xFF
    segment.write_bytes(bytes(data))
    return position


@pytest.mark.slow
def test_a_voter_with_a_corrupt_batch_mid_log_is_replaced_by_the_command_it_names(tmp_path: Path) -> None:
    env = _kraft_env(tmp_path)

    def status_of(ports: dict[int, int]) -> str:  # the operator's `kraft` on PATH, as the remedy commands run
        return describe_status(ports, kraft=["kraft"], env=env)
    ids = [1, 2, 3]
    paths, ports = write_configs(tmp_path, ids)
    dirs = {i: random_kafka_uuid() for i in ids}
    spec = ",".join(f"{i}@127.0.0.1:{ports[i]}:{uuid_to_kafka(dirs[i])}" for i in ids)
    for i in ids:
        format_node(paths[i], "--initial-controllers", spec)
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=100) for i in ids}
    replacement: subprocess.Popen[bytes] | None = None
    try:
        for p in procs.values():
            p.start()
        # Enough committed batches that the middle of node 3's segment is
        # followed by valid ones.
        wait_for(lambda: sum(1 for p in procs.values() for _ in p.acks()) > 300, "300 records committed", timeout_s=HANG_S)
        procs[3].terminate()
        segment = tmp_path / "node-3" / "__cluster_metadata-0" / "00000000000000000000.log"
        position = _corrupt_middle_batch(segment)
        refused = subprocess.run(["kraft", "node", "start", "-c", str(paths[3])], capture_output=True, text=True,
                                 env=env, timeout=120)
        assert refused.returncode == EXIT_STORAGE
        lines = [line for line in refused.stderr.splitlines() if not line.startswith("[")]
        assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
        line = lines[0]
        m = re.search(rf"corrupt log in {re.escape(str(segment))} at byte (\d+) \(offset (\d+)\)", line)
        assert m is not None, line
        assert int(m.group(1)) <= position  # the batch holding the flipped byte starts at or before it
        assert int(m.group(2)) > 0
        # Run the commands the line names, in order.
        commands = re.findall(r"`([^`]+)`", line)
        assert [c.split()[:2] for c in commands[:5]] == [
            ["mv", str(tmp_path / "node-3")], ["kraft", "storage"], ["kraft", "node"],
            ["kraft", "metadata-quorum"], ["kraft", "metadata-quorum"]], commands
        for command in commands[:2]:
            done = subprocess.run(shlex.split(command), capture_output=True, text=True, env=env, timeout=120)
            assert done.returncode == 0, (command, done.stderr)
        out = tmp_path / "replacement.out"
        with open(out, "wb") as sink:
            replacement = subprocess.Popen(shlex.split(commands[2]), stdout=sink, stderr=subprocess.STDOUT, env=env)
        new_dir = MetaProperties.read(tmp_path / "node-3" / "meta.properties").directory_id
        assert new_dir is not None and new_dir != dirs[3]
        live = {i: ports[i] for i in (1, 2)}
        wait_for(lambda: f'"id": 3, "directoryId": "{uuid_to_kafka(new_dir)}"' in status_of(live)
                 or f'{{"id": 3, "directoryId": "{uuid_to_kafka(new_dir)}"}}' in status_of(live),
                 "the new directory of node 3 seen as an observer", timeout_s=HANG_S)
        for command in commands[3:5]:
            done = subprocess.run(shlex.split(command), capture_output=True, text=True, env=env, timeout=120)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
        status = status_of(live)
        voters = next(l for l in status.splitlines() if l.startswith("CurrentVoters:"))
        assert f'"id": 3, "directoryId": "{uuid_to_kafka(new_dir)}"' in voters
        assert uuid_to_kafka(dirs[3]) not in voters
        assert sorted(int(i) for i in re.findall(r'"id": (\d+)', voters)) == [1, 2, 3]
        assert (tmp_path / "node-3.corrupt" / "__cluster_metadata-0").is_dir()  # kept for inspection
    finally:
        if replacement is not None:
            replacement.send_signal(signal.SIGTERM)
            try:
                replacement.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replacement.kill()
                replacement.wait()
        for p in procs.values():
            p.terminate()
