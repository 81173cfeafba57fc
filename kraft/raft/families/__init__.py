"""The handler families: what each family of raft RPCs shares, and the narrow views its handlers get.
May import the rest of kraft.raft (never its core, never the RPC modules), kraft.records views, kraft.wire errors, kraft.messages.

Named for the families, not the handlers: no handler lives here.
It was ``handlers/`` until issue 45.

Each RPC's handlers live in its module (``kraft/raft/rpcs/<name>_rpc.py``),
as ``KafkaRaftClient``'s handleXxxRequest/handleXxxResponse pairs; what
several RPCs of a family need is here, as Kafka's ``AddVoterHandler``,
``RemoveVoterHandler`` and ``UpdateVoterHandler`` share their checks:

* :mod:`.election` -- Vote, BeginQuorumEpoch, EndQuorumEpoch: the tally, the successors' backoff;
* :mod:`.replication` -- Fetch, FetchSnapshot: the follower's high watermark, the snapshot id check;
* :mod:`.membership` -- AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853):
  the admission checks, the voter change in flight, the kraft.version upgrade.

Each family sees the core only through its own context
(:mod:`.common`: ``ElectionContext``, ``ReplicationContext``,
``MembershipContext``), whose quorum view offers reads and that family's few
changes; :class:`kraft.raft.core.RaftCore` implements them all. The epoch
gate (:mod:`kraft.raft.epoch_gate`) runs before any handler, so handlers
work in the receiver's current epoch. Nothing here names an RPC's message
class: those belong to the RPC modules, which import this package.
"""
