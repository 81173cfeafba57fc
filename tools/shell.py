"""``kraft shell``: ``kafka-metadata-shell.sh`` for a metadata image.

Sources (one of):

* ``--directory DIR``: a metadata log directory (``__cluster_metadata-0`` or
  the ``metadata.log.dir`` holding it), read-only: its latest snapshot, then
  the log after it;
* ``--snapshot FILE``: one ``.checkpoint`` file;
* ``--bootstrap-controller HOST:PORT``: a live cluster, through an observer
  (:mod:`kraft.node.observer`); the tree follows the committed image.

With a command after the options it runs that one command and exits
(``kraft shell --directory d cat /topics/foo/0/data``); without one it is
interactive, with readline editing, history and tab completion of commands
and paths.
"""

from __future__ import annotations

import cmd
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    # The image is imported when the command runs: ``--help`` answers at once.
    from kraft.image.session import ShellSession
    from kraft.image.tree import Dir

log = logging.getLogger("kraft.shell")

__all__ = ["shell_command", "MetadataShell"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kraft")
    except PackageNotFoundError:
        return "unknown"


class MetadataShell(cmd.Cmd):
    """The interactive loop (stdlib ``cmd`` + ``readline``)."""

    intro = "[ kraft metadata shell ]"
    prompt = ">> "

    def __init__(self, session: ShellSession, stdout: object | None = None) -> None:
        super().__init__(stdout=stdout)  # type: ignore[arg-type]
        self.session = session
        try:
            import readline

            # Paths contain '/', '<' and '.': only whitespace separates words.
            readline.set_completer_delims(" \t\n")
        except ImportError:  # pragma: no cover - no readline on this platform
            pass

    # cmd.Cmd stops when default() returns true (typeshed declares None).
    def default(self, line: str) -> bool:  # type: ignore[override]
        from kraft.image.session import ShellExit

        try:
            text = self.session.run(line)
        except ShellExit:
            return True
        self.stdout.write(text)
        return False

    def do_help(self, arg: str) -> bool:  # ours, not cmd's
        return self.default(f"help {arg}".strip())

    def emptyline(self) -> bool:
        return False

    def do_EOF(self, arg: str) -> bool:  # noqa: N802 - cmd's name for Ctrl-D
        self.stdout.write("\n")
        return True

    def completenames(self, text: str, *ignored: object) -> list[str]:
        from kraft.image.session import COMMANDS

        return [name + " " for name in COMMANDS if name.startswith(text)]

    def completedefault(self, text: str, line: str, begidx: int, endidx: int) -> list[str]:
        return self.session.complete_path(text)

    # readline calls complete() for one match at a time (typeshed declares a list).
    def complete(self, text: str, state: int) -> str | None:  # type: ignore[override]
        # cmd only completes arguments of do_* commands; ours are all dynamic.
        if state == 0:
            import readline

            line = readline.get_line_buffer()
            begidx = readline.get_begidx()
            if begidx == 0 or not line[:begidx].strip():
                self.completion_matches = self.completenames(text)
            else:
                self.completion_matches = self.completedefault(text, line, begidx, readline.get_endidx())
        matches: list[str] = self.completion_matches or []
        return matches[state] if state < len(matches) else None


def _offline_root(directory: Path | None, snapshot: Path | None) -> Dir:
    from kraft.image.builder import ImageBuilder
    from kraft.image.source import MetadataSourceError, image_from_checkpoint, image_from_directory
    from kraft.image.tree import build_tree

    builder = ImageBuilder()
    try:
        if directory is not None:
            image = image_from_directory(directory, builder=builder)
        else:
            assert snapshot is not None
            image = image_from_checkpoint(snapshot, builder=builder)
    except MetadataSourceError as e:
        raise click.ClickException(str(e)) from None
    for warning in builder.warnings:
        click.echo(f"WARNING: {warning}", err=True)
    return build_tree(image, version=_version())


class _LiveSource:
    """An observer on a trio thread; the shell reads its latest image."""

    def __init__(self, bootstrap: str, cluster_id: str | None, data_dir: Path | None) -> None:
        from kraft.node.observer import Observer, parse_bootstrap

        self.observer = Observer(parse_bootstrap(bootstrap), data_dir=data_dir, cluster_id=cluster_id)
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="kraft-observer", daemon=True)
        self._cancel: Callable[[], None] | None = None

    def start(self, timeout_s: float) -> None:
        self._thread.start()
        if not self.ready.wait(timeout_s):
            raise click.ClickException(f"the observer did not catch up within {timeout_s:g} s")
        if self.error is not None:
            from kraft.tools.observe import exit_status

            status = exit_status(self.error, "the observer stopped")
            raise SystemExit(status)

    def _main(self) -> None:
        import trio

        async def run() -> None:
            async with trio.open_nursery() as nursery:
                token = trio.lowlevel.current_trio_token()
                self._cancel = lambda: token.run_sync_soon(nursery.cancel_scope.cancel)
                await nursery.start(self.observer.run)
                await self.observer.catch_up()
                self.ready.set()
                await trio.sleep_forever()

        try:
            trio.run(run)
        except BaseException as e:  # noqa: BLE001 - reported by start()
            self.error = e
        finally:
            self.ready.set()

    def root(self) -> Dir:
        from kraft.image.tree import build_tree

        obs = self.observer
        leader = None
        node = obs.node
        if node is not None and node.shell is not None and node.leader.leader_id is not None:
            leader = f"LeaderAndEpoch(leaderId=OptionalInt[{node.leader.leader_id}], epoch={node.leader.epoch})"
        return build_tree(obs.published, leader=leader, version=_version())

    def stop(self) -> None:
        if self._cancel is not None:
            try:
                self._cancel()
            except RuntimeError:
                pass
        self._thread.join(5)


