"""The node's side of remembering the voters' ApiVersions answers
(kraft/node/witness_detector.py, kraft/node/raft_manager.py): the detector writes
kraft's ``voter-api-versions`` file when an answer changes (a failed write
is one line, retried), and a damaged file at start is one line naming it,
treated as nothing heard -- never a crash."""

from __future__ import annotations

import logging
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from kraft.node.witness_detector import PeerAnswer, WitnessDetector, remembered_answers
from kraft.raft.witness_policy import WitnessPolicy
from kraft.records.log import metadata_partition_dir
from kraft.records.voter_api_versions import (
    VOTER_API_VERSIONS_FILE,
    RememberedAnswer,
    read_voter_api_versions,
    write_voter_api_versions,
)
from tests.harness import cli
from tests.harness.poll import until_async
from tests.node.test_witness_node import KAFKA_APIS, KRAFT_APIS


async def test_the_detector_records_each_change_once_and_retries_a_failed_write(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, autojump_clock: Any) -> None:
    """The directory is missing at first (a real failed write: one ERROR
    line however many rounds retry), then there: the answers are written,
    and written again only when voter 1's answer changes."""
    answers: dict[int, list[int]] = {1: KRAFT_APIS, 2: KRAFT_APIS}
    writes: list[tuple[RememberedAnswer, ...]] = []
    partition = tmp_path / "__cluster_metadata-0"

    def save(remembered: tuple[RememberedAnswer, ...]) -> None:
        write_voter_api_versions(partition, remembered)
        writes.append(remembered)

    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        return PeerAnswer(tuple(answers[node_id]), "C", (1, 2, 3))

    policy = WitnessPolicy()
    policy.found_in_log("RegisterBrokerRecord at offset 3")
    detector = WitnessDetector(policy, 3, voters=lambda: {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)},
                               probe=probe, cluster_id="C", save=save)
    caplog.set_level(logging.INFO, logger="kraft.node")

    def failures() -> list[str]:
        return [r.getMessage() for r in caplog.records if "could not record" in r.getMessage()]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(detector.run)
        # The writes run in a thread, and the autojump clock runs on while
        # one does: wait for what they did, not for a time.
        await until_async("a failed write", failures, interval_s=1)
        await trio.sleep(30)  # rounds go on retrying
        assert detector.decision.state == "voter" and writes == []
        partition.mkdir()
        await until_async("a write", lambda: writes, interval_s=1)
        assert read_voter_api_versions(partition) == (RememberedAnswer(1, None, ()), RememberedAnswer(2, None, ()))
        await trio.sleep(100)  # refreshed every 30 s, the same answers: no write
        assert len(writes) == 1
        answers[1] = KAFKA_APIS
        await until_async("a second write", lambda: len(writes) == 2, interval_s=1)
        await trio.sleep(100)
        nursery.cancel_scope.cancel()
    assert len(writes) == 2
    assert [a.answered_as for a in read_voter_api_versions(partition)] == ["kafka-controller", "kraft"]
    [failure] = failures()
    assert failure.startswith("kraft.witness: could not record the voters' ApiVersions answers (")
    assert str(partition) in failure
    assert sum("answers are recorded again" in r.getMessage() for r in caplog.records) == 1


async def test_a_detector_seeded_from_the_file_does_not_rewrite_the_same_answers(autojump_clock: Any) -> None:
    writes: list[object] = []

    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        return PeerAnswer(tuple(KRAFT_APIS), "C", (1, 2, 3)) if node_id == 1 else None

    policy = WitnessPolicy()
    policy.remember([RememberedAnswer(1, None, ()), RememberedAnswer(2, None, ())])
    detector = WitnessDetector(policy, 3, voters=lambda: {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)},
                               probe=probe, cluster_id="C", save=writes.append)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(detector.run)
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert writes == []


async def test_a_stop_in_the_middle_of_a_round_records_the_answers_heard_in_it(
        tmp_path: Path, autojump_clock: Any) -> None:
    """Voter 1 answers at once, voter 2 never does (its probe hangs): the
    round never ends, so no round-end write happens. The node stops: voter
    1's answer is in the file for the next start all the same."""
    async def probe(node_id: int, address: tuple[str, int], describe: bool) -> PeerAnswer | None:
        if node_id == 2:
            await trio.sleep_forever()
        return PeerAnswer(tuple(KRAFT_APIS), "C", (1, 2, 3))

    policy = WitnessPolicy()
    detector = WitnessDetector(policy, 3, voters=lambda: {1: ("h", 1), 2: ("h", 2), 3: ("h", 3)},
                               probe=probe, cluster_id="C", save=partial(write_voter_api_versions, tmp_path))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(detector.run)
        await trio.sleep(60)
        assert policy.heard_from() == {1}
        assert read_voter_api_versions(tmp_path) == ()  # the round has not ended
        nursery.cancel_scope.cancel()
    assert read_voter_api_versions(tmp_path) == (RememberedAnswer(1, None, ()),)


