"""Kafka's raft metrics on the Prometheus endpoint, /healthz, /readyz and
/status, with real in-process nodes on 127.0.0.1 (metrics.prometheus.port=0:
an ephemeral port), scraped over real HTTP. Plus: the documentation's metric table
lists exactly what the endpoint exports, with the same types and help."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import trio
from prometheus_client.parser import text_string_to_metric_families

from kraft.node.raft_metrics import CURRENT_STATES, METRICS, RaftMetrics, request_name
from kraft.node.ready_report import count_records
from kraft.records.batch import build_data_batch
from tests.harness import cli
from tests.harness.configs import make_configs
from tests.harness.inprocess import append_until_ok, leader_of, node_config, start
from tests.harness.poll import until_async

#: The page of the documentation site that holds the metrics table.
METRICS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "operating" / "metrics-and-logs.md"


async def http_get(port: int, path: str) -> tuple[int, str]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def gauge(values: dict, name: str, **labels: str) -> float:
    return values[(name, tuple(sorted(labels.items())))]


def state_of(values: dict) -> str:
    on = [s for s in CURRENT_STATES if gauge(values, "kafka_raft_current_state", state=s) == 1.0]
    assert len(on) == 1, on
    return on[0]


async def test_three_voters_export_kafka_raft_metrics(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1, 2, 3], extra={"metrics.prometheus.port": "0",
                                                      "metrics.prometheus.host": "127.0.0.1"})
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nodes = [await start(nursery, node_config(paths[i])) for i in (1, 2, 3)]
            leader = await leader_of(nodes)
            offset = await append_until_ok(nodes, [b"a", b"b", b"c"])
            # Every follower's high watermark passes the records (it learns
            # it from its next fetch).
            for node in nodes:
                await until_async("node.high_watermark > offset", lambda: node.high_watermark > offset, interval_s=0.01)
            for node in nodes:
                assert node.metrics_port is not None
                code, text = await http_get(node.metrics_port, "/metrics")
                assert code == 200
                values = samples(text)
                epoch = leader.leader.epoch
                assert gauge(values, "kafka_raft_current_leader") == leader.config.node_id
                assert gauge(values, "kafka_raft_current_epoch") == epoch
                assert gauge(values, "kafka_raft_number_of_voters") == 3
                assert gauge(values, "kafka_raft_high_watermark") > offset
                assert gauge(values, "kafka_raft_log_end_offset") >= gauge(values, "kafka_raft_high_watermark")
                assert gauge(values, "kafka_raft_log_end_epoch") == epoch
                assert gauge(values, "kafka_raft_number_unknown_voter_connections") == 0
                assert 0.0 <= gauge(values, "kafka_raft_poll_idle_ratio_avg") <= 1.0
                if node is leader:
                    assert state_of(values) == "leader"
                    # Kafka: the leader and a candidate report their own id.
                    assert gauge(values, "kafka_raft_current_vote") == node.config.node_id
                    assert gauge(values, "kafka_raft_uncommitted_voter_change") == 0
                    assert gauge(values, "kafka_raft_number_of_observers") == 0
                    assert gauge(values, "kafka_raft_append_records_rate") > 0
                    # The leader's batches committed: a latency was measured.
                    assert not math.isnan(gauge(values, "kafka_raft_commit_latency_avg"))
                    assert gauge(values, "kafka_raft_commit_latency_max") >= gauge(
                        values, "kafka_raft_commit_latency_avg")
                    # It answered Fetch requests without error.
                    assert gauge(values, "kafka_raft_requests_total", request="Fetch") > 0
                    assert gauge(values, "kafka_raft_errors_total", request="Fetch", error="NONE") > 0
                    assert gauge(values, "kafka_raft_totaltimems_count", request="Fetch") > 0
                else:
                    assert state_of(values) == "follower"
                    assert gauge(values, "kafka_raft_current_vote") in (-1, leader.config.node_id)
                    # Leader-only gauges are declared but have no sample.
                    assert ("kafka_raft_number_of_observers", ()) not in values
                    assert gauge(values, "kafka_raft_fetch_records_rate") > 0
                    assert gauge(values, "kafka_raft_channel_request_total", request="Fetch") > 0
                    assert gauge(values, "kafka_raft_channel_response_total", request="Fetch", error="NONE") > 0
                assert (await http_get(node.metrics_port, "/healthz"))[0] == 200
                code, reason = await http_get(node.metrics_port, "/readyz")
                assert code == 200, reason
                code, body = await http_get(node.metrics_port, "/status")
                status = json.loads(body)
                assert status["ready"] and status["healthy"] and status["voters"] == [1, 2, 3]
                assert status["raft_metrics"]["current-leader"] == leader.config.node_id
            assert (await http_get(leader.metrics_port, "/nope"))[0] == 404
            nursery.cancel_scope.cancel()


async def test_readyz_and_healthz_fail_with_reasons(tmp_path: Path) -> None:
    """One voter of three alone: alive, no leader -- not ready. Its log
    directory then cannot be written -- not healthy."""
    # kraft.witness=false: alone, an auto voter waits for the others'
    # ApiVersions before campaigning (kraft/raft/witness_policy.py).
    paths = make_configs(tmp_path, [1, 2, 3], extra={"metrics.prometheus.port": "0",
                                                      "metrics.prometheus.host": "127.0.0.1",
                                                      "kraft.witness": "false"})
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            assert node.metrics_port is not None
            assert node.raft_driver is not None
            await until_async("node.raft_driver.initialized", lambda: node.raft_driver.initialized, interval_s=0.01)
            code, reason = await http_get(node.metrics_port, "/readyz")
            assert code == 503 and "leader" in reason
            assert await http_get(node.metrics_port, "/healthz") == (200, "ok\n")
            # The election state lands in quorum-state: the node campaigns.
            async def campaigning() -> bool:
                return state_of(samples((await http_get(node.metrics_port, "/metrics"))[1])) in (
                    "prospective", "candidate")

            await until_async("the node to campaign", campaigning, interval_s=0.02)
            # The directory is gone (a lost mount, say) and a file sits at its
            # path: the probe cannot write there (chmod would not stop root).
            log_dir = node.config.metadata_log_dir
            moved = log_dir.with_name(log_dir.name + ".moved")
            log_dir.rename(moved)
            log_dir.write_text("not a directory")
            try:
                code, reason = await http_get(node.metrics_port, "/healthz")
            finally:
                log_dir.unlink()
                moved.rename(log_dir)
            assert code == 503 and "cannot write" in reason
            nursery.cancel_scope.cancel()


async def test_metrics_off_by_default(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1])
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            assert node.metrics is None and node.metrics_port is None
            await leader_of([node])
            nursery.cancel_scope.cancel()


def readme_metrics() -> dict[str, tuple[str, str]]:
    """name -> (type, help) from the documentation's metrics table."""
    text = METRICS_PAGE.read_text()
    start = text.index("<!-- metrics-table:start -->")
    end = text.index("<!-- metrics-table:end -->")
    rows = {}
    for line in text[start:end].splitlines():
        m = re.match(r"\|\s*`(kafka_raft_\w+)`\s*\|\s*(\w+)\s*\|[^|]*\|\s*(.+?)\s*\|\s*$", line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3))
    return rows


