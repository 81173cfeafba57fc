"""``kraft quorum`` (tools/quorum.py), Kafka's kafka-metadata-quorum.sh:
Kafka's output layout from Kafka's own DescribeQuorum answer, the command
run as a real subprocess against real nodes (and checked against
kafka-python's admin client), and every way it can fail -- each with one
line on stderr, a non-zero exit and a bounded wait."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.kafka_release import RELEASES
from kraft.node.node import KraftNode
from kraft.admin_client.admin import QuorumInfo, ReplicaInfo, quorum_info
from kraft.tools.quorum import ToolError, format_replication, format_status, quorum_group
from kraft.wire.codec import decode_response
from kraft.wire.framing import unframe
from tests.conftest import fixture_path
from tests.harness import cli
from tests.harness.configs import CLUSTER_ID, load, make_configs
from tests.harness.poll import until_async

HOST = "127.0.0.1"
VOTERS = [1, 2, 3]
OBSERVER = 9


# ---------------------------------------------------------------- Kafka's layout, from Kafka's own answer


def _golden_quorum() -> tuple[str, QuorumInfo, dict[str, Any]]:
    """Kafka's DescribeCluster v1 and DescribeQuorum v2 answers to
    kafka-metadata-quorum.sh (golden frames in fixtures/wire), as the tool reads them."""
    path = fixture_path("wire", "kafka-java-frames.jsonl")
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cluster = next(f for f in frames if f["api"] == "DESCRIBE_CLUSTER" and f["direction"] == "response")
    quorum = next(f for f in frames if f["api"] == "DESCRIBE_QUORUM" and f["direction"] == "response")
    body = decode_response(unframe(bytes.fromhex(quorum["frameHex"])), 55, 2).body
    return cluster["kafkaDecoded"]["body"]["clusterId"], quorum_info(body), quorum["kafkaDecoded"]["body"]


def test_status_of_kafkas_own_quorum_is_printed_as_kafka_prints_it() -> None:
    cluster_id, info, kafka = _golden_quorum()
    p = kafka["topics"][0]["partitions"][0]
    voters = p["currentVoters"]
    leader = next(v for v in voters if v["replicaId"] == p["leaderId"])
    # Every voter is at the same offset: Stream.min picks the first voter,
    # which is not the leader, so the lag time is the difference of the
    # caught-up times (MetadataQuorumCommand.handleDescribeStatus).
    assert voters[0]["replicaId"] != p["leaderId"] and len({v["logEndOffset"] for v in voters}) == 1
    lag_time = leader["lastCaughtUpTimestamp"] - voters[0]["lastCaughtUpTimestamp"]
    ports = {n["nodeId"]: n["listeners"][0]["port"] for n in kafka["nodes"]}
    expected = (
        f"ClusterId:              {cluster_id}\n"
        f"LeaderId:               {p['leaderId']}\n"
        f"LeaderEpoch:            {p['leaderEpoch']}\n"
        f"HighWatermark:          {p['highWatermark']}\n"
        "MaxFollowerLag:         0\n"
        f"MaxFollowerLagTimeMs:   {lag_time}\n"
        "CurrentVoters:          ["
        + ", ".join(f'{{"id": {i}, "directoryId": null, "endpoints": ["CONTROLLER://127.0.0.1:{ports[i]}"]}}'
                    for i in (1, 2, 3))
        + "]\n"
        "CurrentObservers:       []\n"
    )
    # Kafka 4.0's Node.toString: "directoryId": null; 4.1 (the default) leaves it out.
    assert format_status(cluster_id, info, RELEASES["4.0.0"]) == expected
    assert format_status(cluster_id, info) == expected.replace('"directoryId": null, ', "")


def test_replication_of_kafkas_own_quorum_is_kafkas_table() -> None:
    _, info, kafka = _golden_quorum()
    p = kafka["topics"][0]["partitions"][0]
    by_id = {v["replicaId"]: v for v in p["currentVoters"]}
    order = [(p["leaderId"], "Leader")] + [(i, "Follower") for i in by_id if i != p["leaderId"]]
    # ToolsUtils.prettyPrintTable: each cell padded to the widest in its
    # column, every cell (the last too) followed by a tab.
    lines = ["NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t"]
    for node_id, status in order:
        v = by_id[node_id]
        lines.append(f"{node_id}     \tAAAAAAAAAAAAAAAAAAAAAA\t{v['logEndOffset']:<12}\t0  \t"
                     f"{v['lastFetchTimestamp']:<18}\t{v['lastCaughtUpTimestamp']:<21}\t{status:<8}\t")
    assert format_replication(info) == "".join(line + "\n" for line in lines)


def _info(voters: list[ReplicaInfo], observers: list[ReplicaInfo] = (), leader: int = 1) -> QuorumInfo:
    return QuorumInfo(leader, 4, 100, tuple(voters), tuple(observers), {})


def test_human_readable_times_are_ms_ago_and_unknown_times_stay_minus_one() -> None:
    now = 1_700_000_010_000
    d = uuid.UUID("5bd55abf-76d2-47f6-830f-518e560c573e")
    info = _info([ReplicaInfo(1, uuid.UUID(int=0), 100, now - 5, now - 5),
                  ReplicaInfo(2, uuid.UUID(int=0), 90, None, None)],
                 [ReplicaInfo(9, d, 80, now - 1234, now - 60_000)])
    table = format_replication(info, human_readable=True, now_ms=lambda: now).splitlines()
    assert [row.split("\t") for row in table] == [
        ["NodeId", "DirectoryId           ", "LogEndOffset", "Lag", "LastFetchTimestamp",
         "LastCaughtUpTimestamp", "Status  ", ""],
        ["1     ", "AAAAAAAAAAAAAAAAAAAAAA", "100         ", "0  ", "5 ms ago          ",
         "5 ms ago             ", "Leader  ", ""],
        ["2     ", "AAAAAAAAAAAAAAAAAAAAAA", "90          ", "10 ", "-1                ",
         "-1                   ", "Follower", ""],
        ["9     ", "W9Vav3bSR_aDD1GOVgxXPg", "80          ", "20 ", "1234 ms ago       ",
         "60000 ms ago         ", "Observer", ""],
    ]
    status = format_status("c", info).splitlines()
    # The most lagging voter (2) has no caught-up time: -1; the observer
    # shows its directory id and no endpoints.
    assert status[4:] == ["MaxFollowerLag:         10", "MaxFollowerLagTimeMs:   -1",
                          'CurrentVoters:          [{"id": 1}, {"id": 2}]',
                          'CurrentObservers:       [{"id": 9, "directoryId": "W9Vav3bSR_aDD1GOVgxXPg"}]']


def test_a_lone_leader_has_no_lag_and_ipv6_endpoints_are_bracketed() -> None:
    info = QuorumInfo(1, 1, 7, (ReplicaInfo(1, uuid.UUID(int=0), 7, 5, 5),), (), {1: (("CONTROLLER", "::1", 9093),)})
    assert format_status("c", info).splitlines()[4:7] == [
        "MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0",
        'CurrentVoters:          [{"id": 1, "endpoints": ["CONTROLLER://[::1]:9093"]}]']


def test_a_timestamp_from_the_future_is_kafkas_clock_drift_error() -> None:
    info = _info([ReplicaInfo(1, uuid.UUID(int=0), 1, 2_000, 2_000)])
    with pytest.raises(ToolError, match="possible drift in system clock.\nCurrent timestamp is 1000, "
                                        "last fetch timestamp is 2000"):
        format_replication(info, human_readable=True, now_ms=lambda: 1_000)


def test_a_leader_missing_from_the_voters_is_a_clear_error() -> None:
    info = _info([ReplicaInfo(2, uuid.UUID(int=0), 1, 1, 1)], leader=1)
    with pytest.raises(ToolError, match="leader 1 is not among the current voters"):
        format_status("c", info)


# ---------------------------------------------------------------- the command, against real nodes


async def kraft_quorum(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``kraft quorum ARGS`` as a real subprocess. The bound only ends a
    hung command (generous: a CLI start on 2 loaded cores can take seconds);
    no test asserts how long a command took."""
    with trio.fail_after(120):
        return await cli.run_async("quorum", *args)


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], contains: str, status: int = 1) -> None:
    err = result.stderr.decode()
    assert result.returncode == status, err
    assert contains in err
    assert "Traceback" not in err and result.stdout == b""
    if status == 1:
        assert err.count("\n") == 1, err