@pytest.mark.parametrize("damage", [b"{not json", b'{"version": 0, "voters": [{"id": "one"}]}'])
async def test_a_damaged_file_is_one_line_and_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                      damage: bytes) -> None:
    """A real node over a directory whose file is damaged: it starts, says
    once which file it ignores and why, and leads its one-voter quorum."""
    from tests.harness.configs import make_configs
    from tests.harness.inprocess import leader_of, node_config, start

    paths = make_configs(tmp_path, [1])
    config = node_config(paths[1])
    partition = metadata_partition_dir(config.metadata_log_dir)
    partition.mkdir(parents=True, exist_ok=True)
    path = partition / VOTER_API_VERSIONS_FILE
    path.write_bytes(damage)
    caplog.set_level(logging.INFO, logger="kraft.node")
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            node = await start(nursery, config)
            await leader_of([node])
            await node.append([b"after a damaged voter-api-versions"])
            nursery.cancel_scope.cancel()
    lines = [r for r in caplog.records if VOTER_API_VERSIONS_FILE in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert lines[0].getMessage().startswith(f"kraft.witness: ignoring {path}: ")
    assert "treated as no voter heard before this start" in lines[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


def test_the_node_reads_what_it_wrote(tmp_path: Path) -> None:
    """The wiring's reader: absent file, a written one, a damaged one."""
    assert remembered_answers(tmp_path) == ()
    write = partial(write_voter_api_versions, tmp_path)
    write([RememberedAnswer(2, None, ("CreateTopics",))])
    assert remembered_answers(tmp_path) == (RememberedAnswer(2, None, ("CreateTopics",)),)
    (tmp_path / VOTER_API_VERSIONS_FILE).write_text("[]")
    assert remembered_answers(tmp_path) == ()


async def _scoped_node(config: Any, advertised: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """A node in a cancel scope of its own, so that a test can stop just it."""
    from kraft.node.fault import RaisingFaultHandler
    from kraft.node.node import KraftNode

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            node = KraftNode(config, fault_handler=RaisingFaultHandler(), advertised_apis=advertised)
            await nursery.start(node.run)
            task_status.started((node, scope))


async def test_a_voter_id_reused_by_a_kafka_controller_makes_the_kraft_leader_resign(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A kraft-only quorum of three; voter 3 is replaced, under the same id,
    by a node that answers ApiVersions as a real Kafka 4.0 controller (a new
    directory, ``kraft.witness=false``: it leads as Kafka's would). What
    voters 1 and 2 remembered of 3 (a kraft node) gives way to the live
    answer: the kraft leader resigns naming 3, both become witnesses, the
    file says 3 is a Kafka controller -- and 3 ends up leading (after a
    hand-over epoch: its new log is behind theirs)."""
    import shutil

    from tests.harness.configs import CLUSTER_ID, make_configs
    from tests.harness.inprocess import leader_of, node_config
    from tests.node.kafka_played import KAFKA_4_0_CONTROLLER_APIS

    paths = make_configs(tmp_path, [1, 2, 3])
    caplog.set_level(logging.INFO, logger="kraft")
    with trio.fail_after(180):
        async with trio.open_nursery() as nursery:
            nodes = {i: await nursery.start(_scoped_node, node_config(paths[i]), None) for i in (1, 2, 3)}
            leader = await leader_of(n for n, _ in nodes.values())
            await leader.append([b"a kraft-only quorum"])
            for i in (1, 2):
                part = metadata_partition_dir(node_config(paths[i]).metadata_log_dir)
                await until_async(f"voter {i} to remember the other voters as kraft",
                                  lambda: [(a.voter_id, a.answered_as) for a in read_voter_api_versions(part)] == [
                                      (j, "kraft") for j in (1, 2, 3) if j != i], interval_s=0.05)
            nodes[3][1].cancel()
            # Node 3's replacement: a new directory, answering as Kafka does.
            shutil.rmtree(node_config(paths[3]).metadata_log_dir)
            cli.run("storage", "format", "--config", str(paths[3]), "--cluster-id", CLUSTER_ID, check=True)
            with open(paths[3], "a") as f:
                f.write("kraft.witness=false\n")
            kraft_leader = await leader_of(nodes[i][0] for i in (1, 2))
            kafka, _ = await nursery.start(_scoped_node, node_config(paths[3]), KAFKA_4_0_CONTROLLER_APIS)
            await until_async("kafka.role == 'leader'", lambda: kafka.role == "leader", interval_s=0.05)
            # Each records the live answer (written after the probe round that heard it).
            for i in (1, 2):
                part = metadata_partition_dir(node_config(paths[i]).metadata_log_dir)
                await until_async(f"voter {i} to remember voter 3 as a Kafka controller",
                                  lambda: {a.voter_id: a.answered_as for a in read_voter_api_versions(part)}[3]
                                  == "kafka-controller", interval_s=0.05)
            nursery.cancel_scope.cancel()
    resigned = [r.getMessage() for r in caplog.records
                if "-> Resigned" in r.getMessage() and "witness: voter 3 advertises Kafka controller APIs" in r.getMessage()]
    assert resigned, [r.getMessage() for r in caplog.records if "Resigned" in r.getMessage()]
    assert kraft_leader.config.node_id in (1, 2)
