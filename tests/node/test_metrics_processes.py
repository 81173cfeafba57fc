"""The raft metrics and /readyz of real ``kraft node start`` processes,
scraped over HTTP while the protocol moves: a bootstrapped 3-voter quorum
(KIP-853 ``--initial-controllers``) under the demo load, its leader killed
with SIGKILL, then a fourth controller added with ``kraft quorum
add-controller``.

The gauges must move as KIP-595/KIP-853 say: the new leader's epoch is
higher, one survivor is ``leader`` and the other ``follower``, the high
watermark keeps advancing, ``number-of-voters`` goes from 3 to 4 on every
voter; the survivors' /readyz goes unready once their fetch timeout expires
with the leader gone, and ready again under the new leader. The role
changes are logged with their reasons."""

from __future__ import annotations

import http.client
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kraft.wire.tcp_connect import connected_to_itself
from tests.harness.configs import write_configs
from tests.harness.poll import until
from tests.harness.processes import NodeProcess
from tests.node.test_reconfig_processes import add_controller, format_initial
from tests.ports import free_ports

STATES = ("leader", "prospective", "prospective-voted", "candidate", "unattached-voted", "follower", "observer",
          "unattached")


def freeze(node: NodeProcess) -> None:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)


def thaw(node: NodeProcess) -> None:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGCONT)


