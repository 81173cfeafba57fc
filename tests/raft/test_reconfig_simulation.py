"""Seeded simulation of dynamic quorums (KIP-853): voter changes interleaved
with crashes, partitions, message loss, snapshots and wiped disks, with the
same safety invariants after every event as the static suite -- plus one
voter at a time, at most one uncommitted change per leader -- and
convergence after healing: a leader commits a new record on every replica.

The fast subset runs with every test run; a 300-seed sweep is marked slow.
Replay a seed with ``python -m kraft.sim --seed N --voters V --observers O --reconfig``."""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

from kraft.raft.logops import AppendAsLeader, Batch, VotersControl
from kraft.records.view import VoterEntry
from kraft.sim import SimulationFailure, simulate
from kraft.sim.invariants import InvariantViolation, VoterChangesOneAtATime
from kraft.sim.memlog import MemLog
from kraft.sim.simulation import SimulationConfig
from tests.sim.sweeps import sweep_totals

#: (initial voters, observers) shapes the sweeps cycle through: growing from
#: one voter, shrinking from five, replacing within three.
SHAPES = [(1, 3), (3, 2), (5, 1), (2, 2), (3, 1), (4, 2)]

#: What the reconfiguration sweeps must exercise at least once.
MUST_HAPPEN = [
    "admin-AddRaftVoterResponse-NONE",
    "admin-RemoveRaftVoterResponse-NONE",
    "admin-AddRaftVoterResponse-NOT_LEADER_OR_FOLLOWER",
    "api-versions-requests",
    "disks-replaced",
    "auto-join-AddRaftVoterRequest",
    "update-voter-requests",
    "became-Leader",
    "became-Resigned",
    "crashes",
    "partitions",
    "truncations",
    "snapshot-installs",
    "converged",
]


def run_seed(seed: int) -> Counter[str] | str:
    voters, observers = SHAPES[seed % len(SHAPES)]
    try:
        return simulate(seed, voters=voters, observers=observers, reconfig=True).stats
    except SimulationFailure as failure:
        return str(failure)


def test_fast_subset_of_reconfiguration_seeds() -> None:
    totals = sweep_totals([run_seed(seed) for seed in range(30)])
    missing = [k for k in MUST_HAPPEN if totals[k] == 0]
    assert not missing, f"the fast subset never exercised {missing}"


@pytest.mark.slow
def test_reconfiguration_sweep() -> None:
    seeds = range(5000, 5300)
    workers = max(1, min(os.cpu_count() or 1, 8))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        totals = sweep_totals(list(pool.map(run_seed, seeds, chunksize=10)))
    also = ["auto-join-RemoveRaftVoterRequest", "endpoint-moves", "admin-RemoveRaftVoterResponse-REQUEST_TIMED_OUT"]
    missing = [k for k in MUST_HAPPEN + also if totals[k] == 0]
    assert not missing, f"the sweep never exercised {missing}"


def test_a_dynamic_quorum_without_voter_changes_converges() -> None:
    """The bootstrap voter set alone (kafka-storage format --initial-controllers)."""
    for seed in range(10):
        result = simulate(seed, voters=3, observers=1, dynamic=True)
        assert result.stats["converged"] == 1


def test_the_replay_command_names_the_reconfiguration_mode() -> None:
    config = SimulationConfig(seed=9, voters=3, observers=2, reconfig=True, auto_join=True)
    assert config.replay_command().endswith("--reconfig --auto-join")


# --- the new checker can fail ---------------------------------------------------------------


def _voters(*ids: int) -> VotersControl:
    return VotersControl(tuple(VoterEntry(i, None) for i in ids))


class _Node:
    def __init__(self, log: MemLog) -> None:
        self.node_id = 1
        self.log = log
        self.is_up = False
        self.role = None
        self.high_watermark = None


class _Simulation:
    """What a simulation shows the checkers: one node and the voter count."""

    def __init__(self, node: _Node) -> None:
        self.nodes = [node]
        self.voter_count = 3


def test_two_voters_changed_at_once_are_caught() -> None:
    log = MemLog()
    log.apply(AppendAsLeader(Batch(0, 1, controls=(_voters(1, 2, 3),))))
    VoterChangesOneAtATime().check(_Simulation(_Node(log)))  # type: ignore[arg-type]
    log.apply(AppendAsLeader(Batch(1, 1, controls=(_voters(1, 4, 5),))))
    with pytest.raises(InvariantViolation, match="changes the voters"):
        VoterChangesOneAtATime().check(_Simulation(_Node(log)))  # type: ignore[arg-type]
