"""``kraft bench voter`` (hidden): one voter of ``kraft bench quorum``.

The node of ``kraft node start`` (:func:`kraft.tools.node_run.run_node`) with
the bench's load beside it (:mod:`kraft.tools.bench.load`: load commands on
stdin, JSON reports on stdout, stop when stdin closes). It is the bench's own
entry so that ``kraft node start`` carries no bench option and imports
nothing of the bench.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("voter", hidden=True, short_help="One voter of `kraft bench quorum` (started by the bench).")
@click.option("--config", "-c", "config_path", required=True, type=click.Path(path_type=Path),
              help="The voter's server.properties (the bench writes and formats it).")
@click.option("--record-size", type=click.IntRange(min=1), required=True, metavar="SIZE",
              help="Append SIZE-byte records while leader, at the rate the bench asks on stdin.")
def bench_voter_command(config_path: Path, record_size: int) -> None:
    """One voter of `kraft bench quorum` (started by the bench)."""
    import trio

    from kraft.config import NodeConfig
    from kraft.tools.bench.load import bench_load
    from kraft.tools.node_command import setup_logging
    from kraft.tools.node_run import run_node

    setup_logging("INFO")
    # A failure is one line and its class's exit code (kraft.cli's handler), as for `kraft node start`.
    config = NodeConfig.load(config_path)
    trio.run(run_node, config, bench_load(record_size))
