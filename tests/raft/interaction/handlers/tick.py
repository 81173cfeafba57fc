"""``tick ms=N [ID ...]``: N virtual milliseconds pass on the given replicas'
clocks (all: the default). Nothing runs yet: the timers that expired fire
at the replicas' next ``process-ready`` (or ``stabilise``)."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def handle(env: InteractionEnv, args: Args) -> list[str]:
    ms = args.need("ms")
    for node_id in env.chosen(args.words):
        env.clocks[node_id] += ms
    return []
