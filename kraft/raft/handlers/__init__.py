"""The raft core's RPC handlers, one module per family, as Kafka keeps them.
May import the rest of kraft.raft (never its core), kraft.records views, kraft.wire errors, kraft.messages.

As ``KafkaRaftClient``'s handle* methods and its ``AddVoterHandler``,
``RemoveVoterHandler``, ``UpdateVoterHandler``:

* :mod:`.election` -- Vote, BeginQuorumEpoch, EndQuorumEpoch;
* :mod:`.fetch` -- Fetch, FetchSnapshot;
* :mod:`.membership` -- AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853).

Each family sees the core only through its own context
(:mod:`.common`: ``ElectionContext``, ``ReplicationContext``,
``MembershipContext``), whose quorum view offers reads and that family's few
changes; :class:`kraft.raft.core.RaftCore` implements them all. The RPC
registry (:mod:`kraft.raft.rpcs`) names each RPC's handler, and the epoch
gate (:mod:`kraft.raft.epoch_gate`) runs before any of them, so handlers
work in the receiver's current epoch.
"""
