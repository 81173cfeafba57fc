"""Deterministic simulation of a KRaft cluster, and test harnesses for the core.
May import kraft.node, kraft.raft, kraft.records, kraft.wire and kraft.messages; never kraft.tools.

* :func:`simulate` / :class:`SimulationConfig` — seeded whole-cluster runs
  with an in-memory network, crashes and invariant checks after every event
  (``python -m kraft.sim --seed N`` replays one);
* :class:`~kraft.sim.memlog.MemLog` — the in-memory log;
* :class:`~kraft.sim.disklog.DiskLog` and :class:`~kraft.sim.disk.DiskModel`
  — the node's on-disk log for ``storage="disk"`` runs, and what a crash
  leaves of its files;
* :class:`~kraft.sim.context.RaftTestContext` — drive one core by hand in tests.
"""

from kraft.sim.context import RaftTestContext
from kraft.sim.memlog import MemLog
from kraft.sim.simulation import SimulationConfig, SimulationFailure, SimulationResult, simulate

__all__ = [
    "MemLog",
    "RaftTestContext",
    "SimulationConfig",
    "SimulationFailure",
    "SimulationResult",
    "simulate",
]
