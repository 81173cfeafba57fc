"""A corrupt batch in the middle of a voter's segment, end to end with real
processes: the node refuses to start (recovery never truncates valid data,
``records/recovery.py``) with ONE line naming the file, the byte position,
the offset and the commands that fix it; running exactly those commands
leaves a healthy quorum (tests/node/remedy_following.py: every voter a
voter, nobody listed twice, doctor clean).

Three quorums, three remedies, each chosen from the log
(``kraft/node/remedies.py``): a dynamic quorum and a static quorum upgraded
to kraft.version 1 (KIP-853: a fresh directory, ``remove-controller`` of the
old directory id, ``add-controller`` of the new one; Kafka's
``KafkaRaftClient`` reads the voter set from the VotersRecord whatever
``controller.quorum.voters`` says, ``KRaftControlRecordStateMachine``), and a
static quorum at kraft.version 0 (format again and refetch: the voters are
ids only, ``QuorumConfig.parseVoterConnections``)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraft.errors import EXIT_STORAGE
from kraft.records.state_files import MetaProperties, random_kafka_uuid, uuid_to_kafka
from tests.harness import cli
from tests.harness.configs import format_node, make_configs, write_configs
from tests.harness.poll import until
from tests.harness.processes import NodeProcess
from tests.node.quorum_status import describe_status
from tests.node.remedy_following import (HANG_S, Operator, commands_of, corrupt_middle_batch, replication_rows,
                                         wait_healthy)

FAST = {"controller.quorum.election.timeout.ms": "500", "controller.quorum.fetch.timeout.ms": "1000"}


@contextlib.contextmanager
def _running(tmp_path: Path, paths: dict[int, Path]) -> Iterator[tuple[dict[int, NodeProcess], Operator]]:
    """The voters as real processes under the demo load, and the operator
    who follows the remedy; everything they started is stopped at the end."""
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=100) for i in paths}
    operator = Operator(tmp_path)
    try:
        for p in procs.values():
            p.start()
        yield procs, operator
    finally:
        operator.close()
        for p in procs.values():
            p.terminate()


def _static_quorum(tmp_path: Path) -> tuple[dict[int, Path], dict[int, int], str]:
    """Voters 1-3 of a static quorum (controller.quorum.voters), formatted:
    their configs, controller ports and the bootstrap list."""
    paths = make_configs(tmp_path, [1, 2, 3], extra=FAST)
    ports = {i: int(re.search(r"CONTROLLER://127\.0\.0\.1:(\d+)", p.read_text()).group(1))  # type: ignore[union-attr]
             for i, p in paths.items()}
    return paths, ports, ",".join(f"127.0.0.1:{p}" for p in ports.values())


def _upgrade_to_kraft_version_1(operator: Operator, bootstrap: str) -> None:
    """The README's upgrade, once every voter told the leader it supports 1."""
    until("kraft.version upgraded to 1",
          lambda: operator.kraft("features", "--bootstrap-controller", bootstrap, "upgrade",
                                 "--feature", "kraft.version=1").returncode == 0, timeout_s=HANG_S)


def _acked(procs: dict[int, NodeProcess]) -> int:
    return sum(1 for p in procs.values() for _ in p.acks())


def _refused_remedy(operator: Operator, config: Path, segment: Path, position: int) -> str:
    """``kraft node start`` on the damaged directory: exit 4, one line."""
    refused = cli.run("node", "start", "-c", str(config), env=operator.env)
    assert refused.returncode == EXIT_STORAGE
    lines = [line for line in refused.stderr.splitlines() if not line.startswith("[")]
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    line = lines[0]
    m = re.search(rf"corrupt log in {re.escape(str(segment))} at byte (\d+) \(offset (\d+)\)", line)
    assert m is not None, line
    assert int(m.group(1)) <= position  # the batch holding the flipped byte starts at or before it
    assert int(m.group(2)) > 0
    return line


