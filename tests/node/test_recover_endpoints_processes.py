"""``kraft storage recover-quorum --endpoints``, end to end with real
processes: a 3-voter dynamic quorum (KIP-853 ``--initial-controllers``)
commits records, stops, and comes back on other ports (its hosts "moved").
Its VotersRecord endpoints win over ``controller.quorum.bootstrap.servers``,
so it elects nobody. ``recover-quorum --endpoints`` on every stopped voter
(plan, ``--unsafe``, a second run that finds nothing to do), then a start:
a leader is elected, the committed records are where they were, and
DescribeQuorum shows the new endpoints, written through Raft by the leader
(Kafka's ``KafkaRaftClient``: a voter whose listeners changed sends
UpdateRaftVoter; a new leader records its own with its LeaderChange)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from kraft.records.endpoint_overrides import ENDPOINT_OVERRIDES_FILE
from kraft.records.state_files import random_kafka_uuid, uuid_to_kafka
from tests.harness import cli
from tests.harness.configs import format_node, write_configs
from tests.harness.poll import until
from tests.harness.processes import NodeProcess
from tests.node.quorum_status import describe_status
from tests.node.verify import assert_committed_everywhere, quorum_state, read_stored_log
from tests.ports import free_ports

#: Bound of each wait: ends a hung test, not a speed requirement.
HANG_S = 120


def _voters_line(status: str) -> str:
    return next((line for line in status.splitlines() if line.startswith("CurrentVoters:")), "")


def _has_endpoints(ports: dict[int, int]) -> bool:
    voters = _voters_line(describe_status(ports))
    return all(f"CONTROLLER://127.0.0.1:{p}" in voters for p in ports.values())


@pytest.mark.slow
def test_a_moved_dynamic_quorum_elects_again_after_recover_quorum_endpoints(tmp_path: Path) -> None:
    ids = [1, 2, 3]
    paths, old_ports = write_configs(tmp_path, ids)
    dirs = {i: random_kafka_uuid() for i in ids}
    spec = ",".join(f"{i}@127.0.0.1:{old_ports[i]}:{uuid_to_kafka(dirs[i])}" for i in ids)
    for i in ids:
        format_node(paths[i], "--initial-controllers", spec)
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=50) for i in ids}
    try:
        for p in procs.values():
            p.start()
        until("30 records committed", lambda: sum(len(p.acks()) for p in procs.values()) >= 30, timeout_s=HANG_S)
        for p in procs.values():
            p.stop_load()
        for p in procs.values():
            p.terminate()
        committed = dict(a for p in procs.values() for a in p.acks())

        # The hosts move: every listener and the bootstrap servers change port.
        new_ports = dict(zip(ids, free_ports(3)))
        assert not set(new_ports.values()) & set(old_ports.values())
        for i in ids:
            text = paths[i].read_text()
            for j in ids:
                text = text.replace(f"127.0.0.1:{old_ports[j]}", f"127.0.0.1:{new_ports[j]}")
            paths[i].write_text(text)
        for p in procs.values():
            p.start()
        # Stuck: the voters dial each other at the endpoints the log records.
        time.sleep(8)  # 16 election timeouts
        assert describe_status(new_ports) == ""
        assert all(quorum_state(tmp_path / f"node-{i}")[1] is None for i in ids)
        for p in procs.values():
            p.terminate()

        endpoints = ",".join(f"{i}@127.0.0.1:{new_ports[i]}" for i in ids)
        plan = cli.run("storage", "recover-quorum", "--config", str(paths[1]), "--endpoints", endpoints)
        assert plan.returncode == 0, plan.stderr
        assert f"voter 2 at CONTROLLER://127.0.0.1:{new_ports[2]} (the log records 127.0.0.1:{old_ports[2]})" \
            in plan.stdout
        assert "Nothing was changed" in plan.stdout
        partition = tmp_path / "node-1" / "__cluster_metadata-0"
        assert not (partition / ENDPOINT_OVERRIDES_FILE).exists()
        epochs = {i: quorum_state(tmp_path / f"node-{i}")[0] for i in ids}
        logs_before = {i: (tmp_path / f"node-{i}" / "__cluster_metadata-0" / "00000000000000000000.log").read_bytes()
                       for i in ids}
        for i in ids:
            done = cli.run("storage", "recover-quorum", "--config", str(paths[i]), "--endpoints", endpoints,
                           "--unsafe")
            assert done.returncode == 0, done.stderr
            assert "Done." in done.stdout
            again = cli.run("storage", "recover-quorum", "--config", str(paths[i]), "--endpoints", endpoints,
                            "--unsafe")
            assert again.returncode == 0 and again.stdout.startswith("Nothing to do"), again.stdout + again.stderr
            # The log is untouched: Raft, not the tool, writes the new VotersRecord.
            seg = tmp_path / f"node-{i}" / "__cluster_metadata-0" / "00000000000000000000.log"
            assert seg.read_bytes() == logs_before[i]
            assert quorum_state(tmp_path / f"node-{i}")[0] == epochs[i]
        assert len(list(tmp_path.glob("node-1.recover-quorum-backup-*"))) == 1

        for p in procs.values():
            p.start()
        until("DescribeQuorum showing every voter's new endpoint", lambda: _has_endpoints(new_ports), timeout_s=HANG_S)
        voters = _voters_line(describe_status(new_ports))
        assert sorted(int(i) for i in re.findall(r'"id": (\d+)', voters)) == ids
        assert not any(f":{p}\"" in voters or f":{p}," in voters for p in old_ports.values())
        for p in procs.values():
            p.terminate()
        assert_committed_everywhere(committed, {i: read_stored_log(tmp_path / f"node-{i}") for i in ids})
        # The tool refuses a running node's directory, naming the fix.
        procs[1].start()
        until("a refusal of the running node's directory",
              lambda: (partition.parent / ".lock").exists() and "is locked" in cli.run(
                  "storage", "recover-quorum", "--config", str(paths[1]), "--endpoints", "1@127.0.0.1:1").stderr,
              timeout_s=HANG_S)
    finally:
        for p in procs.values():
            p.terminate()
