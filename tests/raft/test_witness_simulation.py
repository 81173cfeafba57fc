"""Witness voters among normal voters in the seeded simulation: a witness
leads only hand-over epochs (the simulation fails the run the moment one
leads otherwise, or appends a record in one, or a hand-over epoch is not
followed by a non-witness leader), elections
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


def _run_auto(seed: int, scenario: str | None) -> Counter[str] | str:
    """Witnesses by ``kraft.witness=auto`` (the others answered ApiVersions
    as Kafka controllers); ``behind-survivor`` (kraft/sim/behind_survivor.py):
    the voters that may lead other than the leader are cut off, the leader
    dies for good, they come back behind the witnesses."""
    # A behind survivor needs two voters that may lead (one dies for good).
    shapes = [s for s in SHAPES if s[0] - len(s[2]) >= 2] if scenario else SHAPES
    voters, observers, witnesses = shapes[seed % len(shapes)]
    try:
        result = simulate(seed, voters=voters, observers=observers, witnesses=witnesses,
                          witness_detection="auto", scenario=scenario)
    except SimulationFailure as failure:
        return str(failure)
    return result.stats


def _sweep_auto(seeds: range, scenario: str | None) -> Counter[str]:
    workers = min(2, os.cpu_count() or 1)
    with ProcessPoolExecutor(workers) as pool:
        results = list(pool.map(_run_auto, seeds, [scenario] * len(seeds)))
    return sweep_totals(results)


def test_behind_survivors_are_handed_the_log_and_lead() -> None:
    """Liveness where it used to stop: the surviving voters are behind the
    witness and the leader never returns; a non-witness leads within the
    bound (kraft/sim/behind_survivor.py), every hand-over epoch ends with a
    non-witness leader, and every committed record survives (the
    simulation's invariants, after every event)."""
    totals = _sweep_auto(range(0, 16), "behind-survivor")
    assert totals["converged"] == 16
    assert totals["handover-epochs"] > 0 and totals["became-Resigned"] > 0


def test_auto_detected_witnesses_under_random_faults() -> None:
    totals = _sweep_auto(range(300, 316), None)
    assert totals["converged"] == 16 and totals["became-Leader"] > 0


@pytest.mark.slow
def test_handover_sweep_300_seeds() -> None:
    totals = _sweep_auto(range(5000, 5200), "behind-survivor")
    assert totals["converged"] == 200 and totals["handover-epochs"] > 0
    assert _sweep_auto(range(6000, 6100), None)["converged"] == 100


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
