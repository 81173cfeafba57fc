"""``process-ready [ID ...]``: poll each replica at its own clock (its timers
fire) and execute the Ready as its shell must: persist the election state,
write the log, send, then report the commit and role changes."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def ready_of(env: InteractionEnv, node_id: int) -> list[str]:
    """``> ID handling Ready`` and its lines, or nothing for an empty Ready."""
    lines = env.process_ready(node_id)
    return [f"> {node_id} handling Ready", *("  " + line for line in lines)] if lines else []


def handle(env: InteractionEnv, args: Args) -> list[str]:
    out: list[str] = []
    for node_id in env.chosen(args.words):
        if env.node(node_id).core is not None:
            out.extend(ready_of(env, node_id))
    return out
