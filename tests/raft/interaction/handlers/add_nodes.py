"""``add-nodes N [voters=1,2,3] [dynamic] [legacy=3] [QuorumConfig fields]``:
start N new replicas (ids after the last one) of a static quorum, or with
``dynamic`` a KIP-853 one (the voters formatted with ``--initial-controllers``,
every replica with a directory id and a listener, the later ones bootstrap
from the first ones); the voters default to the first command's nodes, the
others are observers.
``legacy`` nodes answer a pre-vote with UNSUPPORTED_VERSION (Vote v0/v1).
The quorum settings are Kafka's defaults but ``append-linger-ms=0``, so a
``propose`` reaches the log on the leader's next Ready."""

from __future__ import annotations

import dataclasses

from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.sim.invariants import Invariants
from kraft.sim.replica import SimNode, directory_id
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


def _voter_set(voter_ids: list[int], dynamic: bool) -> VoterSet:
    if not dynamic:
        return VoterSet.from_ids(voter_ids)
    return VoterSet.of(
        VoterNode(ReplicaKey(i, directory_id(i, 0)), (Endpoint("CONTROLLER", f"node-{i}", 9093),), (0, 1))
        for i in voter_ids
    )


def handle(env: InteractionEnv, args: Args) -> list[str]:
    [count] = [int(w) for w in args.words if w.isdigit()] or [0]
    first = max(env.node_ids, default=0) + 1
    ids = list(range(first, first + count))
    voters = args.take("voters", _ints)
    legacy = set(args.take("legacy", _ints, []))
    quorum = _quorum_config(args)
    dynamic = "dynamic" in args.words
    if not env.node_ids:
        voter_ids = voters or ids
        env.config = dataclasses.replace(env.config, voters=len(voter_ids), quorum=quorum, dynamic=dynamic)
        env.voter_set = _voter_set(voter_ids, dynamic)
        env.invariants = Invariants(dynamic=dynamic)
    elif voters is not None or dynamic or quorum != _quorum_config(Args([], {})):
        raise TranscriptError("voters=, dynamic and the quorum settings belong to the first add-nodes")
    if env.config.is_dynamic:
        bootstrap = tuple(sorted(key.id for key in env.voter_set.voter_keys))
        nodes = [SimNode(i, env.voter_set, env.config, False, peers=tuple(p for p in bootstrap if p != i))
                 for i in ids]
    else:
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
