"""The raft core's RPC handlers, one module per family, as Kafka keeps them.
May import the rest of kraft.raft (never its core), kraft.records views, kraft.wire errors, kraft.messages.

As ``KafkaRaftClient``'s handle* methods and its ``AddVoterHandler``,
``RemoveVoterHandler``, ``UpdateVoterHandler``:

* :mod:`.election` -- Vote, BeginQuorumEpoch, EndQuorumEpoch;
* :mod:`.fetch` -- Fetch, FetchSnapshot;
* :mod:`.membership` -- AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter (KIP-853).

Each handler sees the core only through the small ``Protocol`` its module
declares; :class:`kraft.raft.core.RaftCore` implements them and dispatches.
The epoch gate runs before any handler (``RaftCore.step``), so handlers work
in the receiver's current epoch.
"""