def exported_metrics() -> dict[str, tuple[str, str]]:
    """What the endpoint declares (``# TYPE``/``# HELP`` lines), with no node
    behind it: every family is declared whatever the role."""
    from prometheus_client.exposition import generate_latest

    text = generate_latest(RaftMetrics().registry).decode()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    # The raft metrics: process_*, python_info and kraft_* are beside them.
    return {name: (kind, helps[name]) for name, kind in types.items() if name.startswith("kafka_raft_")}


def test_process_uptime_and_build_info_beside_the_raft_metrics() -> None:
    from importlib.metadata import version

    from prometheus_client.exposition import generate_latest

    text = generate_latest(RaftMetrics().registry).decode()
    assert f'kraft_build_info{{version="{version("kraft")}"}} 1.0' in text
    uptime = float(re.search(r"^kraft_uptime_seconds (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]
    assert uptime >= 0
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes", "process_start_time_seconds",
                 "process_open_fds", "python_info"):
        assert re.search(rf"^{name}[ {{]", text, re.M), name


def test_readme_lists_exactly_the_exported_metrics() -> None:
    readme = readme_metrics()
    exported = exported_metrics()
    assert sorted(exported) == sorted(readme), (
        f"missing from {METRICS_PAGE.name}: {sorted(set(exported) - set(readme))}; "
        f"not exported: {sorted(set(readme) - set(exported))}")
    for name, (kind, help_) in exported.items():
        assert readme[name][0] == kind, f"{name}: the docs say {readme[name][0]}, exported as {kind}"
        assert readme[name][1] == help_, f"{name}: the documented help differs from the exported help"
    assert len(exported) == len(METRICS)


def test_request_names_are_kafkas() -> None:
    assert request_name("BEGIN_QUORUM_EPOCH") == "BeginQuorumEpoch"
    assert request_name("API_VERSIONS") == "ApiVersions"
    assert request_name("FETCH_SNAPSHOT") == "FetchSnapshot"


def test_count_records_reads_batch_headers() -> None:
    data = build_data_batch([b"x"] * 3, base_offset=0, epoch=1, timestamp=0) + build_data_batch(
        [b"y"] * 5, base_offset=3, epoch=1, timestamp=0)
    assert count_records(data) == 8
    # A batch cut short (a fetch ends mid-batch) is not counted.
    assert count_records(data[:-4]) == 3
    assert count_records(b"") == 0


async def test_kraft_node_status_reads_the_metrics_port(tmp_path: Path) -> None:
    """``kraft node status --json`` (and the text form) against a running
    sole voter: ready, leader, one voter; exit code 0."""
    paths = make_configs(tmp_path, [1], extra={"metrics.prometheus.port": "0",
                                               "metrics.prometheus.host": "127.0.0.1"})
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, node_config(paths[1]))
            await leader_of([node])
            address = f"127.0.0.1:{node.metrics_port}"
            result = await trio.to_thread.run_sync(
                lambda: cli.invoke(["node", "status", "--metrics-address", address, "--json"]))
            assert result.exit_code == 0, result.output
            status = json.loads(result.output)
            assert status["ready"] and status["voters"] == [1]
            assert status["raft_metrics"]["current-state"] == "leader"
            text = await trio.to_thread.run_sync(
                lambda: cli.invoke(["node", "status", "--metrics-address", address]))
            assert text.exit_code == 0 and "leader in epoch" in text.output
            nursery.cancel_scope.cancel()
        # Nobody listens there any more: exit code 5 (network) with the address and the reason.
        gone = cli.invoke(["node", "status", "--metrics-address", address])
        assert gone.exit_code == 5 and f"cannot read http://{address}/status: Connection refused" in gone.output


def test_the_error_of_a_kraft_response_is_its_partitions() -> None:
    from kraft.messages.generated import fetch_response as fr
    from kraft.messages.generated import vote_response as vr
    from kraft.node.raft_metrics import error_name, wire_error

    fetch = fr.FetchResponse(responses=[fr.FetchableTopicResponse(partitions=[fr.PartitionData(error_code=74)])])
    assert error_name(wire_error(fetch)) == "FENCED_LEADER_EPOCH"
    vote = vr.VoteResponse(error_code=0, topics=[vr.TopicData(partitions=[vr.PartitionData(error_code=0)])])
    assert error_name(wire_error(vote)) == "NONE"
