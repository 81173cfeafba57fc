"""A ``kraft node`` that plays an Apache Kafka 4.0.0 controller in
ApiVersions, so that a kraft voter beside it auto-detects a Kafka quorum
(``kraft.witness=auto``) exactly as it would beside real Kafka.

``python -m tests.node.kafka_played node start --config FILE ...``
(:data:`LAUNCHER`, run from the repository's root as the tests are) is
``kraft node start ...`` through ``KraftNode(config, advertised_apis=...)``
with :data:`KAFKA_4_0_CONTROLLER_APIS`. The multi-process witness tests
start their "Kafka" voters with it; the product has no way to play Kafka
(tests/test_packaging.py checks that it ships none of this).
"""

from __future__ import annotations

import functools
import sys

__all__ = ["KAFKA_4_0_CONTROLLER_APIS", "LAUNCHER", "main"]

#: ``python -m`` arguments that start ``kraft`` as a Kafka-4.0-played node.
LAUNCHER = ("-m", "tests.node.kafka_played")

#: api key -> (min, max version) in the ApiVersions response of a real Apache
#: Kafka 4.0.0 controller (process.roles=controller) on its CONTROLLER
#: listener, as captured on the wire (the project's reference frames,
#: fixtures/wire/kafka-4.0-controller-frames.jsonl; tests/node/
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


def main() -> None:
    from kraft.node.node import KraftNode
    from kraft.tools.node_command import node_group

    # The node's only hook for what it advertises is the constructor argument.
    setattr(KraftNode, "__init__", functools.partialmethod(KraftNode.__init__,
                                                           advertised_apis=dict(KAFKA_4_0_CONTROLLER_APIS)))
    args = sys.argv[1:]
    if not args or args[0] != "node":
        raise SystemExit("usage: python -m tests.node.kafka_played node start --config FILE ...")
    node_group.main(args=args[1:], prog_name="kraft node")


if __name__ == "__main__":
    main()
