"""The node's side of the witness (kraft/node/witness_detector.py): Kafka controller
metadata found in real Kafka logs, the detector's log lines (one per decision
change, one per reachability change, never one per attempt), the
``kraft.witness`` setting, the status the node reports, and the observer's
start-up voter-set line."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

from kraft.config import ConfigError, NodeConfig
from kraft.node.ready_report import Telemetry
from kraft.node.witness_detector import PeerAnswer, WitnessDetector, kafka_metadata_evidence, scan_for_kafka_metadata
from kraft.raft.core import Ready
from kraft.raft.voters import VoterSet
from kraft.raft.witness_policy import WitnessMode, WitnessPolicy
from kraft.records.log import MetadataLog
from kraft.records.metadata import encode_metadata_record

from tests.conftest import FIXTURES
from tests.harness import cli
from tests.harness.poll import until_async
KAFKA_40 = FIXTURES / "kafka-4.0-real"
KRAFT_APIS = [1, 18, 52, 53, 54, 55, 59, 60]
KAFKA_APIS = KRAFT_APIS + [19, 62, 63]


def copy_partition(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_real_kafka_controller_log_is_recognised(tmp_path: Path) -> None:
    """Kafka 4.0's controller 1: the latest snapshot holds the features."""
    part = copy_partition(KAFKA_40 / "controller1" / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    mlog = MetadataLog.open(part)
    try:
        found = scan_for_kafka_metadata(mlog)
    finally:
        mlog.close()
    assert found is not None and "metadata.version FeatureLevelRecord" in found and "of snapshot 358-1" in found


def test_a_real_static_kafka_log_without_snapshots_is_recognised(tmp_path: Path) -> None:
    part = copy_partition(KAFKA_40 / "combined-static" / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    for snapshot in part.glob("*.checkpoint"):
        snapshot.unlink()  # the log alone: Kafka's bootstrap records in its first epoch
    mlog = MetadataLog.open(part)
    try:
        found = scan_for_kafka_metadata(mlog)
    finally:
        mlog.close()
    assert found is not None and found.endswith(tuple(f"at offset {i}" for i in range(100)))


def test_evidence_needs_a_whole_kafka_record() -> None:
    from kraft.messages.generated.feature_level_record import FeatureLevelRecord
    from kraft.messages.generated.register_broker_record import RegisterBrokerRecord

    kraft_version = encode_metadata_record(FeatureLevelRecord(name="kraft.version", feature_level=1))
    metadata_version = encode_metadata_record(FeatureLevelRecord(name="metadata.version", feature_level=25))
    broker = encode_metadata_record(RegisterBrokerRecord(broker_id=4))
    assert kafka_metadata_evidence([(0, b"app record"), (1, kraft_version), (2, b"\x01\x00\x00")]) is None
    assert kafka_metadata_evidence([(0, None), (5, metadata_version)]) == \
        "metadata.version FeatureLevelRecord at offset 5"
    assert kafka_metadata_evidence([(9, broker)]) == "RegisterBrokerRecord at offset 9"


def test_the_setting(tmp_path: Path) -> None:
    base = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:0",
            "controller.listener.names": "CONTROLLER", "controller.quorum.voters": "1@127.0.0.1:9093"}
    assert NodeConfig.from_properties(base).witness is WitnessMode.AUTO
    assert NodeConfig.from_properties({**base, "kraft.witness": "false"}).witness is WitnessMode.NEVER
    with pytest.raises(ConfigError, match="kraft.witness must be auto, true or false, not 'yes'"):
        NodeConfig.from_properties({**base, "kraft.witness": "yes"})


async def test_the_detector_logs_once_per_change(caplog: pytest.LogCaptureFixture, autojump_clock: Any) -> None:
    """Voters 1 and 2 unreachable for many rounds: one line; 1 answers as
    Kafka: one reachability line and one decision line; then nothing more
    however long it runs."""
    answers: dict[int, list[int] | None] = {1: None, 2: None}
    probes: list[int] = []
    changed: list[int] = []

    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        probes.append(node_id)
        keys = answers[node_id]
        return None if keys is None else PeerAnswer(tuple(keys), "C", (1, 2, 3))

    detector = WitnessDetector(WitnessPolicy(), 3, voters=lambda: {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)},
                               probe=probe, changed=lambda: changed.append(1), cluster_id="C")
    caplog.set_level(logging.INFO, logger="kraft.node")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(detector.run)
        await trio.sleep(60)
        assert len(probes) > 10 and detector.decision.state == "undecided"
        answers[1] = KAFKA_APIS
        await trio.sleep(60)
        answers[2] = KRAFT_APIS
        await trio.sleep(120)
        nursery.cancel_scope.cancel()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("kraft.witness")]
    assert lines == [
        "kraft.witness: undecided: heard ApiVersions from 0 of the 1 other voter a candidacy needs; "
        "not campaigning until then",
        "kraft.witness: cannot reach any other voter (1, 2) with ApiVersions; retrying with backoff up to 5000 ms",
        "kraft.witness: voters reachable again (heard 1)",
        "kraft.witness: witness: voter 1 advertises Kafka controller APIs kraft lacks (CreateTopics, "
        "BrokerRegistration, BrokerHeartbeat, ...) on the controller listener",
    ]
    assert len(changed) == 2
    # The backoff grew: far fewer probes than rounds of 100 ms.
    assert len([p for p in probes if p == 1]) < 60


