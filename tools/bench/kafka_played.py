"""Bench only: a ``kraft node`` that plays an Apache Kafka 4.0.0 controller
in ApiVersions, so that a kraft voter beside it auto-detects a Kafka quorum
(``kraft.witness=auto``) exactly as it would beside real Kafka.

``python -m kraft.tools.kafka_played_node node start --config ...``
(:data:`LAUNCHER`) runs ``kraft node start ...`` (the ``kraft node``
commands) through ``KraftNode(config, advertised_apis=...)`` with
:data:`KAFKA_4_0_CONTROLLER_APIS`. The chaos tool launches chosen voters
with it (``kraft bench chaos --scenario witness-handover``), and so do the
multi-process witness tests.
Production configuration has no key for it.
"""

from __future__ import annotations

__all__ = ["KAFKA_4_0_CONTROLLER_APIS", "LAUNCHER"]

#: ``python -m`` arguments that start ``kraft`` as a Kafka-4.0-played node.
LAUNCHER = ("-m", "kraft.tools.kafka_played_node")

#: api key -> (min, max version) in the ApiVersions response of a real Apache
#: Kafka 4.0.0 controller (process.roles=controller) on its CONTROLLER
#: listener, as captured on the wire (the project's reference frames,
#: fixtures/wire/kafka-4.0-controller-frames.jsonl; tests/tools/
#: test_kafka_played.py checks this table against that frame).
KAFKA_4_0_CONTROLLER_APIS: dict[int, tuple[int, int]] = {
    1: (4, 17),    # Fetch
    17: (0, 1),    # SaslHandshake
    18: (0, 4),    # ApiVersions
    19: (2, 7),    # CreateTopics
    20: (1, 6),    # DeleteTopics
    29: (1, 3),    # DescribeAcls
    30: (1, 3),    # CreateAcls
    31: (1, 3),    # DeleteAcls
    32: (1, 4),    # DescribeConfigs
    33: (0, 2),    # AlterConfigs
    36: (0, 2),    # SaslAuthenticate
    37: (0, 3),    # CreatePartitions
    38: (1, 3),    # CreateDelegationToken
    39: (1, 2),    # RenewDelegationToken
    40: (1, 2),    # ExpireDelegationToken
    41: (1, 3),    # DescribeDelegationToken
    43: (0, 2),    # ElectLeaders
    44: (0, 1),    # IncrementalAlterConfigs
    45: (0, 0),    # AlterPartitionReassignments
    46: (0, 0),    # ListPartitionReassignments
    49: (0, 1),    # AlterClientQuotas
    50: (0, 0),    # DescribeUserScramCredentials
    51: (0, 0),    # AlterUserScramCredentials
    52: (0, 2),    # Vote
    53: (0, 1),    # BeginQuorumEpoch
    54: (0, 1),    # EndQuorumEpoch
    55: (0, 2),    # DescribeQuorum
    56: (2, 3),    # AlterPartition
    57: (0, 2),    # UpdateFeatures
    58: (0, 0),    # Envelope
    59: (0, 1),    # FetchSnapshot
    60: (0, 2),    # DescribeCluster
    62: (0, 4),    # BrokerRegistration
    63: (0, 1),    # BrokerHeartbeat
    64: (0, 0),    # UnregisterBroker
    67: (0, 0),    # AllocateProducerIds
    70: (0, 0),    # ControllerRegistration
    73: (0, 0),    # AssignReplicasToDirs
    80: (0, 0),    # AddRaftVoter
    81: (0, 0),    # RemoveRaftVoter
    82: (0, 0),    # UpdateRaftVoter
}

