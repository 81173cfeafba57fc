"""The Kafka controller (Kafka's ``QuorumController``), a sans-IO state machine over the metadata image.

May import ``kraft.image``, ``kraft.records``, ``kraft.wire`` error codes and api keys, and ``kraft.messages``; never trio, a clock or a socket.

The controller RPCs the tools send keep their client side here, beside the answer
(``describe_cluster_rpc``, ``update_features_rpc``, ``controller_unregistration``):
versions, request, reading of the answer; :mod:`kraft.admin_client` sends them.

What Apache Kafka's controller does for Kafka 4.x brokers and their
clients, over kraft's metadata image (:mod:`kraft.image`).

It never does I/O and never reads a clock: the node's driver
(:mod:`kraft.node.controller_server`) feeds it committed records, leader
changes, requests and the time, and carries out what it returns -- records
to append, and the responses to send once those records are committed.

One module per Kafka control manager: ``cluster_control`` (brokers,
registrations, heartbeats, fencing), ``replication_control`` (topics,
partitions, ISR, leader election, reassignments), ``partition_change``
(``PartitionChangeBuilder``), ``placement`` (``StripedReplicaPlacer``),
``feature_control``, ``configs``, ``acls``, ``scram_control``, ``quotas``,
``producer_ids``; ``quorum_controller`` ties them together. Beside them:
``topic_configs`` (Kafka's topic and group config keys and their checks),
``image_writer`` (the image as a snapshot's records) and ``java_order``
(the order Java's ``HashMap`` iterates in, which decides which refusal
Kafka gives first).
"""
