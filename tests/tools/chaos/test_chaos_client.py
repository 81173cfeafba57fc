"""The independent chaos client (:mod:`kraft.tools.bench.chaos_client`)
against a real quorum of three ``kraft node start`` processes running
Kafka's controller, the leader killed mid-run; and the checker
(:func:`~kraft.tools.bench.chaos.checker.check_client_load`) on the
client's history, which must also see an ``ok`` that no log holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.records.state_files import random_cluster_id
from kraft.tools.bench.chaos.checker import check_client_load, client_load_ok
from kraft.tools.bench.chaos.operations import read_named_operations
from kraft.tools.bench.chaos.segments import read_node_files, read_quorum_state, segment_crcs
from kraft.tools.bench.chaos_client import QUOTA_KEY
from tests.harness import cli
from tests.harness.poll import until
from tests.ports import free_ports

VOTERS = (1, 2, 3)


def _start(root: Path, node_id: int) -> subprocess.Popen[bytes]:
    out = (root / f"node-{node_id}.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "kraft.cli", "node", "start", "--config",
                             str(root / f"server-{node_id}.properties")], stdout=out, stderr=subprocess.STDOUT)


def _quorum(root: Path) -> dict[int, int]:
    """Three formatted controllers (not started): node id -> port."""
    ports = dict(zip(VOTERS, free_ports(len(VOTERS))))
    voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in ports.items())
    cluster_id = random_cluster_id()
    for node_id, port in ports.items():
        config = root / f"server-{node_id}.properties"
        config.write_text(f"process.roles=controller\nnode.id={node_id}\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
                          f"controller.listener.names=CONTROLLER\ncontroller.quorum.voters={voters}\n"
                          f"metadata.log.dir={root / f'metadata-{node_id}'}\nkraft.controller=true\n"
                          "kraft.witness=false\n")
        cli.run("storage", "format", "--config", str(config), "--cluster-id", cluster_id, check=True)
    return ports


def _leader(root: Path) -> int | None:
    states = [s for n in VOTERS if (s := read_quorum_state(root / f"metadata-{n}")) is not None and s[1] >= 0]
    return max(states)[1] if states else None


def _create_topic_error(port: int) -> tuple[int, str | None]:
    """CreateTopics of one topic (1 partition, replication factor 1) to the
    controller at ``port``: its error code and message."""
    import socket

    from kraft.messages.generated import create_topics_request as ctr
    from kraft.wire.codec import decode_response, encode_request
    from kraft.wire.framing import FrameReader

    body = ctr.CreateTopicsRequest(topics=[ctr.CreatableTopic(name="chaos-topic", num_partitions=1,
                                                               replication_factor=1)])
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"".join(bytes(p) for p in encode_request(body, 7, 1)))
        reader = FrameReader()
        while (payload := reader.next_frame()) is None:
            reader.feed(sock.recv(65536))
    topic = decode_response(payload, ctr.CreateTopicsRequest.API_KEY or 0, 7).body.topics[0]
    return topic.error_code, topic.error_message


def _history_oks(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if '"type": "ok"' in line)


def _log_ends(root: Path) -> set[int]:
    return {max((last for last, _ in segment_crcs(root / f"metadata-{n}").values()), default=-1) for n in VOTERS}


@pytest.mark.slow
def test_the_client_survives_a_killed_leader_and_the_checker_passes(tmp_path: Path) -> None:
    ports = _quorum(tmp_path)
    nodes = {n: _start(tmp_path, n) for n in VOTERS}
    history = tmp_path / "client.jsonl"
    client: subprocess.Popen[bytes] | None = None
    try:
        until("a leader", lambda: _leader(tmp_path) is not None)
        # Why the client does not create topics: with no broker registered the
        # controller refuses each (ReplicationControlManager.createTopic ->
        # INVALID_REPLICATION_FACTOR, 38).
        first = _leader(tmp_path)
        assert first is not None
        code, message = _create_topic_error(ports[first])
        print("CreateTopics:", code, message)
        assert code in (38, 41), (code, message)  # 41: the leadership moved meanwhile
        client = subprocess.Popen(
            [sys.executable, "-m", "kraft.tools.bench.chaos_client", "--bootstrap-controller",
             ",".join(f"127.0.0.1:{p}" for p in ports.values()), "--history", str(history), "--rate", "20",
             "--operations", "60", "--prefix", "chaos"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        until("10 operations ok", lambda: _history_oks(history) >= 10)
        leader = _leader(tmp_path)
        assert leader is not None
        nodes[leader].kill()  # kill -9, mid-run
        nodes[leader].wait()
        oks = _history_oks(history)
        until("an operation ok after the kill", lambda: _history_oks(history) > oks)
        nodes[leader] = _start(tmp_path, leader)
        out, _ = client.communicate(timeout=180)
        assert client.returncode == 0, out
        # Every voter's log ends at one batch before they stop.
        until("the logs agree", lambda: len(_log_ends(tmp_path)) == 1)
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        for proc in nodes.values():
            proc.terminate()
        for proc in nodes.values():
            proc.wait(60)
    ops = read_named_operations(history)
    files = {n: read_node_files(tmp_path / f"metadata-{n}") for n in VOTERS}
    result = check_client_load(ops, files, set(VOTERS), QUOTA_KEY)
    print(json.dumps(result), out.decode(errors="replace"))
    assert client_load_ok(result), result
    assert ops.invoked == 60 and len(ops.ok) >= 10 and result["present"] == len(ops.ok), result


def _quota_value(client_id: str) -> bytes:
    """A ClientQuotaRecord's value as ``MetadataRecordSerde`` frames it, from the generated codec."""
    from kraft.messages.generated import client_quota_record as rec

    record = rec.ClientQuotaRecord(entity=[rec.EntityData(entity_type="client-id", entity_name=client_id)],
                                   key=QUOTA_KEY, value=1.0, remove=False)
    return bytes([1, rec.ClientQuotaRecord.API_KEY or 0, 0]) + b"".join(bytes(p) for p in record.encode_parts(0))


