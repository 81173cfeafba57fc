"""``crash ID``: the replica loses its memory and every unflushed log
write; messages to it are lost. ``restart ID``: it starts again from its
``quorum-state`` and flushed log, in a new incarnation (messages addressed
to the old one are lost)."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def crash(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    node = env.up(node_id)
    node.crash(None)
    return []


def restart(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    node = env.node(node_id)
    return [f"> {node_id} starting", *("  " + line for line in env.start(node))]
