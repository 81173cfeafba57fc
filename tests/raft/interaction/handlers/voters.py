"""``add-voter ID via=LEADER`` / ``remove-voter ID via=LEADER`` (dynamic
quorums): an admin client's AddRaftVoter / RemoveRaftVoter (KIP-853) to a
replica; its answer goes to ``admin`` on a later Ready."""

from __future__ import annotations

from kraft.raft.rpcs import AddRaftVoterRequest, RemoveRaftVoterRequest
from kraft.sim.sim_config import CLUSTER_ID
from tests.raft.interaction.env import InteractionEnv
from tests.raft.transcripts import Args


def add_voter(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    new = env.node(node_id)
    request = AddRaftVoterRequest(cluster_id=CLUSTER_ID, voter_key=new.replica_key, listeners=new.endpoints)
    return [env.admin(args.need("via"), request)]


def remove_voter(env: InteractionEnv, args: Args) -> list[str]:
    [node_id] = env.chosen(args.words)
    request = RemoveRaftVoterRequest(cluster_id=CLUSTER_ID, voter_key=env.node(node_id).replica_key)
    return [env.admin(args.need("via"), request)]
