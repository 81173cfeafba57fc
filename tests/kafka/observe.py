"""What real Kafka says about a cluster, read with Kafka's own tools and
files only -- never with kraft's code: the leader a controller's
``quorum-state`` names, the LeaderChange records real DumpLogSegments prints,
and real ``kafka-metadata-quorum`` / ``kafka-cluster`` output parsed."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from tests.harness.kafka_cluster import KafkaCluster
from tests.harness.poll import settle
from tests.kafka.processes import run_tool
from tests.kafka.releases import newest, require

_BATCH = re.compile(r"^baseOffset: (\d+) .*?partitionLeaderEpoch: (-?\d+)")
_LEADER_CHANGE = re.compile(r"\| offset: (\d+) CreateTime: (\d+) .*LeaderChange: (\{.*\})")


@dataclass(frozen=True)
class LeaderChange:
    """One LeaderChange control record: who led from ``offset`` on, in ``epoch``."""

    offset: int
    epoch: int
    leader_id: int
    create_time_ms: int


def dump_metadata(cluster: KafkaCluster, node_id: int) -> str:
    """Node ``node_id``'s log segments as real DumpLogSegments
    (``--cluster-metadata-decoder``) of the newest installed release prints
    them: the segment format is the same in every 4.x release."""
    folder = (cluster.kafka.get(node_id) or cluster.kraft[node_id]).data / "__cluster_metadata-0"
    segments = sorted(str(p) for p in folder.glob("*.log"))
    done = run_tool(require(newest()), "DumpLogSegments", "--cluster-metadata-decoder", "--files",
                    ",".join(segments), work=cluster.root)
    assert done.returncode == 0, done.stderr
    return done.stdout


def leader_changes(cluster: KafkaCluster, node_id: int, dumped: str | None = None) -> list[LeaderChange]:
    """Every LeaderChange in node ``node_id``'s log segments (or in
    ``dumped``, :func:`dump_metadata`'s output), as real DumpLogSegments
    prints them: 4.0's prints a control record's type only (``controlType:
    LEADER_CHANGE(2)``), 4.1 and later its LeaderChange payload
    (``DumpLogSegments.printControlRecord``)."""
    out = dump_metadata(cluster, node_id) if dumped is None else dumped
    changes: list[LeaderChange] = []
    epoch = -1
    for line in out.splitlines():
        if (batch := _BATCH.match(line)) is not None:
            epoch = int(batch.group(2))
        elif (record := _LEADER_CHANGE.match(line)) is not None:
            body = json.loads(record.group(3))
            changes.append(LeaderChange(int(record.group(1)), epoch, body["leaderId"], int(record.group(2))))
    return changes


def leader_in_state(cluster: KafkaCluster, node_id: int) -> tuple[int, int]:
    """(leaderId, leaderEpoch) of node ``node_id``'s quorum-state file; (-1, -1) before it has one."""
    state = cluster.quorum_state(node_id) or {}
    return int(state.get("leaderId", -1)), int(state.get("leaderEpoch", -1))  # type: ignore[call-overload]


def wait_until_leads(cluster: KafkaCluster, node_id: int, timeout_s: float) -> float | None:
    """Seconds until ``node_id``'s own quorum-state names it leader (Kafka
    writes it on the transition, ``QuorumState.transitionToLeader``); None on time-out."""
    start = time.monotonic()
    if settle(lambda: leader_in_state(cluster, node_id)[0] == node_id, bool, timeout_s, interval_s=0.05):
        return time.monotonic() - start
    return None


@dataclass(frozen=True)
class QuorumStatus:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]


def status(cluster: KafkaCluster) -> QuorumStatus:
    """Real ``kafka-metadata-quorum describe --status``, parsed."""
    fields = dict(line.split(":", 1) for line in cluster.describe_quorum("--status").splitlines() if ":" in line)
    value = {k.strip(): v.strip() for k, v in fields.items()}
    return QuorumStatus(int(value["LeaderId"]), int(value["LeaderEpoch"]), int(value["HighWatermark"]),
                        tuple(v["id"] for v in json.loads(value["CurrentVoters"])),
                        tuple(o["id"] for o in json.loads(value["CurrentObservers"])))


def replication(cluster: KafkaCluster, bootstrap: str | None = None) -> dict[int, dict[str, str]]:
    """Real ``kafka-metadata-quorum describe --replication``: node id -> its row."""
    out = cluster.describe_quorum("--replication", bootstrap=bootstrap)
    lines = [line.split("\t") for line in out.splitlines() if line.strip()]
    header = [h.strip() for h in lines[0]]
    rows = [dict(zip(header, (c.strip() for c in line))) for line in lines[1:]]
    return {int(row["NodeId"]): row for row in rows}


def controller_endpoints(cluster: KafkaCluster) -> list[int]:
    """The controllers real ``kafka-cluster list-endpoints --bootstrap-controller``
    lists (DescribeCluster, endpoint type controller)."""
    out = cluster.run_tool("ClusterTool", "list-endpoints", "--bootstrap-controller", cluster.bootstrap_controllers)
    return sorted(int(line.split()[0]) for line in out.splitlines()[1:] if line.strip() and line.split()[0].isdigit())
