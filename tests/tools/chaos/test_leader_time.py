"""The chaos run's "time without a leader": what the watch counts from the
nodes' own role lines, over a power cut and a kill from a real ``--load
kafka --nemesis kill,pause,power-loss --seed 3`` run (the lines below are
its node logs'; the Kafka brokers' RaftManager logs agreed: no leader from
the cut of node 2, leader of epoch 2, until node 2 won epoch 4). The
figure was 28.6 s of 31 s of faults, right: a majority of the voters was
down, paused or still starting for most of it (the brokers append without a
controller leader, so the producer's acknowledgements went on). It counted
the wait after the last fault too; now that is apart, and the part of the
time with no majority up is said beside it.

Each node is a real process (``sleep``, killed, stopped and continued as
the faults do to a node) writing the real lines to its log, read as a run
reads them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraft.tools.bench.chaos.run import Chaos, ChaosNode, ChaosOptions, run_figures
from kraft.tools.bench.chaos.run_history import History

START = {
    1: ["[2026-12-02 14:06:20,999] INFO raft role Unattached in epoch 0 at start-up, leader unknown (kraft.node)",
        "[2026-12-02 14:06:22,637] INFO raft role Candidate -> Leader in epoch 1, leader 1: won election: 2 of 3 "
        "votes (kraft.node)"],
    2: ["[2026-12-02 14:06:21,398] INFO raft role Unattached in epoch 0 at start-up, leader unknown (kraft.node)",
        "[2026-12-02 14:06:22,739] INFO raft role Unattached -> Follower in epoch 1, leader 1: node 1 named leader 1 "
        "of epoch 1 (kraft.node)"],
    3: ["[2026-12-02 14:06:21,355] INFO raft role Unattached in epoch 0 at start-up, leader unknown (kraft.node)",
        "[2026-12-02 14:06:22,695] INFO raft role Unattached -> Follower in epoch 1, leader 1: node 1 named leader 1 "
        "of epoch 1 (kraft.node)"],
}
#: Node 1 paused: node 2 wins epoch 2.
EPOCH_2 = {
    2: ["[2026-12-02 14:07:43,168] INFO raft role Prospective -> Candidate in epoch 2, leader unknown: won pre-vote: "
        "2 of 3 votes (kraft.node)",
        "[2026-12-02 14:07:43,260] INFO raft role Candidate -> Leader in epoch 2, leader 2: won election: 2 of 3 "
        "votes (kraft.node)"],
    3: ["[2026-12-02 14:07:43,411] INFO raft role Unattached -> Follower in epoch 2, leader 2: node 2 named leader 2 "
        "of epoch 2 (kraft.node)"],
}
#: Node 1 continued (node 2's power is cut meanwhile).
RESUMED = {
    1: ["[2026-12-02 14:07:45,188] INFO raft role Leader -> Resigned in epoch 1, leader 1: check-quorum: no fetch "
        "from a majority of voters in 3000 ms (kraft.node)",
        "[2026-12-02 14:07:45,339] INFO raft role Unattached -> Follower in epoch 2, leader 2: node 2 named leader 2 "
        "of epoch 2 (kraft.node)",
        "[2026-12-02 14:07:48,222] INFO raft role Follower -> Prospective in epoch 2, leader 2: fetch timeout after "
        "2000 ms (kraft.node)"],
}
#: Restarted: node 2 wins epoch 4 (after an epoch 3 nobody won).
EPOCH_4 = {
    2: ["[2026-12-02 14:08:03,403] INFO raft role Resigned in epoch 2 at start-up, leader 2 (kraft.node)",
        "[2026-12-02 14:08:05,220] INFO raft role Resigned -> Unattached in epoch 3, leader unknown: no new leader "
        "after resigning (kraft.node)",
        "[2026-12-02 14:08:13,443] INFO raft role Candidate -> Leader in epoch 4, leader 2: won election: 2 of 3 "
        "votes (kraft.node)"],
    3: ["[2026-12-02 14:08:12,346] INFO raft role Follower in epoch 2 at start-up, leader 2 (kraft.node)",
        "[2026-12-02 14:08:13,512] INFO raft role Unattached -> Follower in epoch 4, leader 2: node 2 named leader 2 "
        "of epoch 4 (kraft.node)"],
}


@pytest.fixture
def chaos(tmp_path: Path) -> Iterator[Chaos]:
    run = Chaos(ChaosOptions(nemesis=("kill", "pause", "power-loss"), observers=0), tmp_path, lambda _: None)
    run.history = History(tmp_path / "history.jsonl")
    for n in (1, 2, 3):
        run.nodes[n] = ChaosNode(n, tmp_path / f"server-{n}.properties", tmp_path / f"node-{n}.log", voter=True,
                                 log_dir=tmp_path / f"metadata-{n}")
        _start(run.nodes[n])
    yield run
    for node in run.nodes.values():
        node.kill_signal()
        node.wait_stopped()
    run.history.close()


def _start(node: ChaosNode) -> None:
    """A process in the node's place, as :meth:`ChaosNode.start` leaves it (its role: starting)."""
    node.proc = subprocess.Popen(["sleep", "600"])
    node.paused = node.expected_down = False
    node.role = "starting"


def _log(chaos: Chaos, lines: dict[int, list[str]]) -> None:
    for n, said in lines.items():
        with open(chaos.nodes[n].out, "a") as f:
            f.write("".join(line + "\n" for line in said))
    chaos._scan()


def _kill(chaos: Chaos, n: int) -> None:
    chaos.nodes[n].kill_signal()
    chaos.nodes[n].wait_stopped()
    chaos._scan()


def test_leaderless_time_is_the_faults_and_says_when_no_majority_was_up(chaos: Chaos) -> None:
    _log(chaos, START)
    assert chaos.leader() == 1 and chaos.voters_up() == 3
    chaos.account(1.0)
    chaos.nodes[1].stop_signal()  # pause: the others elect
    chaos.account(2.0)  # leader 1 paused: nobody commits (a majority up, electing)
    _log(chaos, EPOCH_2)
    assert chaos.leader() == 2
    chaos.account(1.0)
    _kill(chaos, 2)  # the power cut of the leader
    chaos.nodes[1].continue_signal()
    _log(chaos, RESUMED)
    assert chaos.leader() is None and chaos.voters_up() == 2
    chaos.account(2.0)  # a majority up, electing (a pre-vote in epoch 2)
    _kill(chaos, 3)
    assert chaos.voters_up() == 1
    chaos.account(3.0)  # no majority up: no election can win
    _start(chaos.nodes[2])
    _start(chaos.nodes[3])
    chaos.account(4.0)  # restarted, still starting: no majority up yet
    chaos.faults_over = True
    chaos.account(1.5)  # the last fault ended: the recovery, counted apart
    _log(chaos, EPOCH_4)
    assert chaos.leader() == 2 and chaos.nodes[2].epoch == 4
    chaos.account(5.0)
    figures = run_figures(chaos)
    assert figures["time_without_leader_s"] == 11.0
    assert figures["time_without_majority_s"] == 7.0  # after the second kill, and the start-ups
    assert figures["time_without_leader_after_faults_s"] == 1.5
    assert figures["leader_changes"] == 2  # epochs 2 and 4 after the first