def _break_node_3(tmp_path: Path, procs: dict[int, NodeProcess], operator: Operator, config: Path) -> str:
    """Enough committed batches that the middle of node 3's segment is
    followed by valid ones; then node 3 stops, a byte in that middle flips,
    and the remedy line ``kraft node start`` prints."""
    until("300 records committed", lambda: _acked(procs) > 300, timeout_s=HANG_S)
    procs[3].terminate()
    segment = tmp_path / "node-3" / "__cluster_metadata-0" / "00000000000000000000.log"
    return _refused_remedy(operator, config, segment, corrupt_middle_batch(segment))


def _follow_the_replacement(tmp_path: Path, operator: Operator, line: str, ports: dict[int, int],
                            old_dir: str) -> str:
    """The KIP-853 replacement, command by command: returns the new directory id."""
    commands = commands_of(line)
    quorum = commands[3].split()[1]  # `kraft quorum` is `kraft metadata-quorum`
    assert quorum in ("quorum", "metadata-quorum") and [c.split()[:2] for c in commands] == [
        ["mv", str(tmp_path / "node-3")], ["kraft", "storage"], ["kraft", "node"],
        ["kraft", quorum], ["kraft", quorum]], commands
    assert f"--controller-directory-id {old_dir}" in commands[3]
    live = {i: ports[i] for i in (1, 2)}
    new_dir: list[str] = []

    def caught_up_as_observer() -> None:
        meta = MetaProperties.read(tmp_path / "node-3" / "meta.properties")
        assert meta.directory_id is not None
        new_dir.append(uuid_to_kafka(meta.directory_id))
        until("the new directory of node 3 seen as an observer",
              lambda: f'{{"id": 3, "directoryId": "{new_dir[0]}"' in describe_status(live, kraft=["kraft"],
                                                                                     env=operator.env), timeout_s=HANG_S)
    operator.follow(commands, caught_up_as_observer)
    assert new_dir and new_dir[0] != old_dir
    return new_dir[0]


def _assert_voters(operator: Operator, ports: dict[int, int], node3_dir: str, gone: str) -> None:
    status = describe_status(ports, kraft=["kraft"], env=operator.env)
    voters = next(line for line in status.splitlines() if line.startswith("CurrentVoters:"))
    assert f'"id": 3, "directoryId": "{node3_dir}"' in voters, voters
    assert gone not in voters
    assert sorted(int(i) for i in re.findall(r'"id": (\d+)', voters)) == [1, 2, 3]


@pytest.mark.slow
def test_a_voter_with_a_corrupt_batch_mid_log_is_replaced_by_the_command_it_names(tmp_path: Path) -> None:
    ids = [1, 2, 3]
    paths, ports = write_configs(tmp_path, ids)
    dirs = {i: random_kafka_uuid() for i in ids}
    spec = ",".join(f"{i}@127.0.0.1:{ports[i]}:{uuid_to_kafka(dirs[i])}" for i in ids)
    for i in ids:
        format_node(paths[i], "--initial-controllers", spec)
    with _running(tmp_path, paths) as (procs, operator):
        line = _break_node_3(tmp_path, procs, operator, paths[3])
        assert "Node 3 is a voter of the log's voter set (1, 2, 3; kraft.version 1)" in line, line
        new_dir = _follow_the_replacement(tmp_path, operator, line, ports, uuid_to_kafka(dirs[3]))
        _assert_voters(operator, ports, new_dir, uuid_to_kafka(dirs[3]))
        wait_healthy(operator, ports, paths)
        assert (tmp_path / "node-3.corrupt" / "__cluster_metadata-0").is_dir()  # kept for inspection


def _doctor_fix(operator: Operator, config: Path) -> str:
    """The fix ``kraft doctor --config`` gives for the damaged directory."""
    out = operator.kraft("doctor", "--config", str(config))
    assert out.returncode == 1, out.stdout + out.stderr
    found = [line for line in out.stdout.splitlines() if line.startswith("ERROR   corrupt-batch:")]
    assert len(found) == 1, out.stdout
    return found[0].split(" fix: ", 1)[1]


