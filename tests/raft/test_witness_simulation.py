"""Witness voters among normal voters in the seeded simulation: a witness
never leads (the simulation fails the run the moment one does), elections
still complete after every fault (each run must converge: a leader commits a
new record on every replica), and every invariant holds after every event.

The shapes mirror a Kafka quorum with kraft witnesses: two "Kafka" voters and
one witness (the two-site deployment), three and two, and a lone leader-able
voter with two witnesses (it must win every election with their votes)."""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from unittest import mock

import pytest

from kraft.sim import SimulationFailure, simulate
from tests.sim.sweeps import sweep_totals

#: (voters, observers, witnesses) shapes the sweep cycles through.
SHAPES: list[tuple[int, int, tuple[int, ...]]] = [
    (3, 1, (3,)),
    (5, 1, (4, 5)),
    (3, 0, (1, 2)),
    (4, 1, (1,)),
]


def _run(seed: int, dynamic: bool) -> Counter[str] | str:
    voters, observers, witnesses = SHAPES[seed % len(SHAPES)]
    try:
        result = simulate(seed, voters=voters, observers=observers, witnesses=witnesses, dynamic=dynamic)
    except SimulationFailure as failure:
        return str(failure)
    return result.stats


def _sweep(seeds: range, dynamic: bool) -> Counter[str]:
    workers = min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_run, seeds, [dynamic] * len(seeds)))
    return sweep_totals(results)


def test_witnesses_never_lead_and_elections_complete() -> None:
    totals = _sweep(range(0, 24), dynamic=False)
    for must in ("became-Leader", "became-Prospective", "became-Resigned", "crashes", "partitions", "converged"):
        assert totals[must] > 0, must


def test_witnesses_in_a_dynamic_quorum() -> None:
    totals = _sweep(range(100, 112), dynamic=True)
    assert totals["became-Leader"] > 0 and totals["converged"] == 12


@pytest.mark.slow
def test_witness_sweep_200_seeds() -> None:
    _sweep(range(1000, 1200), dynamic=False)
    _sweep(range(2000, 2100), dynamic=True)


def test_the_check_fails_a_run_whose_witness_leads() -> None:
    """The check can fail: with the policy taken away, a node named as a
    witness campaigns like any voter, and the run fails when it leads."""
    with mock.patch("kraft.sim.replica.WitnessPolicy.forced", return_value=None):
        with pytest.raises(SimulationFailure, match="witness 1 became leader"):
            simulate(7, voters=1, observers=1, witnesses=(1,))


def test_a_lone_witness_leaves_the_quorum_without_a_leader() -> None:
    """The only voter as a witness: nobody may lead, and the simulation says
    so (liveness) rather than passing."""
    with pytest.raises(SimulationFailure, match="liveness"):
        simulate(7, voters=1, observers=1, witnesses=(1,), chaos_ms=2_000, heal_ms=5_000)