async def _run_detector(local_id: int, probe: Any, seconds: float) -> WitnessDetector:
    """A detector of ``local_id`` against voters 1-3 (cluster C), run for
    ``seconds`` of the (autojump) clock; returned for its state."""
    detector = WitnessDetector(WitnessPolicy(), local_id, voters=lambda: {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)},
                               probe=probe, cluster_id="C")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(detector.run)
        await trio.sleep(seconds)
        nursery.cancel_scope.cancel()
    return detector


async def test_an_observer_does_not_warn_that_no_voter_answers(caplog: pytest.LogCaptureFixture,
                                                                autojump_clock: Any) -> None:
    """The quickstart's observer started beside voters that were still
    starting and warned ``cannot reach any other voter``: an observer
    decides nothing, so its detector says nothing about reachability."""
    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        return None

    caplog.set_level(logging.INFO, logger="kraft.node")
    detector = await _run_detector(9, probe, 60)
    assert detector.rounds > 5
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("kraft.witness")] == []


def _core(voters: list[int], offset: int | None) -> Any:
    return SimpleNamespace(pending_voter_change=None, voters=VoterSet.from_ids(voters), voters_offset=offset,
                           high_watermark=None)


def test_an_observer_names_the_voter_set_it_reads_not_an_empty_static_one(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kraft.node")
    telemetry = Telemetry()
    telemetry._voter_changes(Ready(), _core([], None))
    telemetry._voter_changes(Ready(), _core([1, 2, 3], -1))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("voter set")]
    assert lines == ["voter set [1, 2, 3] (bootstrap checkpoint)"]
    caplog.clear()
    static = Telemetry()
    static._voter_changes(Ready(), _core([1, 2], None))
    assert [r.getMessage() for r in caplog.records] == ["voter set [1, 2] (static controller.quorum.voters)"]


def test_current_state_says_witness_for_a_following_or_waiting_witness() -> None:
    from kraft.node.raft_metrics import current_state
    from kraft.raft.roles import Follower, Unattached

    follower = Follower(1, 2, ())
    assert current_state(follower, True, witness=True) == "witness"
    assert current_state(Unattached(1), True, witness=True) == "witness"
    assert current_state(follower, True) == "follower"
    assert current_state(follower, False, witness=True) == "observer"


def test_the_readme_section_properties_are_valid_node_configs() -> None:
    """The 'Beside Kafka' pages (observer, witness): every server.properties
    shown is one a node (and so the tools) accepts, and the witness one is a
    witness in auto mode."""
    pages = Path(__file__).resolve().parents[2] / "docs" / "beside-kafka"
    section = (pages / "observer.md").read_text() + (pages / "witness.md").read_text()
    blocks = section.split("```properties\n")[1:]
    assert len(blocks) == 3
    from kraft.config import parse_properties

    configs = [NodeConfig.from_properties(parse_properties(b.split("```", 1)[0])) for b in blocks]
    observer, kafka, witness = configs
    assert not observer.is_voter_candidate and observer.bootstrap_servers
    assert kafka.voters == witness.voters and witness.is_voter_candidate
    assert witness.witness is WitnessMode.AUTO


