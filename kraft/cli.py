"""The `kraft` command line.

Every subcommand lives in its own module under ``kraft.tools`` and is imported
only when it runs: ``kraft --help`` and ``kraft SUB --help`` must answer at
once, so this module imports click and nothing else of ours. A command is
registered by one line in :data:`COMMANDS` (name, ``module:attribute``, the
one-line help shown by ``kraft --help``); a test checks that each line's help
still matches the command's own docstring and that nothing heavy (trio,
pyarrow, pyspark, prometheus_client, the node) is imported by ``--help``.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import click


class LazyCommand(NamedTuple):
    """Where a subcommand lives and what ``--help`` says of it before importing it."""

    target: str  # "package.module:attribute"
    short_help: str


def _load(target: str) -> click.Command:
    module_name, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module_name), attribute)
    if not isinstance(command, click.Command):  # pragma: no cover - a registration mistake
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use.

    ``kraft --help`` lists the registered short help without importing
    anything; ``kraft SUB ...`` imports SUB's module only.
    """

    def __init__(self, *args: Any, lazy: dict[str, LazyCommand] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyCommand] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.lazy.get(cmd_name)
        if entry is not None and cmd_name not in self.commands:
            command = _load(entry.target)
            # An alias (Kafka's tool name) shares the command object; the
            # name the user typed is the one usage lines show.
            self.commands[cmd_name] = command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.commands:
                command = self.commands[name]
                if command.hidden:
                    continue
                rows.append((name, command.get_short_help_str(formatter.width)))
            else:
                rows.append((name, self.lazy[name].short_help))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


BENCH_COMMANDS: dict[str, LazyCommand] = {
    "codec": LazyCommand("kraft.tools.bench.codec:codec_bench_command",
                         "Encode and decode speed of our codecs against kio and kafka-python."),
    "quorum": LazyCommand("kraft.tools.bench.quorum_command:quorum_bench_command",
                          "Committed throughput, commit latency and failover time of a local quorum."),
    "records": LazyCommand("kraft.tools.bench.records:bench_records",
                           "Decode speed of our batch reader against kafka-python's."),
    "spark": LazyCommand("kraft.tools.spark.bench:spark_bench_command",
                         "Rows per second of the Spark data source: one process against Spark."),
}

COMMANDS: dict[str, LazyCommand] = {
    "codec": LazyCommand("kraft.tools.codec:codec_group", "Decode and encode Kafka protocol frames."),
    "dump-log": LazyCommand("kraft.tools.dump_log:dump_log_command",
                            "Print the batches and records of log segments and snapshots."),
    "features": LazyCommand("kraft.tools.features:features_group",
                            "Describe and update the quorum's finalized features."),
    "node": LazyCommand("kraft.tools.node:node_group", "Run and inspect a KRaft node."),
    "observe": LazyCommand("kraft.tools.observe:observe_command",
                           "Follow a live quorum as an observer and print its metadata."),
    "quickstart": LazyCommand("kraft.tools.quickstart:quickstart_command",
                              "Start a local three-voter quorum, append, fail over."),
    "quorum": LazyCommand("kraft.tools.quorum:quorum_group",
                          "Describe and change a KRaft quorum (kafka-metadata-quorum.sh)."),
    "shell": LazyCommand("kraft.tools.shell:shell_command", "Browse the metadata image (kafka-metadata-shell.sh)."),
    "spark": LazyCommand("kraft.tools.spark.cli:spark_group", "Decode metadata logs at scale with Spark."),
    "storage": LazyCommand("kraft.tools.storage_command:storage_group",
                           "Format and inspect log directories (kafka-storage.sh)."),
}


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.version_option(package_name="kraft")
def main() -> None:
    """kraft: a Kafka-wire-compatible KRaft node, codecs and metadata-log tools."""


@main.group("bench", cls=LazyGroup, lazy=BENCH_COMMANDS)
def bench_group() -> None:
    """Performance benchmarks, each against its peer from the same run."""


if __name__ == "__main__":
    main()
