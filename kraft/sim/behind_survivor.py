"""The ``behind-survivor`` schedule: the failure a witness's hand-over epoch
exists for (kraft/raft/handover.py), with seeded timings.

1. ``cut`` (2-4 s in): once a non-witness leads, every other voter that may
   lead is cut off from everyone (a long GC pause, a slow disk, a restart)
   while the leader and the witnesses go on committing records;
2. ``kill`` (1-4 s later): the leader crashes and never comes back;
3. ``resume`` (0-2 s later): the cut-off voters return, behind the witnesses.

From ``resume`` on a majority is connected, so a non-witness must lead within
:data:`ELECTION_BOUND_MS` (liveness), which only a hand-over epoch makes
possible; the simulation's own checks add that every hand-over epoch ends
with a non-witness leader and that every committed record survives.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from typing import Any, Protocol

from kraft.raft.roles import Leader
from kraft.raft.voters import VoterSet
from kraft.sim.sim_config import SimulationConfig
from kraft.sim.replica import SimNode


class Simulation(Protocol):
    """What the schedule uses of :class:`kraft.sim.simulation.Simulation`."""

    config: SimulationConfig
    rng: random.Random
    now_ms: int
    network: Any
    voter_set: VoterSet
    stats: Counter[str]
    dead_forever: set[int]
    survivor_back_ms: int | None
    first_leader_after_back_ms: int | None

    @property
    def nodes(self) -> Iterable[SimNode]: ...
    def node(self, node_id: int) -> SimNode: ...
    def schedule(self, at_ms: int, kind: str, *data: Any) -> None: ...
    def note(self, text: str) -> None: ...
    def crash(self, node: SimNode, why: str) -> None: ...

#: Virtual time from the survivors' return to a non-witness leader with a
#: high watermark: Kafka's timeouts (fetch 2 s, election 1-2 s) several times
#: over, for pre-vote rounds lost to dropped messages.
ELECTION_BOUND_MS = 20_000


def schedule(sim: Simulation) -> None:
    if not sim.config.witnesses or len(_leaders(sim)) < 2:
        raise ValueError("the behind-survivor scenario needs a witness and two voters that may lead "
                         "(one dies for good)")
    sim.schedule(sim.rng.randint(2000, 4000), "scenario", "cut")


def _leaders(sim: Simulation) -> list[int]:
    return [i for i in sim.voter_set.voter_ids if i not in sim.config.witnesses]


def step(sim: Simulation, stage: str, *data: int) -> None:
    match stage:
        case "cut":
            leader = next((n for n in sim.nodes if isinstance(n.role, Leader) and n.high_watermark is not None
                           and n.node_id not in sim.config.witnesses), None)
            if leader is None:
                sim.schedule(sim.now_ms + 500, "scenario", "cut")
                return
            cut = [i for i in _leaders(sim) if i != leader.node_id]
            everyone = [n.node_id for n in sim.nodes]
            for i in cut:
                for other in everyone:
                    if other != i:
                        sim.network.blocked.update({(i, other), (other, i)})
            sim.note(f"behind-survivor: voters {cut} cut off while leader {leader.node_id} commits")
            sim.schedule(sim.now_ms + sim.rng.randint(1000, 4000), "scenario", "kill", leader.node_id, *cut)
        case "kill":
            leader_id, *cut = data
            node: SimNode = sim.node(leader_id)
            sim.dead_forever.add(leader_id)
            sim.crash(node, "killed for good (behind-survivor)")
            sim.schedule(sim.now_ms + sim.rng.randint(0, 2000), "scenario", "resume", *cut)
        case "resume":
            for i in data:
                sim.network.blocked.difference_update({link for link in sim.network.blocked if i in link})
            sim.survivor_back_ms = sim.now_ms
            sim.note(f"behind-survivor: voters {list(data)} are back, behind the witnesses")
        case _:
            raise AssertionError(f"unknown behind-survivor stage {stage}")


def problem_at_convergence(sim: Simulation, leader: SimNode) -> str | None:
    """At convergence: the leader is a non-witness, elected within the bound
    after the survivors came back; else what went wrong."""
    if sim.config.scenario != "behind-survivor":
        return None
    if leader.node_id in sim.config.witnesses or leader.node_id in sim.dead_forever:
        return f"behind-survivor: node {leader.node_id} leads at the end"
    back, elected = sim.survivor_back_ms, sim.first_leader_after_back_ms
    if back is None:
        return "behind-survivor: the schedule never ran to the end"
    if elected is None or elected - back > ELECTION_BOUND_MS:
        return (f"liveness: no non-witness leader within {ELECTION_BOUND_MS} ms of the survivors' "
                f"return at t={back} (first at {elected})")
    sim.stats["behind-survivor-elected-ms"] += elected - back
    return None
