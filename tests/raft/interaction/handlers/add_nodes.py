"""``add-nodes N [voters=1,2,3] [legacy=3] [seed=S] [QuorumConfig fields]``:
start N new replicas (ids after the last one) of a static quorum; the
voters default to the first command's nodes, the others are observers.
``legacy`` nodes answer a pre-vote with UNSUPPORTED_VERSION (Vote v0/v1).
The quorum settings are Kafka's defaults but ``append-linger-ms=0``, so a
``propose`` reaches the log on the leader's next Ready."""

from __future__ import annotations

import dataclasses

from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.voters import VoterSet
from kraft.sim.replica import SimNode
from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args, TranscriptError


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _quorum_config(args: Args) -> QuorumConfig:
    overrides = {"append_linger_ms": 0}
    for f in dataclasses.fields(QuorumConfig):
        raw = args.take(f.name.replace("_", "-"), int)
        if raw is not None:
            overrides[f.name] = raw
    return QuorumConfig(**overrides)


def handle(env: InteractionEnv, args: Args) -> list[str]:
    [count] = [int(w) for w in args.words] or [0]
    first = max(env.node_ids, default=0) + 1
    ids = list(range(first, first + count))
    voters = args.take("voters", _ints)
    legacy = set(args.take("legacy", _ints, []))
    quorum = _quorum_config(args)
    if not env.node_ids:
        env.voter_set = VoterSet.from_ids(voters or ids)
        env.config = dataclasses.replace(env.config, voters=len(env.voter_set), quorum=quorum)
    elif voters is not None or quorum != _quorum_config(Args([], {})):
        raise TranscriptError("voters= and the quorum settings belong to the first add-nodes")
    nodes = [SimNode(node_id, env.voter_set, env.config, node_id in legacy) for node_id in ids]
    for node in nodes:  # all there before the first one sends
        node.format(None)
        env.add(node)
    for node in nodes:  # all listening before the first one sends
        env.boot(node)
    out: list[str] = []
    for node in nodes:
        out.append(f"> {node.node_id} starting")
        out.extend("  " + line for line in env.initialize(node))
    return out
