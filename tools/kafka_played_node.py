"""Bench only: ``python -m kraft.tools.kafka_played_node node start --config
FILE ...`` is ``kraft node start ...`` with a node that advertises, in
ApiVersions, what a real Apache Kafka 4.0.0 controller does
(:data:`kraft.tools.bench.kafka_played.KAFKA_4_0_CONTROLLER_APIS`). The
chaos tool's ``witness-handover`` scenario starts its Kafka-played voters
with it; production configuration has no key for it."""

from __future__ import annotations

import functools
import sys

__all__ = ["main"]


def main() -> None:
    from kraft.node.node import KraftNode
    from kraft.tools.bench.kafka_played import KAFKA_4_0_CONTROLLER_APIS

    # The node's only hook for what it advertises is the constructor argument.
    setattr(KraftNode, "__init__", functools.partialmethod(KraftNode.__init__,
                                                           advertised_apis=dict(KAFKA_4_0_CONTROLLER_APIS)))
    from kraft.tools.node_command import node_group

    args = sys.argv[1:]
    if not args or args[0] != "node":
        raise SystemExit("usage: python -m kraft.tools.kafka_played_node node start --config FILE ...")
    node_group.main(args=args[1:], prog_name="kraft node")


if __name__ == "__main__":
    main()
