"""A kraft-only quorum whose log holds Kafka-shaped records loses a voter for
good, and its two survivors restart: they must elect a leader again.

Three voter processes (tests/node/metadata_writer.py: a KraftNode with
``kraft.witness=auto``, the default, whose leader writes real metadata
records -- RegisterBrokerRecord, ``metadata.version`` FeatureLevelRecord,
topics...). They start with an empty log, so each decides by ApiVersions
alone: ``voter: voters ... answered ApiVersions as kraft nodes``. Voter 3 is
then killed -9 and never comes back; 1 and 2 are stopped and restarted. At
the restart their logs hold Kafka controller metadata, which makes a voter
a witness until every other voter has answered as a kraft node -- and 3
never answers again. Before kraft's ``voter-api-versions`` file the
survivors stayed witnesses without a leader for ever; now they remember 3
as a kraft node, say so, and elect a leader that commits again."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from kraft.node.witness_detector import scan_for_kafka_metadata
from kraft.programs.observer import DiscoveryError, discover
from kraft.records.log import MetadataLog, metadata_partition_dir
from kraft.records.voter_api_versions import read_voter_api_versions
from tests.harness.configs import load, make_configs
from tests.harness.poll import until_async

REPO = Path(__file__).resolve().parents[2]
SURVIVORS = (1, 2)
DEAD = 3
#: Bounds that only end a hung test: voter processes take tens of seconds to
#: start on two loaded cores. Without the fix the survivors never elect, and
#: ELECT_S ends the test naming that.
HANG_S = 600
ELECT_S = 240


class Writers:
    """Metadata-writing voter processes, their output in ``voter-N.log``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = make_configs(root, [*SURVIVORS, DEAD], extra={"controller.quorum.append.linger.ms": "5"})
        self.ports = {i: load(p).listeners[0].port for i, p in self.paths.items()}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.starts: dict[int, int] = {}

    def start(self, node_id: int) -> None:
        self.starts[node_id] = self.starts.get(node_id, 0) + 1
        out = open(self.log_path(node_id), "ab")  # noqa: SIM115 - the child owns it
        out.write(f"=== start {self.starts[node_id]}\n".encode())
        out.flush()
        self.procs[node_id] = subprocess.Popen(
            [sys.executable, "-m", "tests.node.metadata_writer", "--config", str(self.paths[node_id]),
             "--rate", "100"], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        out.close()

    def log_path(self, node_id: int) -> Path:
        return self.root / f"voter-{node_id}.log"

    def output(self, node_id: int, start: int) -> str:
        """What the process printed in its ``start``-th run."""
        text = self.log_path(node_id).read_text(errors="replace")
        return text.split(f"=== start {start}\n", 1)[1].split("=== start ", 1)[0]

    def kill(self, node_id: int) -> None:
        self.procs[node_id].send_signal(signal.SIGKILL)
        self.procs[node_id].wait()

    def stop(self, node_id: int) -> None:
        proc = self.procs[node_id]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def partition(self, node_id: int) -> Path:
        return metadata_partition_dir(load(self.paths[node_id]).metadata_log_dir)


async def leader_and_hwm(writers: Writers, ids: tuple[int, ...]) -> tuple[int, int]:
    """The leader and high watermark the voters ``ids`` report, asked until
    there is a leader (bound by the caller)."""
    async def known() -> tuple[int, int] | None:
        try:
            view = await discover([("127.0.0.1", writers.ports[i]) for i in ids], timeout_ms=1000,
                                  retry_for_ms=2000)
        except DiscoveryError:
            await trio.sleep(0.3)  # 0.5 s in all before asking again after a failed discovery
            return None
        if view.leader_id is not None and view.high_watermark is not None and view.high_watermark > 0:
            return view.leader_id, view.high_watermark
        return None

    return await until_async(f"a leader among voters {ids}", known, interval_s=0.2)


def kafka_metadata_in(partition: Path) -> str | None:
    mlog = MetadataLog.open(partition)
    try:
        return scan_for_kafka_metadata(mlog)
    finally:
        mlog.close()


async def wait_for_line(writers: Writers, node_id: int, start: int, text: str) -> None:
    await until_async("text in writers.output(node_id, start)",
                      lambda: text in writers.output(node_id, start), interval_s=0.2)


@pytest.mark.slow
async def test_the_survivors_of_a_kraft_quorum_with_kafka_shaped_records_elect_again(tmp_path: Path) -> None:
    writers = Writers(tmp_path)
    try:
        with trio.fail_after(HANG_S):
            for node_id in (*SURVIVORS, DEAD):
                writers.start(node_id)
            # Enough records that Kafka-shaped ones are among them.
            async def enough() -> bool:
                return (await leader_and_hwm(writers, (*SURVIVORS, DEAD)))[1] >= 150

            await until_async("150 records committed", enough, interval_s=0.5)
            for node_id in SURVIVORS:
                await wait_for_line(writers, node_id, 1, "kraft.witness: voter: voters ")
                # Each survivor has recorded the dead voter as a kraft node.
                await until_async(f"node {node_id} to remember the dead voter as kraft",
                                  lambda: any(a.voter_id == DEAD and a.answered_as == "kraft"
                                              for a in read_voter_api_versions(writers.partition(node_id))),
                                  interval_s=0.2)
            writers.kill(DEAD)  # for good
            for node_id in SURVIVORS:
                writers.stop(node_id)
            for node_id in SURVIVORS:
                found = kafka_metadata_in(writers.partition(node_id))
                assert found is not None, f"no Kafka-shaped record in voter {node_id}'s log: the test proves nothing"
            for node_id in SURVIVORS:
                writers.start(node_id)
            try:
                with trio.fail_after(ELECT_S):
                    leader, hwm = await leader_and_hwm(writers, SURVIVORS)
            except trio.TooSlowError:
                said = {i: [line for line in writers.output(i, 2).splitlines() if "kraft.witness" in line]
                        for i in SURVIVORS}
                raise AssertionError(f"no leader among the survivors {SURVIVORS} in {ELECT_S} s: {said}") from None
            assert leader in SURVIVORS
            # And it commits: the writer's next operations.
            async def commits_on() -> bool:
                return (await leader_and_hwm(writers, SURVIVORS))[1] > hwm

            await until_async("the survivors to commit on", commits_on, interval_s=0.2)
            # A survivor whose probes of the other one failed while it was
            # still starting asks again only after its backoff (up to
            # witness.MAX_BACKOFF_MS): it may have voted for the leader while
            # still undecided. Its decision line follows that next round.
            for node_id in SURVIVORS:
                await wait_for_line(writers, node_id, 2, "kraft.witness: voter: ")
    finally:
        for node_id in writers.procs:
            writers.stop(node_id)
    for node_id in SURVIVORS:
        assert "kraft.witness: voter: voters " in writers.output(node_id, 1)
        restarted = writers.output(node_id, 2)
        # Log evidence (found above) no longer makes a witness of a survivor.
        assert "kraft.witness: witness" not in restarted
        said = [line for line in restarted.splitlines() if "kraft.witness: " in line]
        decided = [line for line in said if "kraft.witness: voter: " in line]
        assert decided, said
        assert decided[0].endswith(
            f"(voter {DEAD} before this start, as remembered in voter-api-versions; not heard since): a kraft "
            "quorum (kraft.node)"), decided
        assert "Traceback" not in restarted
