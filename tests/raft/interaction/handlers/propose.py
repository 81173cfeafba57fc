"""``propose ID [count=N]``: the embedding program hands the leader N
records (``RaftCore.append``); they reach the log on its next Ready."""

from __future__ import annotations

from kraft.raft.errors import LocalRaftError
from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def handle(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    count = args.take("count", int, 1)
    core = env.up(node_id).core
    assert core is not None
    records = [f"r{env.next_payload_id()}".encode() for _ in range(count)]
    try:
        last = core.append(env.clocks[node_id], records)
    except LocalRaftError as e:
        return [f"refused: {type(e).__name__}: {e}"]
    return [f"appended up to offset {last}"]
