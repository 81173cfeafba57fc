"""``stabilise [ID ...]``: process every Ready and deliver every message
among the given replicas (all: the default) until nothing is left to do, as
etcd's ``stabilize``. Clocks stand still meanwhile, so no timer fires that
had not already: a follower's Fetch stays parked at its leader."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.interaction.handlers.deliver_msgs import receive
from tests.raft.interaction.handlers.process_ready import ready_of
from tests.raft.transcripts import Args, TranscriptError

#: Rounds before a cluster that never quiets is reported (a livelock).
MAX_ROUNDS = 30


def stabilise(env: InteractionEnv, node_ids: list[int]) -> list[str]:
    out: list[str] = []
    for _ in range(MAX_ROUNDS):
        progress = False
        for node_id in node_ids:
            if env.node(node_id).core is not None:
                lines = ready_of(env, node_id)
                progress = progress or bool(lines)
                out.extend(lines)
        for node_id in node_ids:
            lines = receive(env, node_id)
            progress = progress or bool(lines)
            out.extend(lines)
        env.check_invariants()
        if not progress:
            return out
    raise TranscriptError(f"no fixed point after {MAX_ROUNDS} rounds")


def handle(env: InteractionEnv, args: Args) -> list[str]:
    return stabilise(env, env.chosen(args.words))
