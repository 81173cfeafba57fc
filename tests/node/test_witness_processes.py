"""A kraft witness beside two "Kafka" controllers, as separate processes.

The Kafka side is played by kraft nodes that answer ApiVersions exactly as a
real Kafka 4.0 controller did (started through
:data:`tests.node.kafka_played.LAUNCHER`, whose table
tests/node/test_kafka_played.py checks against a real answer from
``fixtures/wire/kafka-4.0-controller-frames.jsonl``) and run with
``kraft.witness=false`` so they lead as Kafka controllers do. Node 3 is a
kraft voter with default settings.

The witness starts first (the issue's failure: kraft started faster and won
epoch 1), yet never leads; killing either Kafka-played controller (kill -9)
leaves the other elected with the witness's vote; killing the witness changes
nothing (same leader, same epoch, commits go on), and restarted it is a
witness at once, from the answers it remembers (voter-api-versions)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio

from tests.harness import cli
from tests.harness.configs import make_configs
from tests.harness.inprocess import node_config, start
from tests.harness.poll import until_async
from tests.harness.processes import NodeProcess
from tests.node.kafka_played import LAUNCHER as KAFKA_PLAYED
from tests.node.test_multiprocess import Observer

KAFKA = (1, 2)
WITNESS = 3
OBSERVER = 9


async def caught_up(node_id: int, leader_config: Path) -> None:
    """Until the leader's DescribeQuorum shows ``node_id`` with lag 0."""
    port = next(line.split("CONTROLLER://127.0.0.1:")[1] for line in leader_config.read_text().splitlines()
                if line.startswith("listeners="))
    async def lag_0() -> bool:
        done = await cli.run_async("quorum", "--bootstrap-controller", f"127.0.0.1:{port}", "describe",
                                   "--replication")
        rows = [line.split("\t") for line in done.stdout.decode().splitlines()[1:]]
        return any(r[0].strip() == str(node_id) and r[3].strip() == "0" and r[6].strip() == "Follower" for r in rows)

    with trio.fail_after(60):
        await until_async(f"node {node_id} with lag 0", lag_0, interval_s=0.2)


@pytest.mark.slow
async def test_kafka_controllers_lead_and_the_witness_never_does(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [*KAFKA, WITNESS], observers=[OBSERVER])
    for node_id in KAFKA:
        with open(paths[node_id], "a") as f:
            f.write("kraft.witness=false\n")
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=50,
                            launcher=KAFKA_PLAYED if i in KAFKA else ("-m", "kraft.cli")) for i in (*KAFKA, WITNESS)}
    try:
        with trio.fail_after(240):
            async with trio.open_nursery() as nursery:
                # The witness first: it must not campaign before it has heard
                # the others' ApiVersions.
                procs[WITNESS].start()
                await until_async("undecided line", lambda: "kraft.witness: undecided" in procs[WITNESS].output(), timeout_s=60)
                for i in KAFKA:
                    procs[i].start()
                obs = Observer(await start(nursery, node_config(paths[OBSERVER])))
                nursery.start_soon(obs.follow)
                nursery.start_soon(obs.watch_leaders)

                first = await obs.leader()
                assert first in KAFKA
                await obs.commits(20)
                await until_async("witness line",
                                  lambda: "kraft.witness: witness: voters 1, 2 advertise Kafka controller APIs kraft "
                                          "lacks (CreateTopics" in procs[WITNESS].output(), timeout_s=60)
                # kraft quorum describe --status: Kafka's lines, then the witness and why.
                port = next(line.split("CONTROLLER://127.0.0.1:")[1] for line in paths[1].read_text().splitlines()
                            if line.startswith("listeners="))
                # The leader names the witness once the witness's decision has
                # reached it (its next Fetch): ask until it does, within a bound
                # that holds on a loaded machine (30 s did not at load 11, where
                # each describe process alone takes seconds to start).
                async def describe() -> subprocess.CompletedProcess[bytes] | None:
                    done = await cli.run_async("quorum", "--bootstrap-controller", f"127.0.0.1:{port}", "describe",
                                               "--status")
                    return done if done.returncode != 0 or len(done.stdout.decode().splitlines()) == 9 else None

                described = await until_async("the leader to name the witness", describe, timeout_s=120,
                                              interval_s=0.5)
                lines = described.stdout.decode().splitlines()
                assert described.returncode == 0 and len(lines) == 9, described
                assert lines[-1].startswith('Witnesses:              [{"id": 3, "reason": "voters 1, 2 advertise '
                                            'Kafka controller APIs kraft lacks'), lines

                # Killing the witness changes nothing: same leader and epoch,
                # commits go on with the two Kafka controllers.
                raft_driver = obs.node.raft_driver
                assert raft_driver is not None
                before = raft_driver.leader
                procs[WITNESS].kill()
                await obs.commits(40)
                assert raft_driver.leader == before
                procs[WITNESS].start()
                # Restarted: a witness at once from what it remembers
                # (kraft's voter-api-versions file), never undecided, then
                # from the live answers once it heard both.
                remembered = "(voters 1, 2 before this start, as remembered in voter-api-versions; not heard since)"
                await until_async("witness again",
                                  lambda: remembered in procs[WITNESS].output()
                                  and "on the controller listener (kraft.node)" in
                                  procs[WITNESS].output().rsplit(remembered, 1)[1], timeout_s=60)
                assert procs[WITNESS].output().count("kraft.witness: undecided") == 1
                await obs.commits(20)

                # Quiesce, so that no record is on the witness and not on the
                # surviving Kafka controller when the leader dies (then the
                # witness would lead a hand-over epoch first, the scenario of
                # test_witness_handover_processes.py), then kill -9 the Kafka
                # leader: the other one is elected with the witness's vote.
                for i in KAFKA:
                    await procs[i].stop_load_async()
                await obs.quiet()
                procs[first].kill()
                second = await obs.leader(not_in=(None, first))
                assert second in KAFKA and second != first

                # And the other way round, once the restarted one caught up.
                procs[first].start()
                await caught_up(first, paths[second])
                procs[second].kill()
                third = await obs.leader(not_in=(None, second))
                assert third == first
                nursery.cancel_scope.cancel()
    finally:
        for p in procs.values():
            p.terminate()
    leaders = {leader for _, leader in obs.leaders if leader is not None}
    assert WITNESS not in leaders and leaders <= set(KAFKA), obs.leaders
    witness_log = procs[WITNESS].output()
    assert "Candidate" not in witness_log and "-> Leader" not in witness_log
    # One line per decision change (state or reason; two starts, the second
    # from memory then live), never one per probe: no line repeats the one before.
    decisions = [line.split("INFO ", 1)[1] for line in witness_log.splitlines()
                 if "kraft.witness: undecided" in line or "kraft.witness: witness" in line]
    assert 4 <= len(decisions) <= 6, decisions
    assert all(a != b for a, b in zip(decisions, decisions[1:])), decisions