@click.command("shell", context_settings={"allow_interspersed_args": False},
               short_help="Browse the metadata image (kafka-metadata-shell.sh).")
@click.option("--directory", "-d", type=click.Path(path_type=Path, exists=True, file_okay=False), default=None,
              help="A metadata log directory (__cluster_metadata-0, or the metadata.log.dir holding it).")
@click.option("--snapshot", "-s", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="A .checkpoint snapshot file.")
@click.option("--bootstrap-controller", "bootstrap", default=None, metavar="HOST:PORT[,...]",
              help="A live cluster: observe it and show its committed image.")
@click.option("--cluster-id", default=None, help="With --bootstrap-controller: the expected cluster id.")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="With --bootstrap-controller: the observer's local copy (see kraft observe).")
@click.option("--timeout", "timeout_s", type=float, default=60.0, show_default=True,
              help="With --bootstrap-controller: how long to wait for the observer to catch up.")
@click.argument("command", nargs=-1)
def shell_command(directory: Path | None, snapshot: Path | None, bootstrap: str | None, cluster_id: str | None,
                  data_dir: Path | None, timeout_s: float, command: tuple[str, ...]) -> None:
    """Browse the metadata image like kafka-metadata-shell.sh; run COMMAND
    (e.g. `ls /topics`) and exit, or start an interactive shell."""
    from kraft.image.session import ShellExit, ShellSession

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s", stream=sys.stderr)
    if sum(x is not None for x in (directory, snapshot, bootstrap)) != 1:
        raise click.UsageError("give exactly one of --directory, --snapshot or --bootstrap-controller")
    live: _LiveSource | None = None
    if bootstrap is not None:
        from kraft.node.observer import ObserverError

        try:
            live = _LiveSource(bootstrap, cluster_id, data_dir)
        except ObserverError as e:
            raise click.BadParameter(str(e), param_hint="--bootstrap-controller") from None
        try:
            live.start(timeout_s)
        except BaseException as e:
            # Stop the observer before the process goes (its thread is a
            # daemon): its log closes and a partial snapshot is deleted.
            live.stop()
            if isinstance(e, KeyboardInterrupt):
                sys.exit(130)  # Ctrl-C while it catches up: as kraft observe
            raise
        session = ShellSession(live.root)
    else:
        session = ShellSession(_offline_root(directory, snapshot))
    try:
        if command:
            try:
                sys.stdout.write(session.run_words(list(command)))
            except ShellExit:
                pass
            return
        shell = MetadataShell(session)
        if not sys.stdin.isatty():
            shell.intro = ""
            shell.prompt = ""
        while True:
            try:
                shell.cmdloop()
                break
            except KeyboardInterrupt:  # Ctrl-C clears the line, as a shell does
                sys.stdout.write("^C\n")
                shell.intro = ""
    finally:
        if live is not None:
            live.stop()
