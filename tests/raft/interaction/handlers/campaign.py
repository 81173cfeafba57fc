"""``campaign ID``: let the replica's election timer (a follower's fetch
timer) fire -- its clock jumps to that deadline, the others' stay -- and
process its Ready: KIP-996 makes it a Prospective asking for pre-votes.
kraft has no "campaign now" call (Kafka's ``KafkaRaftClient`` has none
either): a timeout is the only way a voter starts an election."""

from __future__ import annotations

from kraft.raft.roles import Follower, Leader
from tests.raft.interaction.env import InteractionEnv
from tests.raft.interaction.handlers.process_ready import ready_of
from tests.raft.transcripts import Args, TranscriptError


def handle(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    core = env.up(node_id).core
    assert core is not None
    role = core.role
    if isinstance(role, Leader):
        raise TranscriptError(f"node {node_id} leads: it has no election timer")
    deadline = role.fetch_deadline_ms if isinstance(role, Follower) else getattr(role, "election_deadline_ms", None)
    if deadline is None:
        raise TranscriptError(f"node {node_id} ({type(role).__name__}) has no election timer running")
    env.clocks[node_id] = max(env.clocks[node_id], deadline)
    return ready_of(env, node_id)