@pytest.mark.slow
@pytest.mark.parametrize("adviser", ["node start", "doctor"])
def test_a_static_quorum_upgraded_to_kraft_version_1_gets_the_replacement_not_the_refetch(
        tmp_path: Path, adviser: str) -> None:
    """issue 33: ``dynamic = not config.voters`` gave this voter the static
    remedy; followed, node 3 came back an observer with a new directory id,
    listed twice, the quorum one voter short. ``kraft doctor``'s fix for the
    same directory is followed the same way."""
    paths, ports, bootstrap = _static_quorum(tmp_path)
    with _running(tmp_path, paths) as (procs, operator):
        _upgrade_to_kraft_version_1(operator, bootstrap)
        upgraded_at = _acked(procs)
        # The VotersRecord then sits well before the middle of the segment.
        until("records after the upgrade", lambda: _acked(procs) > 4 * upgraded_at, timeout_s=HANG_S)
        old_dir = MetaProperties.read(tmp_path / "node-3" / "meta.properties").directory_id
        assert old_dir is not None
        line = _break_node_3(tmp_path, procs, operator, paths[3])
        assert "Node 3 is a voter of the log's voter set (1, 2, 3; kraft.version 1)" in line, line
        if adviser == "doctor":
            line = _doctor_fix(operator, paths[3])
        assert "--no-initial-controllers" not in line  # the format this config takes (controller.quorum.voters)
        new_dir = _follow_the_replacement(tmp_path, operator, line, ports, uuid_to_kafka(old_dir))
        _assert_voters(operator, ports, new_dir, uuid_to_kafka(old_dir))
        wait_healthy(operator, ports, paths)


@pytest.mark.slow
def test_a_static_voter_at_kraft_version_0_refetches_the_log_into_a_fresh_directory(tmp_path: Path) -> None:
    paths, ports, _ = _static_quorum(tmp_path)
    with _running(tmp_path, paths) as (procs, operator):
        line = _break_node_3(tmp_path, procs, operator, paths[3])
        assert "This node is a voter of a static quorum (one voter at a time): refetch the log" in line, line
        commands = commands_of(line)
        assert [c.split()[:3] for c in commands] == [
            ["mv", str(tmp_path / "node-3"), str(tmp_path / "node-3.corrupt")],
            ["kraft", "storage", "format"], ["kraft", "node", "start"]], commands
        operator.follow(commands, lambda: None)
        wait_healthy(operator, ports, paths)


@pytest.mark.slow
def test_doctor_s_fix_mends_the_quorum_the_old_static_remedy_left(tmp_path: Path) -> None:
    """issue 33's state: an upgraded static quorum's voter re-formatted as the
    static remedy said comes back an observer with a new directory id, the
    quorum one voter short. ``kraft doctor --config`` names it
    (directory-id-mismatch) and its fix, run as printed, gives the voter back."""
    paths, ports, bootstrap = _static_quorum(tmp_path)
    with _running(tmp_path, paths) as (procs, operator):
        _upgrade_to_kraft_version_1(operator, bootstrap)
        procs[3].terminate()
        # What the static remedy said, before issue 33.
        cluster = MetaProperties.read(tmp_path / "node-3" / "meta.properties").cluster_id
        operator.follow([f"mv {tmp_path / 'node-3'} {tmp_path / 'node-3.old'}",
                         f"kraft storage format -c {paths[3]} -t {cluster}", f"kraft node start -c {paths[3]}"],
                        lambda: until("node 3 fetching as an observer",
                                      lambda: any(r[0] == "3" and r[-1] == "Observer" for r in replication_rows(
                                          operator, bootstrap)), timeout_s=HANG_S))
        out = operator.kraft("doctor", "--config", str(paths[3]))
        assert out.returncode == 1, out.stdout + out.stderr
        [finding] = [line for line in out.stdout.splitlines() if line.startswith("ERROR   directory-id-mismatch:")]
        fix = finding.split(" fix: ", 1)[1]
        commands = commands_of(fix)
        assert [c.split()[:2] for c in commands] == [["kraft", "quorum"]] * 2, fix
        operator.follow(commands, lambda: None)
        wait_healthy(operator, ports, paths)
