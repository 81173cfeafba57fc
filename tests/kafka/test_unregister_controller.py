"""KIP-1312's ``remove-controller --unregister`` (Kafka 4.4), kraft's and the
real tool's, against real Kafka controllers of the newest release: a
controller that was shut down is removed from the voter set and its
registration dropped (RemoveRaftVoter, then UnregisterController to the
active controller, ``MetadataQuorumCommand.handleRemoveController``); a
controller that is no voter any more is refused with Kafka's line naming
``kafka-cluster.sh unregister-controller``; and a kraft quorum, whose nodes
do not serve UnregisterController, is refused by both tools alike.

Three Kafka controllers (1 formatted ``--standalone``, 2 and 3 added with
the real ``add-controller``), no broker.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster, KafkaServer, KraftVoter
from tests.harness.poll import until
from tests.kafka import interop
from tests.kafka.processes import run_tool
from tests.kafka.quorum_tools import kraft_quorum, real_quorum
from tests.kafka.releases import KafkaRelease, newest, require

pytestmark = pytest.mark.slow

BOUND_S = 90.0


@pytest.fixture
def release() -> KafkaRelease:
    """The newest release: the first with ``--unregister`` is 4.4."""
    chosen = require(newest())
    assert chosen.minor >= (4, 4), f"{chosen} has no remove-controller --unregister"
    return chosen


def _directory_id(node: KafkaServer | KraftVoter) -> str:
    found = re.search(r"^directory\.id=(\S+)$", (node.data / "meta.properties").read_text(), re.M)
    assert found is not None
    return found.group(1)


def _voters(cluster: KafkaCluster) -> list[int]:
    status = real_quorum(cluster, "describe", "--status")
    line = next(line for line in status.splitlines() if line.startswith("CurrentVoters:"))
    return [int(i) for i in re.findall(r'"id": (\d+)', line)]


def _registered(cluster: KafkaCluster, bootstrap: str) -> list[int]:
    """The controllers registered in the metadata (``kafka-cluster list-endpoints
    --bootstrap-controller``: DescribeCluster lists the registrations)."""
    text = cluster.run_tool("ClusterTool", "list-endpoints", "--bootstrap-controller", bootstrap)
    return sorted(int(row.split()[0]) for row in text.splitlines()[1:] if row.strip())


def _tool_lines(stderr: str) -> str:
    """The tool's own lines of a real tool's stderr, without its admin client's
    log lines (``[date] WARN ... Connection to node -3 could not be established``
    for a controller that was shut down)."""
    return "".join(line + "\n" for line in stderr.splitlines() if not line.startswith("["))


def _both(cluster: KafkaCluster,
          *args: str) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """kraft's run, then the real tool's, of ``remove-controller ARGS``."""
    ours = kraft_quorum(cluster, "remove-controller", *args)
    theirs = run_tool(cluster.release, "MetadataQuorumCommand", "--bootstrap-controller", cluster.bootstrap_controllers,
                      "remove-controller", *args, work=cluster.root)
    return ours, theirs


def test_remove_controller_unregister_removes_and_unregisters_as_kafka_does(
        tmp_path: Path, release: KafkaRelease, clusters: list[object]) -> None:
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(1, 2, 3), kraft_voters=(), brokers=(), dynamic=True)
    clusters.append(cluster)
    cluster.format()
    cluster.start()
    for node_id in (2, 3):
        real_quorum(cluster, "add-controller", config=str(cluster.kafka[node_id].config))
        until(f"voter {node_id}", lambda n=node_id: n in _voters(cluster))  # type: ignore[misc]
    live = cluster.kafka_bootstrap()
    until("registration of every controller", lambda: _registered(cluster, live) == [1, 2, 3])
    dir_2, dir_3 = _directory_id(cluster.kafka[2]), _directory_id(cluster.kafka[3])

    # Controller 3 is shut down (a running one registers again), then removed by the real tool.
    cluster.kafka[3].kill()
    theirs = real_quorum(cluster, "remove-controller", "-i", "3", "-d", dir_3, "--unregister")
    assert theirs == f"Removed KRaft controller 3 with directory id {dir_3}\nUnregistered KRaft controller 3\n"
    # Controller 2 likewise by kraft: Kafka's two lines, and the same result.
    cluster.kafka[2].kill()
    ours = kraft_quorum(cluster, "remove-controller", "-i", "2", "-d", dir_2, "--unregister")
    assert (ours.stdout, ours.stderr, ours.returncode) == (
        f"Removed KRaft controller 2 with directory id {dir_2}\nUnregistered KRaft controller 2\n", "", 0)
    leader = f"127.0.0.1:{cluster.kafka[1].port}"
    until("voters [1]", lambda: _voters(cluster) == [1])
    assert _registered(cluster, leader) == [1]

    # No voter any more: MetadataQuorumCommand.removeRaftVoter's VoterNotFoundException line, exit 1.
    ours, theirs = _both(cluster, "-i", "2", "-d", dir_2, "--unregister")
    refusal = _tool_lines(theirs.stderr)
    assert theirs.returncode == 1 and refusal.startswith("Failed to remove KRaft voter 2: Cannot remove voter "), refusal
    assert refusal.endswith("run `kafka-cluster.sh unregister-controller --id 2`.\n"), refusal
    assert (ours.stdout, ours.stderr, ours.returncode) == (theirs.stdout, refusal, 1)
    interop.record("unregister-kafka", release.version, "yes: removed and unregistered by both; the refusal alike")


def test_a_kraft_quorum_does_not_serve_unregister_controller(
        tmp_path: Path, release: KafkaRelease, clusters: list[object]) -> None:
    """A raft-only kraft quorum (kraft.controller=false) lists no
    UnregisterController in ApiVersions (it keeps no controller
    registrations): the removal is done, the unregistering refused with
    Kafka's client's UnsupportedVersionException, by both tools."""
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(), kraft_voters=(1, 2, 3), brokers=(), dynamic=True,
                      extra={"kraft.controller": "false"})
    clusters.append(cluster)
    cluster.format()
    cluster.start()
    for node_id in (2, 3):
        added = kraft_quorum(cluster, "add-controller", config=str(cluster.kraft[node_id].config))
        assert added.returncode == 0, added.stderr
    until("voters [1, 2, 3]", lambda: _voters(cluster) == [1, 2, 3])
    dirs = {n: _directory_id(cluster.kraft[n]) for n in (2, 3)}

    theirs = run_tool(release, "MetadataQuorumCommand", "--bootstrap-controller", cluster.bootstrap_controllers,
                      "remove-controller", "-i", "3", "-d", dirs[3], "--unregister", work=tmp_path)
    ours = kraft_quorum(cluster, "remove-controller", "-i", "2", "-d", dirs[2], "--unregister")
    hint = ". To unregister the controller from the cluster, run `kafka-cluster.sh unregister-controller --id {}`."
    assert (theirs.stdout, _tool_lines(theirs.stderr).strip(), theirs.returncode) == (
        f"Removed KRaft controller 3 with directory id {dirs[3]}\n",
        "Failed to unregister controller 3: The node does not support UNREGISTER_CONTROLLER" + hint.format(3), 1)
    assert (ours.stdout, ours.stderr, ours.returncode) == (
        f"Removed KRaft controller 2 with directory id {dirs[2]}\n",
        "Failed to unregister controller 2: The node does not support UNREGISTER_CONTROLLER" + hint.format(2) + "\n", 1)
    until("voters [1]", lambda: _voters(cluster) == [1])
    interop.record("unregister-kraft", release.version, "yes: removed, then refused alike")