def _history(path: Path, outcomes: dict[str, str]) -> None:
    lines = []
    for name, kind in outcomes.items():
        lines += [{"type": "invoke", "f": "alter-client-quotas", "value": name},
                  {"type": kind, "f": "alter-client-quotas", "value": name}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_the_checker_fails_an_ok_no_log_holds_and_a_record_written_twice(tmp_path: Path) -> None:
    from kraft.tools.bench.chaos.segments import NodeFiles

    history = tmp_path / "client.jsonl"
    _history(history, {"chaos-0": "ok", "chaos-1": "ok", "chaos-2": "info", "chaos-3": "fail"})
    held = {0: _quota_value("chaos-0"), 1: _quota_value("chaos-2")}
    files = {n: NodeFiles(records=dict(held), end_offset=2) for n in VOTERS}
    result = check_client_load(read_named_operations(history), files, set(VOTERS), QUOTA_KEY)
    assert not client_load_ok(result)
    assert result["lost_records"] == ["chaos-1"] and result["missing_on"] == {1: 1, 2: 1, 3: 1}, result
    assert result["info_committed"] == 1 and result["fail_committed"] == 0, result

    files[2].records[2] = _quota_value("chaos-0")
    _history(history, {"chaos-0": "ok"})
    result = check_client_load(read_named_operations(history), files, set(VOTERS), QUOTA_KEY)
    assert result["lost"] == 0 and result["applied_twice"] == {2: ["chaos-0"]} and not client_load_ok(result)


def test_a_failed_operation_in_a_log_fails_the_check(tmp_path: Path) -> None:
    from kraft.tools.bench.chaos.segments import NodeFiles

    history = tmp_path / "client.jsonl"
    _history(history, {"chaos-0": "fail"})
    files = {n: NodeFiles(records={0: _quota_value("chaos-0")}, end_offset=1) for n in VOTERS}
    result = check_client_load(read_named_operations(history), files, set(VOTERS), QUOTA_KEY)
    assert result["fail_committed"] == 1 and not client_load_ok(result), result


@pytest.mark.slow
def test_bench_chaos_with_the_client_load_kills_nodes_and_nothing_is_lost(tmp_path: Path) -> None:
    """``kraft bench chaos --load client``: the voters run Kafka's controller
    and no demo load; the client's history is what the checker judges."""
    import trio

    from kraft.tools.bench.chaos import ChaosOptions, chaos_ok, format_chaos_report, run_chaos

    options = ChaosOptions(duration_s=5.0, nemesis=("kill",), nemesis_explicit=True, observers=0,
                           append_rate=20.0, load="client", patience_s=60.0)
    result = trio.run(run_chaos, options, tmp_path, print)
    report = format_chaos_report(result)
    print(report)
    assert chaos_ok(result), report
    ops = result["operations"]
    assert result["load"] == "client" and result["fault_counts"]["kill"] >= 1, report
    assert ops["ok"] == result["present"] == result["acknowledged"] > 0 and result["lost"] == 0, report
    assert ops["invoked"] == ops["ok"] + ops["fail"] + ops["info"], ops
    assert not list(tmp_path.glob("operations-*.jsonl")) and (tmp_path / "client-history.jsonl").exists()
    assert "the chaos client sending 20 AlterClientQuotas/s" in report and "operations invoked" in report


@pytest.mark.slow
def test_bench_chaos_with_the_client_load_runs_the_partition_nemesis(tmp_path: Path) -> None:
    """``--load client --nemesis cut``: the nodes in network namespaces, the
    client in one of its own on their bridge (10.211.0.200), which the cuts
    leave whole; every ok still has its record on every voter."""
    import trio

    from kraft.tools.bench.chaos import ChaosOptions, chaos_ok, format_chaos_report, run_chaos
    from kraft.tools.bench.chaos.run import unavailable_reason
    from tests.kafka.releases import unavailable

    reason = unavailable_reason("cut")
    if reason is not None:
        unavailable(f"nemesis cut cannot run here: {reason}", "every chaos nemesis")
    options = ChaosOptions(duration_s=12.0, nemesis=("cut",), nemesis_explicit=True, observers=0,
                           append_rate=20.0, load="client", patience_s=60.0)
    result = trio.run(run_chaos, options, tmp_path, print)
    report = format_chaos_report(result)
    print(report)
    assert chaos_ok(result), report
    assert result["fault_counts"]["cut"] >= 1 and result["network"].startswith("network namespaces"), report
    assert result["operations"]["ok"] == result["present"] > 0, report
    oks = [json.loads(line) for line in (tmp_path / "client-history.jsonl").read_text().splitlines()
           if '"type": "ok"' in line]
    # Answered over the bridge: the client is in the nodes' network, not on 127.0.0.1.
    assert oks and all(str(e["controller"]).startswith("10.211.0.") for e in oks), oks[:3]
