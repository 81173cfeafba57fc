"""``resign ID``: the leader steps down (``RaftCore.resign``, Kafka's
``RaftClient.resign``) on its next Ready, with EndQuorumEpoch to the voters."""

from __future__ import annotations

from tests.raft.interaction.env import InteractionEnv
from tests.raft.interaction.handlers.process_ready import ready_of
from tests.raft.transcripts import Args


def handle(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    core = env.up(node_id).core
    assert core is not None
    core.resign(core.epoch)
    return ready_of(env, node_id)
