"""A metadata log each real Kafka release writes, read by kraft (issue 35 item 3).

One small cluster per release -- Kafka controller 1 formatted
``--standalone`` at an older ``metadata.version``, Kafka controller 2
formatted ``--no-initial-controllers``, one broker with the standard
authorizer -- writes topics, a topic config, a SCRAM user, a client quota
and an ACL through Kafka's own admin paths and tools, a feature upgrade
(``kafka-features upgrade --release-version``: ``FeatureCommand``), and a
controller added and removed (``kafka-metadata-quorum add-controller`` and
``remove-controller``: ``MetadataQuorumCommand``, KIP-853). Controller 1
snapshots every few seconds (``metadata.log.max.snapshot.interval.ms``), so
the log holds a snapshot of the image after all of it.

Once the cluster stopped, on controller 1's ``__cluster_metadata-0``:

- kraft's ``dump-log --cluster-metadata-decoder`` prints what the real
  ``DumpLogSegments`` prints, byte for byte;
- kraft's Spark rows (the local Spark of tests/spark) hold the same batches,
  each with the real tool's record count and record types;
- the real metadata shell (where the release has one: 4.4.0's is not on
  Maven Central) and ``kraft shell`` answer the same commands on the newest
  snapshot alike;
- every record type and version in the log is counted and decoded (printed
  for the closing note).
"""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType

from kraft.kafka_release import kafka_release
from tests.harness.kafka_cluster import KafkaCluster
from tests.harness.poll import until
from tests.kafka import interop, live_tools
from tests.kafka.load import TopicLoad
from tests.kafka.releases import KafkaRelease, every_release, listed
from tests.spark.conftest import spark  # noqa: F401 -- the local Spark of tests/spark, for this module

pytestmark = pytest.mark.slow

#: Every listed release: what the tools print differs from release to release.
release = pytest.fixture(params=listed())(every_release)

#: The ``metadata.version`` the cluster is formatted at: the oldest with
#: dynamic quorums (KIP-853 needs 3.9-IV0), so the upgrade changes every feature.
FORMAT_RELEASE_VERSION = "3.9-IV0"
SNAPSHOT_INTERVAL_MS = 2000
BOUND_S = 60.0

#: The control records' names in ``DumpLogSegments`` (``printControlRecord``)
#: -> the ``ControlRecordType`` names of kraft's rows.
CONTROL_NAMES = {"SnapshotHeader": "SNAPSHOT_HEADER", "SnapshotFooter": "SNAPSHOT_FOOTER",
                 "KRaftVersion": "KRAFT_VERSION", "KRaftVoters": "KRAFT_VOTERS", "LeaderChange": "LEADER_CHANGE",
                 "LEADER_CHANGE": "LEADER_CHANGE"}

#: What the shell is asked on the snapshot (no ``find /`` and no
#: ``/image/features`` tree: 4.0 and 4.1 abort on zkMigrationState,
#: test_tools_live pins that).
SHELL_SESSION = """\
ls /image
ls /image/features
cat /image/features/metadataVersion
tree /image/topics
tree /image/configs
tree /image/acls
tree /image/scram
tree /image/clientQuotas
tree /image/cluster
ls /image/provenance
"""


def _batches(dump: str) -> list[tuple[str, int, int, list[str]]]:
    """The real ``DumpLogSegments --cluster-metadata-decoder``'s batches:
    (file, base offset, count, each record's type)."""
    batches: list[tuple[str, int, int, list[str]]] = []
    file = ""
    for line in dump.splitlines():
        if line.startswith("Dumping "):
            file = line.removeprefix("Dumping ")
        elif line.startswith("baseOffset: "):
            m = re.match(r"baseOffset: (\d+) lastOffset: \d+ count: (\d+) ", line)
            assert m, line
            batches.append((file, int(m.group(1)), int(m.group(2)), []))
        elif line.startswith("| offset: "):
            m = re.search(r'payload: \{"type":"(\w+)"', line) or re.search(
                r" (SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters|LeaderChange)\b", line) or re.search(
                r"controlType: (\w+)\(", line)
            assert m, line
            batches[-1][3].append(CONTROL_NAMES.get(m.group(1), m.group(1)))
    return batches


