"""Trace one raft RPC through an in-process cluster and count how often it
bounces between modules.

``python -m tests.dev.trace_rpc [--runs 5] [--kind fetch|vote|pre-vote] [--show] [--skip-generated]``

The cluster is the seeded simulation (:mod:`kraft.sim.simulation`): three
voters and an observer built from ``RaftCore`` replicas, no faults. In each
run (seed 1, 2, ...) the receiver's ``RaftCore.step`` for one request is
profiled with ``sys.setprofile``:

* ``fetch``: the fifth Fetch a leader answers from a replica that already
  fetched (``fetch_offset > 0``): the steady state, not the catch-up;
* ``vote``: the first Vote request (not a pre-vote) a replica answers;
* ``pre-vote``: the first pre-vote request (KIP-996) a replica answers.

Only the raft side counts: frames of modules under ``kraft.raft``. Property
getters are left out (they read a field; they do not move the work); the
methods dataclasses generate (an envelope's ``__init__``) count, in their
class's module, as in the figures issue 34 started from. ``--skip-generated``
leaves those out too. The
current module is the module of the innermost raft frame, updated on every
call and return; a *stay* is a maximal run of the same current module, and a
*re-entry* a stay in a module that already had one during this step. A
handler that calls a helper module and comes back makes three stays, one of
them a re-entry.

The figures are deterministic for a seed (the simulation replays event for
event). ``tests/dev/test_trace_rpc.py`` pins upper bounds of the medians, so
a change that makes the core bounce more fails there; a change that lowers
them should lower the bounds too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from kraft.raft import events as ev
from kraft.raft import rpcs
from kraft.raft.core import RaftCore
from kraft.sim.simulation import Simulation, SimulationConfig

__all__ = ["KINDS", "Trace", "main", "measure", "trace_run"]

KINDS = ("fetch", "vote", "pre-vote")

#: Which Fetch of the steady state is traced (the first few still follow the
#: election: the leader's first commit, the followers' first flush).
_FETCH_ORDINAL = 5

_RAFT_PACKAGE = "kraft.raft"

#: The file name of code the dataclass decorator generates (``__init__``,
#: ``__eq__``, ...): it stores or compares fields and moves no work.
_GENERATED = "<string>"


@dataclass(frozen=True, slots=True)
class Trace:
    """What one traced step did on the raft side."""

    kind: str
    stays: tuple[str, ...]

    @property
    def stay_count(self) -> int:
        return len(self.stays)

    @property
    def reentries(self) -> int:
        seen: set[str] = set()
        count = 0
        for module in self.stays:
            if module in seen:
                count += 1
            seen.add(module)
        return count


def _property_getters() -> frozenset[CodeType]:
    """The code objects of every property getter in the loaded raft modules."""
    codes: set[CodeType] = set()
    for name, module in list(sys.modules.items()):
        if module is None or not (name == _RAFT_PACKAGE or name.startswith(_RAFT_PACKAGE + ".")):
            continue
        for value in vars(module).values():
            if not isinstance(value, type):
                continue
            for attr in vars(value).values():
                if isinstance(attr, property) and attr.fget is not None and hasattr(attr.fget, "__code__"):
                    codes.add(attr.fget.__code__)
    return frozenset(codes)


class _Recorder:
    """A ``sys.setprofile`` function collecting the raft modules' stays."""

    def __init__(self, count_generated: bool = True) -> None:
        self.getters = _property_getters()
        #: Count the methods dataclasses generate (False: ``--skip-generated``).
        self.count_generated = count_generated
        self.stays: list[str] = []
        # The module of each open raft frame (None: not a counted frame).
        self._stack: list[str | None] = []

    def _current(self) -> str | None:
        return next((m for m in reversed(self._stack) if m is not None), None)

    def _note(self) -> None:
        current = self._current()
        if current is not None and (not self.stays or self.stays[-1] != current):
            self.stays.append(current)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            counted = (module == _RAFT_PACKAGE or module.startswith(_RAFT_PACKAGE + ".")) \
                and frame.f_code not in self.getters \
                and (self.count_generated or frame.f_code.co_filename != _GENERATED)
            self._stack.append(module if counted else None)
            self._note()
        elif event == "return":
            if self._stack:
                self._stack.pop()
            self._note()


