"""Kafka's v2 record batches, compression and the on-disk ``__cluster_metadata`` partition, byte-compatible with Kafka.
May import kraft.messages only (never kraft.wire, the raft core, the node or the tools).

The partition: segments, indexes, leader epoch cache, snapshots, state files.

Modules, one job each: ``batch`` (batch/record codec), ``compression``,
``control`` and ``metadata`` (record values -> generated message classes),
``segment`` + ``index`` (segment files), ``epoch_cache``
(leader-epoch-checkpoint), ``snapshot``, ``state_files`` (quorum-state,
meta.properties, partition.metadata), ``recovery``, ``log`` (MetadataLog,
the LogView the raft core reads), ``bootstrap`` (what ``storage format``
writes), ``view`` (the LogView protocol).
"""
