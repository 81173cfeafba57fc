"""Deterministic simulation of a KRaft cluster.
May import kraft.node, kraft.raft, kraft.records, kraft.wire and kraft.messages; never kraft.tools.

* :func:`simulate` / :class:`~kraft.sim.sim_config.SimulationConfig` — seeded
  whole-cluster runs (``python -m kraft.sim --seed N`` replays one). By concern:
  :mod:`~kraft.sim.sim_config` (knobs, result, failure), :mod:`~kraft.sim.simulation`
  (the event loop, executing Readys, workload, healing), :mod:`~kraft.sim.replica`
  (one replica and its storage), :mod:`~kraft.sim.network` (delivery and loss),
  :mod:`~kraft.sim.faults` (the chaos schedule), :mod:`~kraft.sim.host` (what
  those parts may use of the run), :mod:`~kraft.sim.invariants` (the checks);
* :class:`~kraft.sim.memlog.MemLog` — the in-memory log;
* :class:`~kraft.sim.disklog.DiskLog` and :class:`~kraft.sim.disk.DiskModel`
  — the node's on-disk log for ``storage="disk"`` runs, and what a crash
  (or a failing fsync) leaves of its files.

The tests' single-replica harness (drive one core by hand) is
tests/harness/raft_context.py, outside the package.
"""

from kraft.sim.memlog import MemLog
from kraft.sim.simulation import SimulationConfig, SimulationFailure, SimulationResult, simulate

__all__ = [
    "MemLog",
    "SimulationConfig",
    "SimulationFailure",
    "SimulationResult",
    "simulate",
]