def _spark_batches(spark: Any, files: list[Path]) -> list[tuple[str, int, int, list[str]]]:
    """kraft's Spark rows of ``files``, as :func:`_batches`."""
    from kraft.tools.spark.source import read

    rows = read(spark, [str(f) for f in files]).select("file", "batch_base_offset", "offset", "record_type",
                                                          "error_kind").collect()
    assert all(r["error_kind"] is None for r in rows), [r for r in rows if r["error_kind"]]
    grouped: dict[tuple[str, int], list[tuple[int, str]]] = collections.defaultdict(list)
    for r in rows:
        grouped[(r["file"], r["batch_base_offset"])].append((r["offset"], r["record_type"]))
    return [(file, base, len(records), [t for _, t in sorted(records)])
            for (file, base), records in sorted(grouped.items())]


def _write(cluster: KafkaCluster, release: KafkaRelease) -> None:
    """Everything the cluster is asked to write, through Kafka's own clients and tools."""
    broker = f"127.0.0.1:{cluster.brokers[100].port}"
    load = TopicLoad(broker)
    try:
        assert all(load.create(f"written-{n}") for n in range(3))
        load.admin().alter_configs([ConfigResource(ConfigResourceType.TOPIC, "written-0",
                                                   configs={"retention.ms": "3600000"})])
    finally:
        load.close()
    for entity, name, config in (("--entity-type=users", "alice", "SCRAM-SHA-256=[iterations=8192,password=pw]"),
                                 ("--entity-type=clients", "client-a", "producer_byte_rate=1024")):
        done = cluster.run_tool("ConfigCommand", "--bootstrap-server", broker, "--alter", entity,
                                "--entity-name", name, "--add-config", config)
        assert "Completed updating" in done, done
    cluster.run_tool("AclCommand", "--bootstrap-server", broker, "--add", "--allow-principal", "User:alice",
                     "--operation", "Read", "--topic", "written-0")
    latest = kafka_release(live_tools.kafka_version(release)).latest_production
    upgraded = cluster.run_tool("FeatureCommand", "--bootstrap-server", broker, "upgrade", "--release-version", latest)
    assert "metadata.version was upgraded to" in upgraded, upgraded

    # Controller 2 (an observer until now) joins the quorum and leaves it.
    joining = cluster.kafka[2]
    directory_id = re.search(r"^directory\.id=(\S+)$", (joining.data / "meta.properties").read_text(), re.M)
    assert directory_id is not None
    controller = cluster.kafka_bootstrap().split(",")[0]
    added = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-controller", controller, "--command-config",
                             str(joining.config), "add-controller")
    assert added.startswith("Added controller 2 "), added
    removed = cluster.run_tool("MetadataQuorumCommand", "--bootstrap-controller", controller, "remove-controller",
                               "--controller-id", "2", "--controller-directory-id", directory_id.group(1))
    assert "KRaft controller 2 " in removed, removed


def _next_snapshot(log_dir: Path, before: set[Path]) -> Path:
    """A snapshot controller 1 completes after the ones in ``before`` (its
    ``.checkpoint.part`` renamed), waiting for it: it holds all committed then."""
    return until(f"a new snapshot in {log_dir}", lambda: min(set(log_dir.glob("*.checkpoint")) - before, default=None),
                 BOUND_S, interval_s=0.5)


