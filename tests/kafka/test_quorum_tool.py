"""Real ``kafka-metadata-quorum --bootstrap-controller`` (Kafka's
``MetadataQuorumCommand``, run by main class) against a kraft-only dynamic
quorum, for every installed release: ``describe --status``,
``--replication`` and ``--replication --human-readable`` (present from 4.0
on) answer as they do against Kafka controllers, and print what
``kraft metadata-quorum`` prints for the same quorum; ``add-controller``
and ``remove-controller`` from the real tool change the kraft quorum, and
kraft's own subcommands print Kafka's lines for the same changes.

No Kafka server runs here: two kraft nodes (1 formatted ``--standalone``,
2 ``--no-initial-controllers``, README "Running a node") and Kafka's tool.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.kafka_cluster import KafkaCluster
from tests.harness.poll import settle
from tests.kafka import interop
from tests.kafka.quorum_tools import kraft_quorum, real_quorum, replication_shape, status_shape
from tests.kafka.releases import KafkaRelease

pytestmark = pytest.mark.slow

BOUND_S = 60.0


def _voters_and_observers(text: str) -> tuple[list[int], list[int]]:
    values = dict(status_shape(text))
    return ([int(i) for i in re.findall(r'"id": (\d+)', values["CurrentVoters"])],
            [int(i) for i in re.findall(r'"id": (\d+)', values["CurrentObservers"])])


def _until_status(cluster: KafkaCluster, voters: list[int], observers: list[int]) -> str:
    """Real ``describe --status`` once it lists these voters and observers
    (an observer shows up once it fetched; a voter change once committed)."""
    return settle(lambda: real_quorum(cluster, "describe", "--status"),
                  lambda text: _voters_and_observers(text) == (voters, observers), BOUND_S, interval_s=0.5)


def _same_as_kraft(cluster: KafkaCluster, *describe: str) -> None:
    real = real_quorum(cluster, "describe", *describe)
    ours = kraft_quorum(cluster, "describe", *describe)
    assert ours.returncode == 0 and ours.stderr == "", ours.stderr
    shape = status_shape if describe == ("--status",) else replication_shape
    assert shape(ours.stdout) == shape(real), f"kraft:\n{ours.stdout}\n{cluster.release}:\n{real}"


def test_the_real_metadata_quorum_tool_describes_and_reconfigures_a_kraft_quorum(
        tmp_path: Path, release: KafkaRelease, clusters: list[object]) -> None:
    cluster = KafkaCluster(tmp_path, release, kafka_controllers=(), kraft_voters=(1, 2), brokers=(), dynamic=True)
    clusters.append(cluster)
    cluster.format()
    cluster.start()
    joining = cluster.kraft[2]
    directory_id = re.search(r"^directory\.id=(\S+)$", (joining.data / "meta.properties").read_text(), re.M)
    assert directory_id is not None
    node_2 = directory_id.group(1)

    # Node 2 fetches as an observer of the standalone voter 1.
    status = _until_status(cluster, [1], [2])
    assert _voters_and_observers(status) == ([1], [2]), status
    assert f'{{"id": 2, "directoryId": "{node_2}"}}' in status
    for describe in (("--status",), ("--replication",), ("--replication", "--human-readable")):
        _same_as_kraft(cluster, *describe)

    # The real tool adds node 2 with its own config file as --command-config,
    # as Kafka documents (the tool reads node.id, the controller listener and
    # the directory id from metadata.log.dir's meta.properties).
    added = real_quorum(cluster, "add-controller", config=str(joining.config))
    assert added == (f"Added controller 2 with directory id {node_2} and endpoints: "
                     f"CONTROLLER://127.0.0.1:{joining.port}\n")
    status = _until_status(cluster, [1, 2], [])
    assert _voters_and_observers(status) == ([1, 2], []), status
    rows = {row[0]: row for row in replication_shape(real_quorum(cluster, "describe", "--replication"))[1:]}
    assert rows["1"][6] == "Leader" and rows["2"][6] == "Follower", rows

    # kraft's remove-controller, then the real tool's add-controller again,
    # then the real remove-controller: Kafka's lines from both.
    removed = kraft_quorum(cluster, "remove-controller", "--controller-id", "2",
                           "--controller-directory-id", node_2)
    assert removed.returncode == 0, removed.stderr
    _until_status(cluster, [1], [2])
    added_again = kraft_quorum(cluster, "add-controller", config=str(joining.config))
    # AddRaftVoter is answered once the new voter set is committed
    # (KafkaRaftClient.handleAddVoterRequest, AddVoterHandler): no wait.
    assert (added_again.returncode, added_again.stdout) == (0, added), added_again.stderr
    removed_by_kafka = real_quorum(cluster, "remove-controller", "--controller-id", "2",
                                   "--controller-directory-id", node_2)
    # MetadataQuorumCommand.handleRemoveController: 4.0 and 4.1 print
    # "Removed  KRaft" (printf("%s KRaft ...", "Removed ")), 4.4 one space
    # ("%sKRaft ..."); kraft prints as the cluster's release.
    space = "  " if release.minor <= (4, 1) else " "
    assert removed_by_kafka == f"Removed{space}KRaft controller 2 with directory id {node_2}\n"
    assert removed.stdout == removed_by_kafka
    status = _until_status(cluster, [1], [2])
    assert _voters_and_observers(status) == ([1], [2]), status
    assert [p.name for p in cluster.everything() if not p.alive] == []
    interop.record("real-quorum-describe", release.version, "yes")
    interop.record("real-quorum-reconfigure", release.version, "yes")


def test_remove_controller_prints_each_releases_line(release: KafkaRelease, tmp_path: Path) -> None:
    """``remove-controller --dry-run`` (no request sent: Kafka's
    ``handleRemoveController`` prints without calling the admin client):
    kraft as ``release`` prints the real tool's line -- "removing  KRaft"
    with two spaces in 4.0 and 4.1, one in 4.4 (``"%sKRaft controller ..."``)."""
    from tests.kafka import live_tools
    from tests.harness.cli import kraft_args
    from tests.kafka.processes import run_tool

    args = ("--bootstrap-controller", "127.0.0.1:9", "remove-controller", "--controller-id", "2",
            "--controller-directory-id", "ga2XKj1mM2haNN4wJCUeNw", "--dry-run")
    theirs = run_tool(release, "MetadataQuorumCommand", *args, work=tmp_path, timeout_s=60)
    ours = live_tools.timed(kraft_args("metadata-quorum", "--kafka-version", live_tools.kafka_version(release), *args))
    assert theirs.returncode == 0 and theirs.stdout.startswith("DRY RUN of removing "), theirs.stderr
    assert (ours.stdout, ours.stderr, ours.rc) == (theirs.stdout, "", 0)
    interop.record("remove-controller-line", release.version,
                   "yes: `removing  KRaft` (two spaces)" if "removing  KRaft" in theirs.stdout else
                   "yes: `removing KRaft` (one space)")


def test_remove_controller_unregister_is_each_releases(release: KafkaRelease, tmp_path: Path) -> None:
    """``--unregister`` (KIP-1312): 4.4's ``handleRemoveController`` prints a
    second DRY RUN line; a release before 4.4 refuses the option
    (argparse4j's "unrecognized arguments"), and so does kraft as that release."""
    from tests.kafka import live_tools
    from tests.harness.cli import kraft_args
    from tests.kafka.processes import run_tool

    args = ("--bootstrap-controller", "127.0.0.1:9", "remove-controller", "--controller-id", "2",
            "--controller-directory-id", "ga2XKj1mM2haNN4wJCUeNw", "--dry-run", "--unregister")
    theirs = run_tool(release, "MetadataQuorumCommand", *args, work=tmp_path, timeout_s=60)
    ours = live_tools.timed(kraft_args("metadata-quorum", "--kafka-version", live_tools.kafka_version(release), *args))
    if release.minor >= (4, 4):
        assert theirs.returncode == 0 and theirs.stdout.endswith("DRY RUN of unregistering KRaft controller 2\n")
        assert (ours.stdout, ours.stderr, ours.rc) == (theirs.stdout, "", 0)
        interop.record("remove-controller-unregister-dry-run", release.version, "yes: two DRY RUN lines")
    else:
        assert theirs.returncode == 1 and "unrecognized arguments: '--unregister'" in theirs.stderr, theirs.stderr
        assert (ours.stdout, ours.rc) == ("", 2) and "--unregister: Kafka " in ours.stderr, ours.stderr
        interop.record("remove-controller-unregister-dry-run", release.version,
                       f"refused, as {release.version} refuses it")
