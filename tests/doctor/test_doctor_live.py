"""``kraft doctor --bootstrap-controller`` against real ``kraft node
start`` processes: each online finding created for real (a stopped
observer, a stopped voter, a 4th voter added, a voter whose disk was
wiped and formatted again, voters killed, a node of another cluster in
the bootstrap list, two quorums sharing one cluster id) and recognised;
the healthy quorum exits 0.

Only Kafka's public RPCs are used (ApiVersions, DescribeCluster with
endpoint type 2 as ``ControllerApis.handleDescribeCluster`` answers it,
DescribeQuorum as ``KafkaRaftClient.handleDescribeQuorumRequest`` answers
it), so the same checks hold against a Kafka quorum.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.doctor.helpers import DynamicQuorum, bootstrap, leader_of, quorum
from tests.harness import cli
from tests.harness.configs import CLUSTER_ID, format_node
from tests.harness.poll import until
from tests.harness.processes import NodeProcess
from tests.ports import free_ports

pytestmark = pytest.mark.slow


def doctor(server: str, *args: str, command_config: Path | None = None) -> tuple[int, list[str], str]:
    extra = ["--command-config", str(command_config)] if command_config else []
    out = cli.run("doctor", "--bootstrap-controller", server, *extra, *args, timeout=120)
    codes = [line.split()[1].rstrip(":") for line in out.stdout.splitlines() if line.startswith(("ERROR", "WARNING"))]
    return out.returncode, codes, out.stdout + out.stderr


def doctor_until(server: str, accept: Callable[[int, list[str]], bool], *args: str,
                 command_config: Path | None = None) -> tuple[int, list[str], str]:
    """Run doctor until its exit status and finding codes are what ``accept`` wants."""
    seen: list[str] = []

    def attempt() -> tuple[int, list[str], str] | None:
        result = doctor(server, *args, command_config=command_config)
        seen[:] = [result[2]]
        return result if accept(result[0], result[1]) else None

    try:
        return until("doctor's findings", attempt)  # type: ignore[return-value]
    except AssertionError:
        raise AssertionError(f"doctor never gave the expected findings; last output:\n{seen[0] if seen else ''}")


def test_a_quorum_through_its_troubles(tmp_path: Path) -> None:
    q = DynamicQuorum(tmp_path, voters=[1, 2, 3], spares=[4], append_rate=20)
    server = bootstrap(q.ports, [1, 2, 3])
    client = tmp_path / "client.properties"
    client.write_text("request.timeout.ms=1500\ndefault.api.timeout.ms=8000\n")
    try:
        q.start(1, 2, 3, 4)
        # Healthy: three voters, an observer, a leader: exit 0.
        code, codes, out = doctor_until(server, lambda c, f: c == 0)
        assert "healthy: leader" in out and "voters [1, 2, 3]" in out and "3 of 3 controllers answered" in out

        # An observer that stops fetching falls behind.
        q.procs[4].proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        code, codes, out = doctor_until(server, lambda c, f: set(f) == {"observer-lagging"}, "--max-lag-ms", "2000",
                                        "--max-lag-offsets", "5")
        assert code == 10, out
        assert "observer 4 is behind the leader" in out
        q.procs[4].proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]

        # Four voters: no more failures tolerated than with three.
        added = quorum(q.ports, "--command-config", str(q.paths[4]), "add-controller", ids=[1, 2, 3])
        assert added.returncode == 0, added.stderr
        code, codes, out = doctor_until(server, lambda c, f: f == ["even-voter-count"])
        assert code == 10 and "4 voters tolerate no more failures than 3" in out

        # A voter that stops: unreachable and lagging.
        leader = leader_of(q.ports, [1, 2, 3])
        stopped = next(i for i in (1, 2, 3) if i != leader)
        q.procs[stopped].proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        code, codes, out = doctor_until(server, lambda c, f: {"voter-unreachable", "voter-lagging"} <= set(f),
                                        "--max-lag-ms", "2000", "--max-lag-offsets", "5", command_config=client)
        assert code == 1 and f"voter {stopped} at 127.0.0.1:{q.ports[stopped]} does not answer" in out, out
        assert f"voter {stopped} is behind the leader" in out
        q.procs[stopped].proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        doctor_until(server, lambda c, f: f == ["even-voter-count"])

        # Voter 4's disk is wiped and formatted again: a new directory id,
        # so it fetches as an observer and no longer counts as voter 4.
        q.procs[4].kill()
        shutil.rmtree(q.dir(4))
        format_node(q.paths[4])
        q.start(4)
        code, codes, out = doctor_until(server, lambda c, f: "directory-id-mismatch" in f)
        assert code == 1 and "node 4's directory id is not the one in the voter set" in out, out
        assert f"--controller-id 4 --controller-directory-id " in out

        # Two of the four voters killed: no majority.
        leader = leader_of(q.ports, [1, 2, 3])
        for i in [i for i in (1, 2, 3) if i != leader][:2]:
            q.procs[i].kill()
        code, codes, out = doctor_until(server, lambda c, f: "no-majority-reachable" in f, command_config=client)
        assert code == 1 and codes.count("voter-unreachable") == 2, out
        assert "only 2 of 4 voters answer; 3 are needed" in out and "kraft storage recover-quorum" in out
        # --json says the same.
        result = cli.run("doctor", "--bootstrap-controller", server, "--command-config", str(client), "--json")
        doc = json.loads(result.stdout)
        assert result.returncode == 1 and doc["status"] == 1
        assert "no-majority-reachable" in [f["code"] for f in doc["findings"]]
    finally:
        q.stop()


def _single(root: Path, node_id: int, port: int, quorum_line: str, cluster_id: str, *flags: str) -> NodeProcess:
    config = root / f"server-{node_id}.properties"
    config.write_text(f"process.roles=controller\nnode.id={node_id}\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
                      f"controller.listener.names=CONTROLLER\n{quorum_line}\n"
                      f"metadata.log.dir={root / f'node-{node_id}'}\ncontroller.quorum.election.timeout.ms=500\n")
    format_node(config, *flags, cluster_id=cluster_id)
    return NodeProcess(node_id, config, root, 0)


def test_another_cluster_and_two_quorums_sharing_a_cluster_id(tmp_path: Path) -> None:
    """Node 1 (dynamic, kraft.version 1) and node 2 (static, kraft.version 0)
    were both formatted for one cluster but each forms its own quorum; node 3
    belongs to another cluster."""
    ports = free_ports(3)
    other = "b3RoZXJDbHVzdGVySWQxMg"
    procs = [
        _single(tmp_path, 1, ports[0], f"controller.quorum.bootstrap.servers=127.0.0.1:{ports[0]}", CLUSTER_ID,
                "--standalone"),
        _single(tmp_path, 2, ports[1], f"controller.quorum.voters=2@127.0.0.1:{ports[1]}", CLUSTER_ID),
        _single(tmp_path, 3, ports[2], f"controller.quorum.bootstrap.servers=127.0.0.1:{ports[2]}", other,
                "--standalone"),
    ]
    server = ",".join(f"127.0.0.1:{p}" for p in ports)
    expected = {"cluster-id-mismatch", "leader-disagreement", "epoch-disagreement", "voter-set-disagreement",
                "kraft-version-disagreement"}
    try:
        for p in procs:
            p.start()
        code, codes, out = doctor_until(server, lambda c, f: set(f) == expected)
        assert code == 1
        assert f"node 3 (127.0.0.1:{ports[2]}) belongs to cluster {other}, not {CLUSTER_ID}" in out
        assert "controllers name different leaders" in out and "2 controllers answer DescribeQuorum as leader" in out
        assert f"127.0.0.1:{ports[0]}=1" in out and f"127.0.0.1:{ports[1]}=0" in out  # kraft.version
    finally:
        for p in procs:
            p.terminate()


def test_an_unreachable_bootstrap_address_and_no_answer_at_all(tmp_path: Path) -> None:
    port = free_ports(1)[0]
    code, codes, out = doctor(f"127.0.0.1:{port}")
    # Issue 44: it exited 1; no controller answering is the table's 5 (kraft/errors.py EXIT_NETWORK).
    assert code == 5 and codes == ["controller-unreachable", "no-majority-reachable"], out

