"""Named scenarios: ``kraft bench chaos --scenario NAME`` runs one in place
of the random schedule, then heals, checks and reports as any run.

A scenario is an async callable taking the run (:class:`~.run.Chaos`)::

    async def my_scenario(chaos: Chaos) -> None:
        leader = chaos.leader()                  # node id or None
        await chaos.partition("isolate-leader", 6.0)
        await chaos.kill(chaos.voter_ids[0], 2.0)
        await chaos.progress("after my faults")  # 5 more commits, or ChaosError

What it may use: ``chaos.voter_ids``, ``chaos.observer_ids``,
``chaos.witness_id``, ``chaos.leader()``, ``chaos.rng`` (seeded by
``--seed``), ``chaos.say(line)``, ``chaos.options``, and the faults, each
logged at its start and end: ``kill(node, down_s)``, ``pause(node, hold_s)``,
``power_loss([nodes], down_s, tear=False)``, ``partition(shape, hold_s)``
(``isolate-leader``, ``isolate-follower``, ``split``, ``bridge``,
``one-way``, ``majorities-ring``, ``flapping``, ``flaky``; needs
``--nemesis partition``), ``progress(what)``,
``begin(kind, nodes, detail)`` / ``end(fault)`` to log a fault of its own.

Register one in a line, by callable or by ``"module:attribute"`` (imported
only when the scenario runs)::

    register_scenario("my-scenario", "my_package.my_module:my_scenario")
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["SCENARIOS", "Scenario", "load_scenario", "register_scenario", "scenario_summary"]

#: Takes the run (a :class:`kraft.tools.bench.chaos.run.Chaos`; typed loosely so
#: that this registry does not import the run, which imports it).
Scenario = Callable[[Any], Awaitable[None]]

#: name -> the scenario, or "module:attribute" naming it.
SCENARIOS: dict[str, Scenario | str] = {}


def register_scenario(name: str, scenario: Scenario | str) -> None:
    SCENARIOS[name] = scenario


def load_scenario(name: str) -> Scenario:
    try:
        found = SCENARIOS[name]
    except KeyError:
        raise KeyError(f"no scenario {name!r} (known: {', '.join(sorted(SCENARIOS)) or 'none'})") from None
    if isinstance(found, str):
        module, _, attribute = found.partition(":")
        loaded: Any = getattr(importlib.import_module(module), attribute)
        return loaded
    return found


def scenario_summary(name: str) -> str:
    """What the scenario does, in the first sentence of its docstring (the
    run's header says it); its name when it has none."""
    doc = " ".join((load_scenario(name).__doc__ or "").split())
    first = doc.split(". ")[0].rstrip(".")
    return f"{first}." if first else name


async def isolated_leader(chaos: Any) -> None:
    """Cut the leader off while it has clients, twice; the rest must elect and commit."""
    for _ in range(2):
        await chaos.progress("before isolating the leader")
        await chaos.partition("isolate-leader", 8.0)
    await chaos.progress("after the last heal")


async def partition_during_restart(chaos: Any) -> None:
    """Overlapping faults: a voter is killed, and while it is down the leader is cut off."""
    import trio

    await chaos.progress("before the faults")
    victim = next(v for v in chaos.voter_ids if v != chaos.leader())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(chaos.kill, victim, 6.0)
        await trio.sleep(1.0)
        nursery.start_soon(chaos.partition, "isolate-leader", 8.0)
    await chaos.progress("after the faults")


register_scenario("isolated-leader", isolated_leader)
register_scenario("partition-during-restart", partition_during_restart)
