"""A kraft observer (``kraft node start`` with a node id that is not a
voter) following a real Kafka quorum, static and dynamic (KIP-853), for
every installed release: real ``kafka-metadata-quorum`` lists it as an
Observer caught up with the leader, and its snapshot and segments are
byte-identical to the Kafka leader's (tests/kafka/copies.py says what that
covers: every batch both hold, and the snapshot it fetched).

The Kafka controllers snapshot often and let retention move their log
start (a small ``metadata.log.max.record.bytes.between.snapshots``, small
segments, a short retention), and the observer starts once the leader's
log no longer begins at 0: it must fetch the leader's snapshot
(FetchSnapshot) before it can fetch the log, as a broker does. The dynamic
quorum starts with controller 1 formatted ``--standalone``; controller 2,
formatted ``--no-initial-controllers``, joins through the real tool's
``add-controller``. The same quorum is then described by ``kraft
metadata-quorum``, which must print what the real tool prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster
from tests.harness.poll import until
from tests.kafka import copies, interop
from tests.kafka.observe import leader_in_state, replication
from tests.kafka.quorum_tools import kraft_quorum, real_quorum, status_shape
from tests.kafka.releases import KafkaRelease

pytestmark = pytest.mark.slow

OBSERVER = 50
BOUND_S = 90.0
#: The Kafka controllers' settings that make snapshots and move the log
#: start within seconds: a controller appends a NoOpRecord every 500 ms
#: (``metadata.max.idle.interval.ms``), so 2000 bytes is a snapshot every
#: few seconds; segments roll every 2 s (4.0 reads no
#: ``internal.metadata.log.segment.bytes`` and ``metadata.log.segment.bytes``
#: is at least 8 MiB, so by time); retention keeps ~2 s, and what it removes
#: stays as ``*.deleted`` for 10 minutes (default 1), longer than a test, so
#: every batch the observer fetched can still be compared.
SNAPSHOT_OFTEN = {"metadata.log.max.record.bytes.between.snapshots": 2000,
                  "metadata.log.segment.ms": 2000, "metadata.max.retention.ms": 2000,
                  "internal.metadata.delete.delay.millis": 600_000}


def _leader(cluster: KafkaCluster) -> int:
    def leaders() -> list[int]:
        return [i for i in cluster.kafka if leader_in_state(cluster, i)[0] == i]
    until("a Kafka controller leads", leaders)
    return leaders()[0]


@pytest.mark.parametrize("quorum", ["static", "dynamic"])
def test_a_kraft_observer_copies_a_real_quorum_byte_for_byte(
        tmp_path: Path, release: KafkaRelease, clusters: list[object], quorum: str) -> None:
    dynamic = quorum == "dynamic"
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(1, 2) if dynamic else (1,), kraft_voters=(),
                      brokers=(), dynamic=dynamic, kraft_observers=(OBSERVER,), extra=SNAPSHOT_OFTEN)
    clusters.append(cluster)
    cluster.format()
    cluster.start(cluster.kafka.values())
    leader = _leader(cluster)
    voters = (1,)
    if dynamic:
        added = real_quorum(cluster, "add-controller", config=str(cluster.kafka[2].config))
        assert added.startswith("Added controller 2 with directory id "), added
        voters = (1, 2)  # answered once committed (KafkaRaftClient.handleAddVoterRequest)
    leader_data = cluster.kafka[leader].data
    until("the leader's log start moved past 0 (a snapshot, then retention)",
          lambda: copies.log_start(leader_data) > 0)

    observer = cluster.observers[OBSERVER]
    cluster.start([observer])
    until("the observer fetched a snapshot", lambda: copies.snapshots(observer.data))

    def caught_up() -> bool:
        rows = replication(cluster)
        return OBSERVER in rows and rows[OBSERVER]["Lag"] == "0" and rows[OBSERVER]["Status"] == "Observer"
    until("real describe --replication lists the observer caught up", caught_up)
    real_status = real_quorum(cluster, "describe", "--status")
    fields = dict(status_shape(real_status))
    assert fields["LeaderId"] == str(leader) and f'{{"id": {OBSERVER}, "directoryId": ' in fields["CurrentObservers"]
    assert [f'"id": {v},' in fields["CurrentVoters"] for v in voters] == [True] * len(voters), real_status
    ours = kraft_quorum(cluster, "describe", "--status")
    assert status_shape(ours.stdout) == status_shape(real_status), f"kraft:\n{ours.stdout}\nreal:\n{real_status}"
    # Stand the Kafka controllers still, so neither retention nor appends
    # move the files while they are compared.
    for server in cluster.kafka.values():
        server.pause()
    common, shared = copies.compare(observer.data, leader_data)
    assert shared, (f"the observer's snapshots {sorted(copies.snapshots(observer.data))} are not among the "
                    f"leader's {sorted(copies.snapshots(leader_data))}")
    # Every batch of the copy is one of the leader's (the leader keeps what
    # its retention removed as *.deleted, see SNAPSHOT_OFTEN), from the end of
    # the snapshot it fetched on.
    ours_batches = sorted(copies.batches(observer.data))
    assert common == ours_batches, f"batches only the copy holds: {sorted(set(ours_batches) - set(common))[:5]}"
    assert ours_batches and ours_batches[0] >= min(int(name.split("-")[0]) for name in shared), ours_batches[:3]
    # The cells (tests/kafka/interop.py): how many batches is the cluster's, not the same from run to run.
    for key in (f"observer-{quorum}", "observer-files", "observer-describe"):
        interop.record(key, release.version, "yes")