@asynccontextmanager
async def running(paths: dict[int, Path], ids: list[int]) -> AsyncIterator[dict[int, KraftNode]]:
    async with trio.open_nursery() as nursery:
        nodes = {i: KraftNode(load(paths[i])) for i in ids}
        for node in nodes.values():
            await nursery.start(node.run)
        yield nodes
        nursery.cancel_scope.cancel()


async def settled_leader(nodes: dict[int, KraftNode], observers: int) -> int:
    """Wait until a leader has heard from every voter and ``observers``
    observers; its id."""
    def heard_from_all() -> int | None:
        for i, node in nodes.items():
            if node.role == "leader":
                d = node.raft_driver.core.describe_quorum(0)  # type: ignore[union-attr]
                if (d is not None and d.high_watermark > 0 and all(v.log_end_offset >= 0 for v in d.voters)
                        and len(d.observers) == observers):
                    return i
        return None

    return await until_async(f"a leader that heard from every voter and {observers} observers", heard_from_all,
                             interval_s=0.02)


def _kafka_python_view(bootstrap: str) -> tuple[dict[str, Any], dict[str, Any]]:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, bootstrap_timeout_ms=10_000, request_timeout_ms=5_000)
    try:
        return admin.describe_cluster(), admin.describe_metadata_quorum()
    finally:
        admin.close()


