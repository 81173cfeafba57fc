"""What the simulation's parts (:mod:`kraft.sim.network`,
:mod:`kraft.sim.faults`) need of the run that hosts them: its clock, seed,
counters, replicas, event queue and the way a replica executes a Ready."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any, Protocol

from kraft.raft.core import Ready
from kraft.sim.sim_config import SimulationConfig
from kraft.sim.invariants import CheckedCluster, Invariants
from kraft.sim.replica import SimNode

__all__ = ["SimulationHost"]


class SimulationHost(CheckedCluster, Protocol):
    config: SimulationConfig
    rng: random.Random
    now_ms: int
    stats: Counter[str]
    invariants: Invariants

    @property
    def nodes(self) -> Iterator[SimNode]: ...

    @property
    def voter_count(self) -> int: ...

    def node(self, node_id: int) -> SimNode: ...

    def schedule(self, at_ms: int, kind: str, *data: Any) -> None:
        """Queue an event (never before now)."""
        ...

    def note(self, text: str) -> None:
        """Add a line to the trace (and the run's digest)."""
        ...

    def execute(self, node: SimNode, ready: Ready) -> None:
        """Execute a Ready on ``node`` as the real shell does."""
        ...

    def crash(self, node: SimNode, why: str) -> None: ...

    def next_payload_id(self) -> int:
        """A fresh number for a record payload or an admin request."""
        ...
