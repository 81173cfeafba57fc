"""The partition nemesis's clean-cut shapes (:meth:`Chaos.partition_directions`) as sets of
dropped directions, checked as graphs: Jepsen's majorities ring gives every
voter a majority and no two voters the same one; a bridge joins two halves
through one node; a one-way cut drops one direction only."""

from __future__ import annotations

from pathlib import Path

from kraft.tools.bench.chaos.netns import Network
from kraft.tools.bench.chaos.run import Chaos, ChaosOptions, ChaosNode


def _chaos(voters: int, seed: int) -> Chaos:
    chaos = Chaos(ChaosOptions(voters=voters, seed=seed), Path("/nonexistent"), lambda line: None)
    for n in range(1, voters + 1):
        chaos.nodes[n] = ChaosNode(n, Path(), Path(), voter=True)
    chaos.nodes[99] = ChaosNode(99, Path(), Path())
    chaos.network = Network(chaos.nodes)  # never created: the shapes are computed, not applied
    return chaos


def _sees(dropped: list[tuple[int, int]], nodes: list[int]) -> dict[int, frozenset[int]]:
    """Each node and the nodes it exchanges packets with both ways (itself included)."""
    cut = set(dropped)
    return {a: frozenset(b for b in nodes if a == b or ((a, b) not in cut and (b, a) not in cut)) for a in nodes}


def test_the_majorities_ring_gives_every_voter_a_different_majority() -> None:
    for seed in range(5):
        chaos = _chaos(5, seed)
        dropped, ring, detail = chaos.partition_directions("majorities-ring")
        views = _sees(dropped, chaos.voter_ids)
        assert all(len(v) == 3 for v in views.values()), (ring, views)
        assert len(set(views.values())) == 5
        assert "majorities ring" in detail and sorted(ring) == [1, 2, 3, 4, 5]
        assert all(99 not in d for d in dropped)  # the observer keeps every link


def test_a_bridge_joins_two_halves_through_one_node() -> None:
    chaos = _chaos(5, 3)
    dropped, (middle,), _ = chaos.partition_directions("bridge")
    views = _sees(dropped, sorted(chaos.nodes))
    assert views[middle] == frozenset(chaos.nodes)
    halves = {views[n] for n in chaos.voter_ids if n != middle}
    assert len(halves) == 2 and all(middle in h for h in halves)


def test_a_one_way_cut_drops_one_direction() -> None:
    dropped, (src, dst), detail = _chaos(3, 1).partition_directions("one-way")
    assert dropped == [(src, dst)] and f"node {dst} hears nothing from node {src}" in detail
