"""Real ``kafka-metadata-quorum`` beside ``kraft metadata-quorum`` on the
same quorum: both outputs, and the part of them that must match.

Two runs a few hundred milliseconds apart cannot print the same numbers:
a leader appends (Kafka's controller a NoOpRecord every 500 ms), fetch
times move. So the comparison keeps what describes the quorum -- the field
names and order, the cluster id, the leader and its epoch, the voters with
their directory ids and endpoints, the observers -- and the table's header,
row order, node and directory ids and status; the offsets, lags and times
are compared by form only (digits, or ``N ms ago``).
"""

from __future__ import annotations

import re
import subprocess

from tests.harness import cli
from tests.harness.kafka_cluster import KafkaCluster

#: --status fields whose values move between two runs.
_MOVING = ("HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs")
#: --replication columns whose values move: LogEndOffset, Lag, the two times.
_MOVING_COLUMNS = (2, 3, 4, 5)


def kraft_quorum(cluster: KafkaCluster, *args: str, config: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kraft metadata-quorum --bootstrap-controller ... ARGS`` printing as
    the cluster's Kafka release does (``--kafka-version`` its minor)."""
    options = ["--kafka-version", "{}.{}".format(*cluster.release.minor), "--bootstrap-controller", cluster.bootstrap_controllers,
               *(["--command-config", config] if config else [])]
    return cli.run("metadata-quorum", *options, *args)


def real_quorum(cluster: KafkaCluster, *args: str, config: str | None = None) -> str:
    """Real ``kafka-metadata-quorum --bootstrap-controller ... ARGS``: its stdout."""
    options = ["--bootstrap-controller", cluster.bootstrap_controllers,
               *(["--command-config", config] if config else [])]
    return cluster.run_tool("MetadataQuorumCommand", *options, *args)


def status_shape(text: str) -> list[tuple[str, str]]:
    """``describe --status`` as (field, value) with the moving values as their form."""
    rows = []
    for line in text.splitlines():
        name, _, value = line.partition(":")
        value = value.strip()
        if name in _MOVING:
            value = "<n>" if re.fullmatch(r"-?\d+", value) else value
        rows.append((name, value))
    return rows


def replication_shape(text: str) -> list[list[str]]:
    """``describe --replication`` cells (the header kept whole, padding
    included) with the moving cells as their form."""
    lines = text.splitlines()
    rows = [lines[0].split("\t")] if lines else []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split("\t")]
        for n in _MOVING_COLUMNS:
            if n < len(cells):
                cells[n] = "<ago>" if cells[n].endswith(" ago") else "<n>" if cells[n].isdigit() else cells[n]
        rows.append(cells)
    return rows
