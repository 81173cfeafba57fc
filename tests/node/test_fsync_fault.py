"""Fail-stop on a failing fsync, with real node processes.

Three ``kraft node start`` voters (demo load, ack logs; see
:mod:`tests.harness.processes`) run with the LD_PRELOAD fsync shim
(``fixtures/faults/fsync_fault.c``, compiled here with the system C
compiler). Once the quorum commits, the shim is armed for one voter's
metadata directory: its next fsync fails with EIO. As Kafka's
``ProcessTerminatingFaultHandler`` does (``Exit.halt(1)`` after one
"Encountered fatal fault" line), that voter must exit with status 1 after
one line naming the file, the operation and the errno -- and nothing it
wrote after its last successful flush may count: the two others go on
committing, and every record any process ever acknowledged as committed is
in the committed history and on every voter's disk at its offset.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kraft.tools.bench.fsync_fault import build_fsync_shim
from tests.harness.configs import make_configs
from tests.harness.inprocess import node_config, start
from tests.harness.poll import until_async
from tests.harness.processes import NodeProcess
from tests.node.test_multiprocess import OBSERVER, VOTERS, Observer, check_files, stop_and_collect, terminate_all


@pytest.mark.slow
@pytest.mark.parametrize("victim_role", ["leader", "follower"])
async def test_failing_fsync_stops_the_voter_and_the_others_keep_committing(tmp_path: Path, victim_role: str) -> None:
    shim = build_fsync_shim(tmp_path / "shim")
    if isinstance(shim, str):
        pytest.skip(shim)
    paths = make_configs(tmp_path, list(VOTERS), observers=[OBSERVER])
    procs = {i: NodeProcess(i, paths[i], tmp_path, append_rate=300, env=shim.env()) for i in VOTERS}
    log_dir = {i: Path(node_config(paths[i]).metadata_log_dir).resolve() for i in VOTERS}
    try:
        with trio.fail_after(180):
            async with trio.open_nursery() as nursery:
                for p in procs.values():
                    p.start()
                obs = Observer(await start(nursery, node_config(paths[OBSERVER])))
                nursery.start_soon(obs.follow)
                nursery.start_soon(obs.watch_leaders)
                leader = await obs.leader()
                await obs.commits(60)
                leader = await obs.leader()
                victim = leader if victim_role == "leader" else next(i for i in VOTERS if i != leader)

                shim.arm(log_dir[victim])
                await until_async("not procs[victim].alive", lambda: not procs[victim].alive, interval_s=0.05)
                proc = procs[victim].proc
                assert proc is not None and proc.returncode == 1, procs[victim].output()[-3000:]
                output = procs[victim].output()
                fatal = [line for line in output.splitlines() if "Encountered fatal fault" in line]
                assert len(fatal) == 1, output[-3000:]
                assert "fsync of " + str(log_dir[victim]) in fatal[0] and "EIO" in fatal[0], fatal[0]
                assert "Traceback" not in output

                # The two others commit without it.
                if victim_role == "leader":
                    await obs.leader(not_in=(None, victim))
                await obs.commits(60)

                # A healthy disk again: it restarts, reconciles its log with
                # the leader's (its unflushed tail may be gone) and catches up.
                shim.disarm()
                procs[victim].start()
                await obs.commits(60)
                committed, hwm, observed_leaders = await stop_and_collect(procs, obs)
                nursery.cancel_scope.cancel()
    finally:
        shim.disarm()
        terminate_all(procs)
    check_files(procs, log_dir, obs, committed, hwm, observed_leaders)