def test_a_log_each_release_writes_is_read_by_kraft_as_its_tools_read_it(
        release: KafkaRelease, tmp_path: Path, clusters: list[object], spark: Any) -> None:  # noqa: F811
    extra = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
             "super.users": "User:ANONYMOUS", "metadata.log.max.snapshot.interval.ms": SNAPSHOT_INTERVAL_MS}
    cluster = KafkaCluster(tmp_path / "cluster", release, kafka_controllers=(1, 2), kraft_voters=(), brokers=(100,),
                      dynamic=True, extra=extra, release_version=FORMAT_RELEASE_VERSION)
    clusters.append(cluster)
    cluster.format()
    cluster.start()
    _write(cluster, release)
    log_dir = cluster.kafka[1].data / "__cluster_metadata-0"
    # Every change above was acknowledged, so committed: the next snapshot holds them all.
    snapshot = _next_snapshot(log_dir, set(log_dir.glob("*.checkpoint")))
    for process in (cluster.brokers[100], cluster.kafka[2], cluster.kafka[1]):
        process.terminate()  # a clean shutdown, as an operator stops it

    # Every segment, the bootstrap snapshot and the newest one (the ones between are alike).
    snapshots = sorted(log_dir.glob("*.checkpoint"))
    files = sorted([*log_dir.glob("*.log"), snapshots[0], snapshot])
    mode = ("--cluster-metadata-decoder",)
    theirs = live_tools.real_dump(release, mode, files, tmp_path)
    ours = live_tools.kraft_dump(release, mode, files)
    assert theirs.rc == 0, theirs.stderr
    assert not live_tools.first_difference(theirs.stdout, ours.stdout), \
        live_tools.first_difference(theirs.stdout, ours.stdout)
    assert ours.stderr == theirs.stderr

    batches = _batches(theirs.stdout)
    assert _spark_batches(spark, files) == batches

    kinds = collections.Counter(re.findall(r'payload: \{"type":"(\w+)","version":(\d+)', ours.stdout))
    controls = collections.Counter(t for _, _, _, types in batches for t in types if t in CONTROL_NAMES.values())
    assert "Error at" not in ours.stdout and "Unknown metadata id" not in ours.stdout
    for kind in ("TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", "USER_SCRAM_CREDENTIAL_RECORD",
                 "CLIENT_QUOTA_RECORD", "ACCESS_CONTROL_ENTRY_RECORD", "REGISTER_BROKER_RECORD",
                 "FEATURE_LEVEL_RECORD", "REGISTER_CONTROLLER_RECORD"):
        assert any(k == kind for k, _ in kinds), (kind, kinds)
    # The voter set changed twice (add, remove): KRaftVoters control records beside the bootstrap's.
    assert controls["KRAFT_VOTERS"] >= 3 and controls["LEADER_CHANGE"] >= 1, controls
    levels = re.findall(r'"type":"FEATURE_LEVEL_RECORD","version":\d+,"data":\{"name":"metadata.version",'
                        r'"featureLevel":(\d+)', ours.stdout)
    assert len(set(levels)) >= 2, levels  # formatted at 3.9-IV0, upgraded to the release's newest

    shell = _shell_lines(release, snapshot, tmp_path)
    print(f"\n{release} wrote: " + ", ".join(f"{k} v{v}: {n}" for (k, v), n in sorted(kinds.items()))
          + ", " + ", ".join(f"{k}: {n}" for k, n in sorted(controls.items()))
          + f"; {theirs.stdout.count(chr(10))} dump lines, {len(batches)} batches, {shell}")
    # The cells (tests/kafka/interop.py): the log's size is the cluster's, not the same from run to run.
    interop.record("written-log", release.version, "yes")
    interop.record("written-log-shell", release.version,
                   "yes" if release.shell_missing is None else f"no shell published for {release.version}")


def _shell_lines(release: KafkaRelease, snapshot: Path, tmp_path: Path) -> str:
    """The real metadata shell and ``kraft shell`` on the snapshot the
    cluster wrote, the same session: the same answers (4.4.0 has no shell)."""
    if release.shell_missing is not None:
        return f"no shell ({release.shell_missing})"
    theirs = live_tools.real_shell(release, snapshot, SHELL_SESSION, tmp_path)
    ours = live_tools.kraft_shell(release, snapshot, SHELL_SESSION)
    # stderr: the shell's log of the control records it skips, and jline's dumb terminal.
    assert theirs.rc == 0, theirs.stderr
    expected, actual = live_tools.answers(theirs.stdout), live_tools.answers(ours.stdout)
    assert actual == expected
    assert "written-0" in theirs.stdout and "alice" in theirs.stdout and "client-a" in theirs.stdout
    return f"{theirs.stdout.count(chr(10))} shell lines"