async def test_another_cluster_or_a_voter_set_without_us_is_one_line_and_no_evidence(
        caplog: pytest.LogCaptureFixture, autojump_clock: Any) -> None:
    """Bad input: voter 1 answers for another cluster, voter 2 leads and its
    DescribeQuorum voter set does not name this (statically configured) voter 3. Each is said once,
    naming both sides, however often they are asked; neither counts as
    evidence, so voter 3 stays undecided and never campaigns."""
    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        assert describe  # never heard: always the full probe
        if node_id == 1:
            return PeerAnswer(tuple(KAFKA_APIS), "OTHER-cluster", (1, 2, 3))
        return PeerAnswer(tuple(KRAFT_APIS), "C", (1, 2, 4))

    caplog.set_level(logging.INFO, logger="kraft.node")
    detector = await _run_detector(3, probe, 120)
    # Both voters are asked at once: either line may come first.
    errors = sorted(r.getMessage() for r in caplog.records if r.levelno == logging.ERROR)
    assert errors == sorted([
        "kraft.witness: voter 1 at h:1 belongs to cluster OTHER-cluster, this node to cluster C (its "
        "meta.properties): nothing is fetched from it; point controller.quorum.voters at this cluster's "
        "controllers, or format this node with -t OTHER-cluster",
        "kraft.witness: this node is configured as voter 3 of [1, 2, 3] (controller.quorum.voters), but voter 2 "
        "at h:2, the quorum's leader, has the voter set [1, 2, 4], which does not name it: fix controller.quorum.voters, or add this "
        "node with add-controller",
    ])
    assert detector.decision.state == "undecided"


async def test_a_node_of_another_cluster_says_so_once_and_fetches_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Node 9 is formatted for cluster X but pointed at cluster Y's voter:
    one line naming both ids, and nothing in its log (the leader refuses its
    Fetch with INCONSISTENT_CLUSTER_ID, Kafka's ``KafkaRaftClient.validateClusterId``)."""

    from tests.harness.configs import CLUSTER_ID, make_configs
    from tests.harness.inprocess import leader_of, node_config, start

    paths = make_configs(tmp_path, [1], observers=[9])
    other = "AAAAAAAAAAAAAAAAAAAAAg"
    shutil.rmtree(node_config(paths[9]).metadata_log_dir)
    cli.run("storage", "format", "--config", str(paths[9]), "--cluster-id", other, check=True)
    caplog.set_level(logging.INFO, logger="kraft.node")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            voter = await start(nursery, node_config(paths[1]))
            stranger = await start(nursery, node_config(paths[9]))
            await leader_of([voter])
            await voter.append([b"only for cluster " + CLUSTER_ID.encode()])
            await until_async("a 'belongs to cluster' log line",
                              lambda: any("belongs to cluster" in r.getMessage() for r in caplog.records),
                              interval_s=0.05)
            await voter.append([b"more"])
            assert stranger.log is not None and stranger.log.end_offset == 0
            assert stranger.high_watermark == -1
            nursery.cancel_scope.cancel()
    lines = [r.getMessage() for r in caplog.records if "belongs to cluster" in r.getMessage()]
    assert len(lines) == 1 and f"belongs to cluster {CLUSTER_ID}, this node to cluster {other}" in lines[0]


def test_kraft_node_status_prints_the_witness_line() -> None:
    from kraft.tools.node_status import status_text

    status = {"node_id": 3, "cluster_id": "C", "voters": [1, 2, 3], "healthy": True, "health": "ok",
              "ready": True, "readiness": "follower of leader 1 in epoch 2",
              "raft_metrics": {"current-state": "witness", "current-epoch": 2, "current-leader": 1},
              "witness": "witness: kraft.witness=true"}
    lines = status_text(status).splitlines()
    assert lines[0] == "node 3 of cluster C: witness in epoch 2, leader 1"
    assert lines[2] == "kraft.witness: witness: kraft.witness=true"
    del status["witness"]
    assert not any(line.startswith("kraft.witness") for line in status_text(status).splitlines())


def test_a_kip_1170_bootstrap_snapshot_is_no_evidence(tmp_path: Path) -> None:
    """Kafka 4.4's ``kafka-storage format`` writes metadata.version into the
    bootstrap snapshot 0-0 of every controller (KIP-1170), a kraft-only
    quorum's too: only a later snapshot or the log's records say Kafka."""

    meta = tmp_path / "meta"
    result = cli.invoke([
        "storage", "format", "--kafka-version", "4.4", "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qg",
        "--node-id", "1", "--metadata-log-dir", str(meta), "--standalone",
        "--controller-endpoint", "127.0.0.1:9093"])
    assert result.exit_code == 0, result.output
    part = meta / "__cluster_metadata-0"
    assert (part / "00000000000000000000-0000000000.checkpoint").exists()
    mlog = MetadataLog.open(part)
    try:
        assert scan_for_kafka_metadata(mlog) is None
    finally:
        mlog.close()