def _parse_status(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines())


async def test_describe_agrees_with_kafka_python_on_leader_epoch_voters_and_observers(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, VOTERS, observers=[OBSERVER])
    with trio.fail_after(90):
        async with running(paths, [*VOTERS, OBSERVER]) as nodes:
            leader = await settled_leader(nodes, observers=1)
            ports = {i: n.ports["CONTROLLER"] for i, n in nodes.items()}
            follower = next(i for i in VOTERS if i != leader)
            bootstrap = ",".join(f"{HOST}:{ports[i]}" for i in VOTERS)

            status = await kraft_quorum("--bootstrap-controller", f"{HOST}:{ports[follower]}", "describe", "--status")
            assert status.returncode == 0, status.stderr
            fields = _parse_status(status.stdout.decode())
            assert list(fields) == ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
                                    "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"]
            assert fields["ClusterId"].strip() == CLUSTER_ID
            assert int(fields["LeaderId"]) == leader
            voters = json.loads(fields["CurrentVoters"])
            observers = json.loads(fields["CurrentObservers"])
            assert voters == [{"id": i, "endpoints": [f"CONTROLLER://{HOST}:{ports[i]}"]}
                              for i in VOTERS]
            assert [o["id"] for o in observers] == [OBSERVER] and "endpoints" not in observers[0]
            # As Kafka 4.0.0 printed it: the static voters' "directoryId": null.
            as_40 = await kraft_quorum("--kafka-version", "4.0", "--bootstrap-controller", f"{HOST}:{ports[follower]}",
                                       "describe", "--status")
            assert as_40.returncode == 0, as_40.stderr
            assert [v["directoryId"] for v in json.loads(_parse_status(as_40.stdout.decode())["CurrentVoters"])] \
                == [None] * len(VOTERS)

            replication = await kraft_quorum("--bootstrap-controller", bootstrap, "describe", "--replication")
            assert replication.returncode == 0, replication.stderr
            rows = [line.split("\t") for line in replication.stdout.decode().splitlines()]
            assert [r[-1] for r in rows] == [""] * 5  # Kafka ends every cell with a tab
            assert [(int(r[0]), r[6].strip()) for r in rows[1:]] == [
                (leader, "Leader"), *[(i, "Follower") for i in VOTERS if i != leader], (OBSERVER, "Observer")]

            human = await kraft_quorum("--bootstrap-controller", bootstrap, "describe", "--replication",
                                       "--human-readable")
            assert human.returncode == 0, human.stderr
            for row in human.stdout.decode().splitlines()[1:]:
                last_fetch, last_caught_up = row.split("\t")[4:6]
                assert last_fetch.strip().endswith(" ms ago") and last_caught_up.strip().endswith(" ms ago")

            # --bootstrap-server: the broker view leads to the same leader.
            via_server = await kraft_quorum("--bootstrap-server", f"{HOST}:{ports[OBSERVER]}", "describe", "--status")
            assert via_server.returncode == 0, via_server.stderr
            assert _parse_status(via_server.stdout.decode())["LeaderId"] == fields["LeaderId"]

            cluster, quorum = await trio.to_thread.run_sync(_kafka_python_view, bootstrap)
            assert (cluster["cluster_id"], cluster["controller_id"]) == (CLUSTER_ID, leader)
            [p] = quorum["topics"][0]["partitions"]
            assert p["error"] is None
            assert (p["leader_id"], p["leader_epoch"]) == (leader, int(fields["LeaderEpoch"]))
            assert [v["replica_id"] for v in p["current_voters"]] == [v["id"] for v in voters]
            assert [o["replica_id"] for o in p["observers"]] == [o["id"] for o in observers]
            assert uuid.UUID(p["observers"][0]["replica_directory_id"]) == nodes[OBSERVER].directory_id
            assert {n["node_id"]: n["listeners"][0]["port"] for n in quorum["nodes"]} == {
                i: ports[i] for i in VOTERS}


