"""``partition ID ...``: cut every link between the named replicas and the
rest, both ways (messages in flight across the cut are lost on delivery);
``heal``: restore every link."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def handle(env: InteractionEnv, args: Args) -> list[str]:
    inside = set(env.chosen(args.words))
    outside = [n for n in env.node_ids if n not in inside]
    cut = []
    for a in sorted(inside):
        for b in outside:
            env.network.blocked |= {(a, b), (b, a)}
            cut.append(f"{a}<->{b}")
    return [f"cut: {' '.join(cut)}"]


def heal(env: InteractionEnv, args: Args) -> list[str]:
    env.network.blocked.clear()
    return []
