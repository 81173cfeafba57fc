"""``kraft node start``: run one KRaft node from a Kafka server.properties.

The command only; the process it runs (trio, the node) is in
:mod:`kraft.tools.node_run`, imported when the command starts, and the
quickstart's demo writer (hidden ``--demo-*`` options) in
:mod:`kraft.tools.demo_writer`. The quorum bench's voters run
``kraft bench voter`` instead: nothing of the bench is imported here.
"""

from __future__ import annotations

from pathlib import Path

import click


def setup_logging(level: str, fmt: str = "text") -> None:
    from kraft.tools.log_format import setup_logging as setup

    setup(level, fmt)


@click.group("node", short_help="Run and inspect a KRaft node.")
def node_group() -> None:
    """Run a KRaft node."""


from kraft.tools.node_status import status_command  # noqa: E402  (status is light: no trio)

node_group.add_command(status_command)


def _overrides(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--override")
        out[key.strip()] = value.strip()
    return out


@node_group.command("start")
@click.option("--config", "-c", "config_path", required=True, type=click.Path(path_type=Path),
              help="A Kafka server.properties with process.roles=controller.")
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a property of the config file (repeatable).")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
              help="DEBUG adds per-request detail; INFO logs role changes, voter changes, snapshots, recovery.")
@click.option("--log-format", default="text", show_default=True, type=click.Choice(["text", "json"]),
              help="text, or json: one object per line (time, level, logger, message).")
@click.option("--demo-append-rate", type=float, default=0.0, hidden=True,
              help="While leader, append this many demo records per second (used by `kraft quickstart`).")
@click.option("--demo-ack-log", type=click.Path(path_type=Path), default=None, hidden=True,
              help="With --demo-append-rate: append one 'OFFSET<TAB>RECORD' line per demo record this node "
              "acknowledged as committed (the test harness checks no acknowledged record is ever lost). "
              "SIGUSR1 stops the demo writer.")
@click.option("--demo-history", type=click.Path(path_type=Path), default=None, hidden=True,
              help="With --demo-append-rate: append one JSON line per demo append before it is sent "
              "(type invoke) and one after (ok with its offset, fail, or info when the outcome is unknown).")
@click.option("--demo-records", type=click.Choice(["text", "metadata"]), default="text", hidden=True,
              help="With --demo-append-rate: bare numbered records, or real metadata records (topics, "
              "partitions, configs; `kraft quickstart`).")
def start_command(config_path: Path, overrides: tuple[str, ...], log_level: str, log_format: str,
                  demo_append_rate: float, demo_ack_log: Path | None, demo_records: str = "text",
                  demo_history: Path | None = None) -> None:
    """Start a node and run until SIGTERM or Ctrl-C (a leader hands over
    leadership with EndQuorumEpoch before it exits).

    \b
    Snapshots hold the committed records themselves (this node has no state
    machine of its own), taken as Kafka's controller takes them: after
    metadata.log.max.record.bytes.between.snapshots bytes or
    metadata.log.max.snapshot.interval.ms; retention
    (metadata.max.retention.bytes/.ms) then moves the log start, and a
    replica that fell behind it catches up with FetchSnapshot."""
    import trio

    from kraft.config import NodeConfig
    from kraft.tools.node_run import run_node

    setup_logging(log_level, log_format)
    # A failure is one line and its class's exit code (kraft.cli's handler):
    # ConfigError 3, a log directory problem 4, a port 5.
    config = NodeConfig.load(config_path, _overrides(overrides))
    load = None
    if demo_append_rate > 0:
        from kraft.tools.demo_writer import demo_load

        load = demo_load(demo_append_rate, demo_ack_log, demo_records, demo_history)
    trio.run(run_node, config, load)
