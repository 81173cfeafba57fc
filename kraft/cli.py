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

import _thread
import os
import signal
import sys


def _interrupted_outside_a_command(signum: int, frame: object) -> None:
    """Ctrl-C before a command runs (importing, parsing the options) or
    after it returned: exit 130 at once. There Python's default would print
    a KeyboardInterrupt traceback, and click's "Aborted!" with exit 1."""
    raise SystemExit(130)


def _redeliver_a_dropped_interrupt(unraisable: sys.UnraisableHookArgs) -> None:
    """Python runs a signal handler between any two bytecodes of the main
    thread, a finaliser's or a weakref callback's included (importlib runs
    one for every module lock, so a lazy import is full of them). What the
    handler raises there -- the KeyboardInterrupt of Ctrl-C, or the exit
    of :func:`_interrupted_outside_a_command` -- cannot propagate: Python
    prints "Exception ignored in ..." and carries on, and the Ctrl-C is
    lost (the command ran to its timeout, issue 44). So the signal is sent
    again, from a thread: it can only be handled once this hook returned,
    and if that too lands in a finaliser, this hook sends it once more."""
    if unraisable.exc_type is KeyboardInterrupt or (
            unraisable.exc_type is SystemExit and getattr(unraisable.exc_value, "code", None) == 130):
        # _thread, not threading: built in, so nothing is imported here
        # (this may run inside importlib's own clean-up).
        _thread.start_new_thread(os.kill, (os.getpid(), signal.SIGINT))
        return
    _unraisable_hook(unraisable)


_unraisable_hook = sys.unraisablehook

#: Run as the ``kraft`` program (its script, or ``python -m kraft.cli``),
#: not imported by a test or an embedding program, whose SIGINT is its own.
AS_PROGRAM = __name__ == "__main__" or os.path.basename(sys.argv[0]) == "kraft"
if AS_PROGRAM:
    signal.signal(signal.SIGINT, _interrupted_outside_a_command)
    sys.unraisablehook = _redeliver_a_dropped_interrupt

import importlib  # noqa: E402 - after the handler: an import is the likeliest moment of an early Ctrl-C
import logging  # noqa: E402
import traceback  # noqa: E402
from typing import Any, NamedTuple  # noqa: E402

import click  # noqa: E402

from kraft import errors  # noqa: E402