def _wanted(kind: str, inbound: ev.Inbound) -> bool:
    if not isinstance(inbound, ev.InboundRequest):
        return False
    message = inbound.message
    if kind == "fetch":
        return isinstance(message, rpcs.FetchRequest) and message.fetch_offset > 0
    if kind == "vote":
        return isinstance(message, rpcs.VoteRequest) and not message.pre_vote
    return isinstance(message, rpcs.VoteRequest) and message.pre_vote


@contextmanager
def _tracing_step(kind: str, found: list[Trace], count_generated: bool) -> Iterator[None]:
    """``RaftCore.step`` profiled for the request of ``kind`` picked by the
    module docstring's rule; every other step runs untouched."""
    original: Callable[[RaftCore, int, ev.Inbound], None] = RaftCore.step
    wanted_ordinal = _FETCH_ORDINAL if kind == "fetch" else 1
    seen = 0

    def step(core: RaftCore, now_ms: int, inbound: ev.Inbound) -> None:
        nonlocal seen
        if found or not _wanted(kind, inbound):
            return original(core, now_ms, inbound)
        if kind == "fetch" and not core.is_leader:
            return original(core, now_ms, inbound)
        seen += 1
        if seen < wanted_ordinal:
            return original(core, now_ms, inbound)
        recorder = _Recorder(count_generated)
        sys.setprofile(recorder)
        try:
            original(core, now_ms, inbound)
        finally:
            sys.setprofile(None)
        found.append(Trace(kind, tuple(recorder.stays)))

    RaftCore.step = step  # type: ignore[method-assign]
    try:
        yield
    finally:
        RaftCore.step = original  # type: ignore[method-assign]


def trace_run(kind: str, seed: int, count_generated: bool = True) -> Trace:
    """The trace of one request of ``kind`` in the fault-free run of ``seed``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    found: list[Trace] = []
    config = SimulationConfig(seed=seed, voters=3, observers=1, chaos_ms=0, heal_ms=20_000, legacy_voters=0)
    with _tracing_step(kind, found, count_generated):
        Simulation(config).run()
    if not found:
        raise RuntimeError(f"seed {seed}: no {kind} request was answered")
    return found[0]


def measure(kind: str, runs: int = 5, count_generated: bool = True) -> tuple[float, float]:
    """Medians of (stays, re-entries) over ``runs`` seeds."""
    traces = [trace_run(kind, seed, count_generated) for seed in range(1, runs + 1)]
    return (statistics.median(t.stay_count for t in traces), statistics.median(t.reentries for t in traces))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.dev.trace_rpc", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="seeds 1..RUNS (default 5)")
    parser.add_argument("--kind", choices=KINDS, action="append", help="the request to trace (default: all)")
    parser.add_argument("--show", action="store_true", help="print each run's sequence of stays")
    parser.add_argument("--skip-generated", action="store_true",
                        help="leave out the methods dataclasses generate (an envelope's __init__) too")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    print(f"{'request':<9} {'stays':>6} {'re-entries':>11}   (raft side, medians of {args.runs} runs)")
    for kind in args.kind or KINDS:
        traces = [trace_run(kind, seed, not args.skip_generated) for seed in range(1, args.runs + 1)]
        stays = statistics.median(t.stay_count for t in traces)
        reentries = statistics.median(t.reentries for t in traces)
        print(f"{kind:<9} {stays:>6g} {reentries:>11g}   "
              f"runs: {' '.join(f'{t.stay_count}/{t.reentries}' for t in traces)}")
        if args.show:
            for seed, t in enumerate(traces, start=1):
                print(f"  seed {seed}: " + " > ".join(m.removeprefix('kraft.raft.') for m in t.stays))
    return 0


if __name__ == "__main__":
    sys.exit(main())
