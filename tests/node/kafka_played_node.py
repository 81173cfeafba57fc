"""``python -m tests.node.kafka_played_node HEX ARGS...``: ``kraft ARGS...``
(e.g. ``node start --config ...``) whose node advertises, in ApiVersions,
exactly the api ranges of the ApiVersions response frame ``HEX`` -- with a
real Kafka 4.0 controller's answer, a kraft node plays a Kafka controller
(``tests/node/test_witness_processes.py``). The test hook is
``KraftNode(config, advertised_apis=...)``; production configuration has no
key for it."""

from __future__ import annotations

import functools
import sys

from kraft.node.node import KraftNode, replayed_api_versions


def main() -> None:
    apis = replayed_api_versions(sys.argv[1])
    setattr(KraftNode, "__init__", functools.partialmethod(KraftNode.__init__, advertised_apis=apis))
    from kraft.cli import main as kraft

    sys.argv = ["kraft", *sys.argv[2:]]
    kraft()


if __name__ == "__main__":
    main()