class LazyCommand(NamedTuple):
    """Where a subcommand lives and what ``--help`` says of it before importing it."""

    target: str  # "package.module:attribute"
    short_help: str
    #: Left out of ``--help``: run by another command, not by hand (as click's ``hidden``).
    hidden: bool = False


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

    def __init__(self, *args: Any, lazy: dict[str, LazyCommand] | None = None,
                 aliases: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyCommand] = dict(lazy or {})
        #: Hidden extra names (Kafka's tool names) -> the registered name.
        self.aliases: dict[str, str] = dict(aliases or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy} - set(self.aliases))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = self.lazy.get(self.aliases.get(cmd_name, cmd_name))
        if entry is not None and cmd_name not in self.commands:
            command = _load(entry.target)
            # An alias (Kafka's tool name) shares the command object; the
            # name the user typed is the one usage lines show.
            self.commands[cmd_name] = command
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as e:
            # click suggests from the commands loaded so far; a lazy group
            # has loaded none: suggest from every registered name (aliases too),
            # but never a hidden one (run by another command, not by hand).
            names = [name for name in [*self.list_commands(ctx), *self.aliases]
                     if not (name in self.lazy and self.lazy[name].hidden)]
            raise click.exceptions.NoSuchCommand(e.command_name, possibilities=names, ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                # The registered line, whether or not the command was loaded.
                if not self.lazy[name].hidden:
                    rows.append((name, self.lazy[name].short_help))
                continue
            command = self.commands[name]
            if not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


BENCH_COMMANDS: dict[str, LazyCommand] = {
    "chaos": LazyCommand("kraft.tools.bench.chaos:chaos_bench_command",
                         "Partitions, power loss, kill, pause, full disk, failing fsync on real processes, overlapping; no acknowledged record lost."),
    "codec": LazyCommand("kraft.tools.bench.codec_bench:codec_bench_command",
                         "Encode and decode speed of our codecs against kio and kafka-python."),
    "controller": LazyCommand("kraft.tools.bench.controller_bench:controller_bench_command",
                              "Kafka brokers on a kraft controller quorum against Kafka's own controllers."),
    "dump-log": LazyCommand("kraft.tools.bench.dump_log_bench:bench_dump_log",
                            "kraft dump-log (text and --json, whole process) against kafka-python's decoder."),
    "quorum": LazyCommand("kraft.tools.bench.quorum_command:quorum_bench_command",
                          "Committed throughput, commit latency and failover time of a local quorum."),
    "records": LazyCommand("kraft.tools.bench.records:bench_records",
                           "Decode speed of our batch reader against kafka-python's."),
    "shell": LazyCommand("kraft.tools.bench.shell_load:shell_bench_command",
                         "Records replayed per second opening a log directory, against dump-log --json."),
    "spark": LazyCommand("kraft.tools.spark.bench:spark_bench_command",
                         "Rows per second of the Spark data source: one process against Spark."),
    # The quorum bench's voter processes: the node with the bench's load beside it.
    "voter": LazyCommand("kraft.tools.bench.voter_command:bench_voter_command",
                         "One voter of `kraft bench quorum` (started by the bench).", hidden=True),
}

COMMANDS: dict[str, LazyCommand] = {
    "codec": LazyCommand("kraft.tools.codec_command:codec_group", "Decode and encode Kafka protocol frames."),
    "doctor": LazyCommand("kraft.tools.doctor:doctor_command",
                          "Name what is wrong with a KRaft quorum: one line per finding, with the fix."),
    "dump-log": LazyCommand("kraft.tools.dump_log:dump_log_command",
                            "Print the batches and records of log segments and snapshots."),
    "features": LazyCommand("kraft.tools.features:features_group",
                            "Describe and update the quorum's finalized features."),
    "node": LazyCommand("kraft.tools.node_command:node_group", "Run and inspect a KRaft node."),
    "observe": LazyCommand("kraft.tools.observe:observe_command",
                           "Follow a live quorum as an observer and print its metadata."),
    "quickstart": LazyCommand("kraft.tools.quickstart:quickstart_command",
                              "Start a local three-voter quorum, append, fail over."),
    "quorum": LazyCommand("kraft.tools.quorum:quorum_group",
                          "Describe and change a KRaft quorum (kafka-metadata-quorum.sh; alias metadata-quorum)."),
    "shell": LazyCommand("kraft.tools.shell:shell_command",
                         "Browse the metadata image (kafka-metadata-shell.sh; alias metadata-shell)."),
    "spark": LazyCommand("kraft.tools.spark.spark_command:spark_group", "Decode metadata logs at scale with Spark."),
    "storage": LazyCommand("kraft.tools.storage:storage_group",
                           "Format and inspect log directories (kafka-storage.sh)."),
}


def _debugging(ctx: click.Context) -> bool:
    """``kraft --debug``, ``KRAFT_DEBUG=1`` or a command run at DEBUG log level."""
    root = ctx.find_root()
    return bool((root.params or {}).get("debug")) or os.environ.get("KRAFT_DEBUG", "") not in ("", "0") \
        or logging.getLogger().getEffectiveLevel() <= logging.DEBUG


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C, or was raised while one was being handled."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__context__
    return False


class KraftGroup(LazyGroup):
    """The top-level group: every failure of a command becomes one line on
    stderr and the exit code of its class (:mod:`kraft.errors`); the
    traceback only with ``--debug``."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            if AS_PROGRAM:
                # The command's own Ctrl-C: a KeyboardInterrupt (trio takes
                # SIGINT over only from Python's default handler).
                signal.signal(signal.SIGINT, signal.default_int_handler)
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Ctrl-C: the shell's convention (128 + SIGINT), no traceback
            # and no click "Aborted!" (exit 1).
            raise click.exceptions.Exit(errors.EXIT_INTERRUPTED) from None
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - the one place every failure is reported
            leaves = errors.leaf_exceptions(exc)
            if any(_interrupted(e) for e in leaves):
                # Ctrl-C inside trio: a nursery groups it with its tasks'
                # Cancelled; or clean-up it interrupted raised in its turn (a
                # thread joined before it had started), with it as context.
                raise click.exceptions.Exit(errors.EXIT_INTERRUPTED) from None
            if len(leaves) == 1 and isinstance(leaves[0], (click.exceptions.ClickException,
                                                           click.exceptions.Exit, SystemExit)):
                raise leaves[0] from None  # a trio nursery wrapped a click exit
            if all(isinstance(e, SystemExit) for e in leaves):
                raise
            code, line = errors.describe_failure(exc)
            if _debugging(ctx):
                traceback.print_exception(exc, file=sys.stderr)
            click.echo(f"Error: {line}", err=True)
            raise click.exceptions.Exit(code) from None
        finally:
            if AS_PROGRAM:
                signal.signal(signal.SIGINT, _interrupted_outside_a_command)


#: Kafka's tool names where ours differ (kafka-metadata-quorum.sh is
#: `kraft metadata-quorum`, ...); hidden from --help, named in the short help
#: of the command they stand for. dump-log, storage and features are
#: already Kafka's names.
ALIASES: dict[str, str] = {
    "metadata-quorum": "quorum",
    "metadata-shell": "shell",
}


#: ``-h`` as Kafka's tools take it; set on the root, every subcommand's
#: context inherits it.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


@click.group(cls=KraftGroup, lazy=COMMANDS, aliases=ALIASES, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="kraft")
@click.option("--debug", is_flag=True, help="Print the traceback of a failure (for bug reports).")
def main(debug: bool) -> None:
    """kraft: a Kafka-wire-compatible KRaft node, codecs and metadata-log tools."""


@main.group("bench", cls=LazyGroup, lazy=BENCH_COMMANDS)
def bench_group() -> None:
    """Performance benchmarks, each against its peer from the same run."""


if __name__ == "__main__":
    main()