async def test_describe_follows_the_leader_when_it_moves(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, VOTERS)
    with trio.fail_after(90):
        async with running(paths, VOTERS) as nodes:
            old = await settled_leader(nodes, observers=0)
            old_epoch = nodes[old].raft_driver.core.epoch  # type: ignore[union-attr]
            await nodes[old].shutdown()  # hands over with EndQuorumEpoch
            rest = [i for i in VOTERS if i != old]
            result = await kraft_quorum("--bootstrap-controller", ",".join(
                f"{HOST}:{nodes[i].ports['CONTROLLER']}" for i in rest), "describe", "--status")
            assert result.returncode == 0, result.stderr
            fields = _parse_status(result.stdout.decode())
            assert int(fields["LeaderId"]) in rest
            assert int(fields["LeaderEpoch"]) > old_epoch


# ---------------------------------------------------------------- failing, cleanly and quickly


async def test_a_dead_address_fails_at_once_with_one_line(tmp_path: Path) -> None:
    """A refused connection is not retried until ``default.api.timeout.ms``:
    with an hour for the command and for each request, a CLI that retried
    would outlast kraft_quorum's hang bound (and its error would be the
    deadline's "Timed out after ...", not the unreachable address)."""
    with trio.socket.socket() as s:  # a port nobody listens on
        await s.bind((HOST, 0))
        port = s.getsockname()[1]
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=3600000\nrequest.timeout.ms=3600000\n")
    result = await kraft_quorum("--bootstrap-controller", f"{HOST}:{port}", "--command-config", str(config),
                                "describe", "--status")
    assert_one_line_error(result, f"Cannot reach any of the bootstrap controllers: {HOST}:{port}: connect failed",
                          status=5)
    assert result.stderr.decode().count("\n") == 1, result.stderr


async def test_a_node_that_never_answers_is_bounded_by_the_request_timeout(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=300\ndefault.api.timeout.ms=2000\n")

    async def silent(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, silent, 0, host=HOST))
        port = listeners[0].socket.getsockname()[1]
        result = await kraft_quorum("--bootstrap-controller", f"{HOST}:{port}", "--command-config", str(config),
                                    "describe", "--replication")
        nursery.cancel_scope.cancel()
    assert_one_line_error(result, f"Cannot reach any of the bootstrap controllers: {HOST}:{port}: "
                                  "DescribeCluster request timed out after 300 ms", status=5)


async def test_a_quorum_without_a_leader_times_out_with_the_reason(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, VOTERS)
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=1500\n")
    with trio.fail_after(60):
        async with running(paths, [1]) as nodes:  # one voter of three: no election can succeed
            result = await kraft_quorum("--bootstrap-controller", f"{HOST}:{nodes[1].ports['CONTROLLER']}",
                                        "--command-config", str(config), "describe", "--status")
    assert_one_line_error(result, "Timed out after 1500 ms waiting for the metadata quorum's leader: "
                                  "no leader is known for the metadata quorum (controllerId -1)")


@pytest.mark.parametrize(("args", "message", "status"), [
    (["describe", "--status"], "one of the arguments --bootstrap-server --bootstrap-controller is required", 2),
    (["--bootstrap-server", "a:1", "--bootstrap-controller", "b:2", "describe", "--status"],
     "argument --bootstrap-controller: not allowed with argument --bootstrap-server", 2),
    (["--bootstrap-controller", "nohost", "describe", "--status"], "Invalid url in bootstrap.controllers: nohost", 1),
    (["--bootstrap-controller", "h:1", "describe"],
     "One of --status or --replication must be specified with describe sub-command", 1),
    (["--bootstrap-controller", "h:1", "describe", "--status", "--replication"],
     "Only one of --status or --replication should be specified with describe sub-command", 1),
    (["--bootstrap-controller", "h:1", "describe", "--status", "--human-readable"],
     "The option --human-readable is only supported along with --replication", 1),
    (["--bootstrap-controller", "h:1", "--command-config", "/nonexistent/admin.properties", "describe", "--status"],
     "Properties file /nonexistent/admin.properties does not exist.", 1),  # Kafka 4.4.0 (run); 4.0 and 4.1: "does not exists!"
])
def test_bad_arguments_get_kafkas_message(args: list[str], message: str, status: int) -> None:
    # In-process (click's runner): these never reach the network.
    result = cli.invoke(args, command=quorum_group)
    assert result.exit_code == status, result.output
    assert message in result.stderr and "Traceback" not in result.stderr and result.stdout == ""
    if status == 1:
        assert result.stderr.count("\n") == 1