def http_get(port: int, path: str, *, source_port: int = 0) -> tuple[int, str] | str:
    """``GET http://127.0.0.1:port/path``: (status, body), or why nothing
    answered (refused, timed out, a connection to itself). A malformed
    answer from a node still raises (``http.client.HTTPException``).
    ``source_port``: bind the client end there (a test forces a connection
    to itself with it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2, source_address=("127.0.0.1", source_port))
    try:
        conn.connect()
        assert conn.sock is not None
        if connected_to_itself(conn.sock):
            return f"nothing listens on {port} (the connection reached itself)"
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    except OSError as e:
        return str(e)
    finally:
        conn.close()


def scrape(port: int) -> dict[str, Any] | None:
    """The node's gauges (label-less ones by name, ``state``), None if it does
    not answer."""
    answer = http_get(port, "/metrics")
    if isinstance(answer, str):
        return None
    out: dict[str, Any] = {}
    for family in text_string_to_metric_families(answer[1]):
        for s in family.samples:
            if s.name == "kafka_raft_current_state":
                if s.value == 1.0:
                    out["state"] = s.labels["state"]
            elif not s.labels:
                out[s.name.removeprefix("kafka_raft_")] = s.value
    return out


def readyz(port: int) -> tuple[int, str]:
    answer = http_get(port, "/readyz")
    return (0, answer) if isinstance(answer, str) else answer


def test_a_poll_that_reaches_itself_is_nobody_answering() -> None:
    """The cause of a ``BadStatusLine: GET /metrics HTTP/1.1`` failure: a
    poll of a port no node listens on yet connected to itself. Forced here by
    binding the client end to the port it dials; the pollers take it for
    "not answering", as a refused connection."""
    from tests.ports import free_port

    port = free_port()
    assert http_get(port, "/metrics", source_port=port) == \
        f"nothing listens on {port} (the connection reached itself)"
    assert scrape(port) is None and readyz(port)[0] == 0  # refused
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        with client, server.accept()[0]:
            assert not connected_to_itself(client)


@pytest.mark.slow
def test_gauges_and_readiness_follow_a_leader_kill_and_a_voter_addition(tmp_path: Path) -> None:
    ids = [1, 2, 3, 4]
    paths, ports = write_configs(tmp_path, ids)
    metrics_ports = dict(zip(ids, free_ports(len(ids))))
    for i, path in paths.items():
        path.write_text(path.read_text() + f"metrics.prometheus.port={metrics_ports[i]}\n"
                        "metrics.prometheus.host=127.0.0.1\n")
    format_initial(paths, ports, [1, 2, 3], tmp_path)
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=20) for i in ids}
    try:
        for p in procs.values():
            p.start()

        def leader_view() -> tuple[int, dict[int, dict[str, Any]]] | None:
            views = {i: scrape(metrics_ports[i]) for i in (1, 2, 3)}
            if any(v is None or "state" not in v for v in views.values()):
                return None
            leaders = [i for i, v in views.items() if v["state"] == "leader"]
            if len(leaders) != 1 or any(v["current_leader"] != leaders[0] for v in views.values()):
                return None
            return leaders[0], views  # type: ignore[return-value]

        old_leader, before = until("a leader every voter agrees on", leader_view)
        epoch = before[old_leader]["current_epoch"]
        followers = [i for i in (1, 2, 3) if i != old_leader]
        for i, v in before.items():
            assert v["number_of_voters"] == 3
            assert v["current_epoch"] == epoch
            assert v["state"] == ("leader" if i == old_leader else "follower")
        # Node 4 fetches as an observer: the leader tracks it.
        until("the leader to track the observer",
              lambda: (scrape(metrics_ports[old_leader]) or {}).get("number_of_observers", 0) >= 1)
        # Ready once each has fetched from the leader (polled: on a loaded
        # machine a follower's first fetch can come late).
        for i in followers:
            until(f"follower {i}'s /readyz to be ready", lambda i=i: readyz(metrics_ports[i])[0] == 200)

        def followers_high_watermark() -> float | None:
            views = [scrape(metrics_ports[i]) for i in followers]
            if any(v is None for v in views):
                return None
            lowest = min(v["high_watermark"] for v in views)  # type: ignore[index]
            return lowest if lowest > 5 else None

        hwm_before = until("the demo load to commit records", followers_high_watermark)

        procs[old_leader].kill()
        # Each survivor goes unready once its fetch timeout expires with the
        # leader gone, then ready again under the new leader. An election
        # between two live survivors takes milliseconds -- too short a window
        # to see from outside -- so one survivor at a time is frozen
        # (SIGSTOP): the other cannot win alone and stays unready until seen.
        first, second = followers
        freeze(procs[second])
        try:
            until(f"node {first}'s /readyz to go unready", lambda: readyz(metrics_ports[first])[0] == 503)
            freeze(procs[first])
            thaw(procs[second])
            until(f"node {second}'s /readyz to go unready", lambda: readyz(metrics_ports[second])[0] == 503)
        finally:
            thaw(procs[first])
            thaw(procs[second])
        until("the survivors' /readyz to be ready again",
              lambda: all(readyz(metrics_ports[i])[0] == 200 for i in followers))
        after = {i: scrape(metrics_ports[i]) for i in followers}
        new_leader = next(i for i, v in after.items() if v is not None and v["state"] == "leader")
        other = next(i for i in followers if i != new_leader)
        assert after[other]["state"] == "follower"  # type: ignore[index]
        for v in after.values():
            assert v is not None
            assert v["current_epoch"] > epoch
            assert v["current_leader"] == new_leader
        # The new leader commits: the high watermark passes the old one.
        until("the high watermark to advance under the new leader",
              lambda: all((scrape(metrics_ports[i]) or {}).get("high_watermark", -1) > hwm_before
                          for i in followers))
        new = scrape(metrics_ports[new_leader])
        assert new is not None and new["election_latency_max"] > 0
        assert new["current_vote"] == new_leader

        procs[old_leader].start()
        until("the old leader to rejoin as a follower",
              lambda: (scrape(metrics_ports[old_leader]) or {}).get("state") == "follower")

        # KIP-853: add node 4; every voter then counts four voters.
        add_controller(ports, paths[4])
        until("four voters everywhere", lambda: all(
            (scrape(metrics_ports[i]) or {}).get("number_of_voters") == 4 for i in ids))
        leader_now = scrape(metrics_ports[new_leader])
        assert leader_now is not None and leader_now["uncommitted_voter_change"] == 0
        until("node 4 to follow", lambda: (scrape(metrics_ports[4]) or {}).get("state") == "follower")

        # One log line per role change, with its reason.
        survivors_log = "".join(procs[i].output() for i in followers)
        assert "fetch timeout after 1000 ms" in survivors_log
        assert "won election: " in procs[new_leader].output()
        assert "voter set changed to [1, 2, 3, 4]" in procs[new_leader].output()
    finally:
        for p in procs.values():
            p.terminate()
