"""``kraft shell``: Kafka 4.x's ``kafka-metadata-shell.sh``, and more.

Sources (one of):

* ``--snapshot FILE``: one ``.checkpoint`` file, read as Kafka's shell reads
  it (the image is at the file's last metadata record);
* ``--directory DIR``: a whole metadata log directory (``__cluster_metadata-0``
  or the ``metadata.log.dir`` holding it), read-only: its latest snapshot,
  then the log after it, up to the first damage (a torn tail is reported on
  stderr, not fatal); ``--at OFFSET|TIME`` shows the image as it was then,
  ``--diff A B`` what changed between two offsets or times;
* ``--bootstrap-controller HOST:PORT``: a live cluster, through an observer.

It prints what Kafka 4.1.0's shell prints (``--kafka-version 4.0``: 4.0.0's;
they differ in ``/local/version`` and ``/local/commitId``). With commands
after the options it runs them and exits, with status 1 when a command
printed an error (Kafka exits 0). Without, it is
interactive: prompt_toolkit line editing, history kept across sessions in
``~/.kraft_shell_history``, tab completion of commands and paths. With
stdin not a terminal it reads commands line by line, printing Kafka's banner
and ``>> `` prompts as Kafka's shell does on a dumb terminal.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import click

from kraft.tools.cli_types import TIMEOUT_S
from kraft.tools.kafka_version import current_release, kafka_version_option

log = logging.getLogger("kraft.shell")

__all__ = ["shell_command", "HISTORY_FILE_NAME"]

HISTORY_FILE_NAME = ".kraft_shell_history"
BANNER = "[ Kafka Metadata Shell ]"
PROMPT = ">> "


# ----------------------------------------------------------------- sources


class _Opened:
    """A root to browse, and (for a directory) its history for ``diff``."""

    def __init__(self, root: Callable[[], Any], images: Any = None, tree_of: Callable[[Any], Any] | None = None,
                 stop: Callable[[], None] | None = None) -> None:
        self.root = root
        self.images = images
        self.tree_of = tree_of
        self.stop = stop or (lambda: None)


def _tree_maker() -> Callable[[Any], Any]:
    """``/local/version`` and ``/local/commitId`` are those of the Kafka
    release the shell prints as (``LocalShellNode``: 4.1.0 and its build's
    commit by default, 4.0.0's with ``--kafka-version 4.0``)."""
    from kraft.image.tree import ShellForm, build_tree

    release = current_release()
    # 4.2 dropped zkMigrationState and made StandardAcl a record (their jars, run).
    form = ShellForm(zk_migration_state=release.lists_zk_migration_state,
                     cordoned_directories=release.prints_cordoned_directories,
                     acl_record=not release.lists_zk_migration_state)
    return lambda image: build_tree(image, version=release.version, commit_id=release.commit_id, form=form)


def _warn_all(warnings: Iterable[str]) -> None:
    for warning in warnings:
        click.echo(f"WARNING: {warning}", err=True)


def _open_snapshot(path: Path) -> _Opened:
    from kraft.image.builder import ImageBuilder
    from kraft.image.metadata_source import MetadataSourceError, image_from_snapshot_file

    if not path.exists():
        raise click.ClickException(f"no such file: {path}")
    if path.is_dir():
        raise click.ClickException(f"{path} is a directory: give a .checkpoint file, or use --directory")
    builder = ImageBuilder()
    try:
        image = image_from_snapshot_file(path, builder)
    except MetadataSourceError as e:
        raise click.ClickException(str(e)) from None
    _warn_all(builder.warnings)
    tree = _tree_maker()(image)
    return _Opened(lambda: tree)


def _open_directory(path: Path, at: str | None) -> _Opened:
    from kraft.image.builder import ImageBuilder
    from kraft.image.history import DirectoryHistory
    from kraft.image.metadata_source import MetadataSourceError

    if not path.exists():
        raise click.ClickException(f"no such directory: {path}")
    try:
        history = DirectoryHistory(path)
        up_to = history.resolve(at) if at is not None else _committed_bound(history)
        builder = ImageBuilder()
        image = history.image(up_to, builder) if up_to is None or up_to >= 0 else builder.image
    except (MetadataSourceError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    _warn_all(builder.warnings)
    tree_of = _tree_maker()
    tree = tree_of(image)
    return _Opened(lambda: tree, history, tree_of)


def _committed_bound(history: Any) -> int | None:
    """The last offset to read of a directory: None, the whole readable log
    (up to its first damage), running node or not. A running process's
    ``.lock`` is seen in /proc/locks (neither taken nor touched): its
    segments after the latest snapshot are read too, for a node that has not
    snapshotted yet (a quickstart's) would otherwise show an empty image.
    Its last records may not be committed yet -- the high watermark lives
    only in the leader's memory (Kafka persists none for
    ``__cluster_metadata``) -- and a NOTE says so."""
    from kraft.dirlock import lock_holder

    holder = lock_holder(history.pdir.parent)
    if holder is None:
        return None
    cov = history.coverage
    snapshot_end = cov.snapshots[-1][0] if cov.snapshots else 0
    tail = "" if cov.log_end is None or cov.log_end < snapshot_end else (
        f"; its latest snapshot ends at offset {snapshot_end}, the log after it (to offset {cov.log_end}) is "
        "read too, and its last records may not be committed yet (--at OFFSET stops earlier)")
    click.echo(f"NOTE: {history.pdir.parent} is in use by process {holder}: read without locking it{tail}. "
               "Nothing is locked or written. kraft shell --bootstrap-controller shows the live committed image.",
               err=True)
    return None


class _LiveSource:
    """An observer on a trio thread; the shell reads its latest image."""

    def __init__(self, bootstrap: str, cluster_id: str | None, data_dir: Path | None) -> None:
        from kraft.programs.observer import Observer

        from kraft.tools.observe import discovery_bounds

        # The first answer within observe's 10 s, whatever --timeout gives catching up.
        request_ms, unanswered_ms = discovery_bounds(None)
        self.observer = Observer(bootstrap, data_dir=data_dir, cluster_id=cluster_id, discovery_timeout_ms=request_ms,
                                 discovery_unanswered_ms=unanswered_ms)
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

            raise SystemExit(exit_status(self.error, "the observer stopped"))

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

    def stop(self) -> None:
        if self._cancel is not None:
            try:
                self._cancel()
            except RuntimeError:
                pass
        self._thread.join(5)


def _open_live(bootstrap: str, cluster_id: str | None, data_dir: Path | None, timeout_s: float) -> _Opened:
    from kraft.admin_client.admin import parse_bootstrap
    from kraft.admin_client.reach import check_reachable
    from kraft.programs.observer import ObserverError

    try:
        live = _LiveSource(bootstrap, cluster_id, data_dir)
    except ObserverError as e:
        raise click.BadParameter(str(e), param_hint="--bootstrap-controller") from None
    # A refused or unreachable address is named at once (exit 5), not
    # hidden behind "did not catch up" after the timeout.
    from kraft.tools.observe import PROBE_TIMEOUT_S

    check_reachable(parse_bootstrap(bootstrap, "--bootstrap-controller"), min(timeout_s, PROBE_TIMEOUT_S))
    try:
        live.start(timeout_s)
    except BaseException as e:
        # Stop the observer before the process goes (its thread is a daemon):
        # its log closes and a partial snapshot is deleted.
        live.stop()
        if isinstance(e, KeyboardInterrupt):
            sys.exit(130)  # Ctrl-C while it catches up: as kraft observe
        raise
    tree_of = _tree_maker()
    return _Opened(lambda: tree_of(live.observer.published), stop=live.stop)


# ----------------------------------------------------------------- running


def _run_commands(session: Any, words: list[str], out: TextIO) -> int:
    result = session.run_words(words)
    out.write(result.text)
    out.flush()
    return 1 if result.failed else 0


def _stdin_session(session: Any, stdin: TextIO, out: TextIO) -> int:
    """Commands on a pipe, as Kafka's shell on a dumb terminal: the banner,
    then ``>> `` before each command's output, no echo."""
    from kraft.image.session import ShellExit

    out.write(f"Loading...\nStarting...\n{BANNER}\n")
    failed = False
    while True:
        out.write(PROMPT)
        out.flush()
        line = stdin.readline()
        if not line:
            return 1 if failed else 0
        try:
            result = session.run_line(line.rstrip("\n"))
        except ShellExit:
            return 1 if failed else 0
        failed = failed or result.failed
        out.write(result.text)


def _interactive(session: Any, history_path: Path) -> int:
    """The interactive shell: prompt_toolkit for editing, history and completion."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory

    from kraft.image.session import ShellExit

    class _Completer(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            text = document.text_before_cursor
            word = text.split(" ")[-1].split("\t")[-1]  # the word under the cursor
            for candidate in session.complete(text):
                yield Completion(candidate, start_position=-len(word))

    file_history = FileHistory(str(history_path))
    # The `history` command numbers the lines kept from earlier sessions first.
    session.state.history[:0] = list(reversed(list(file_history.load_history_strings())))
    prompt: PromptSession[str] = PromptSession(history=file_history, completer=_Completer(), complete_while_typing=False)
    print(f"Loading...\nStarting...\n{BANNER}", flush=True)
    while True:
        session.state.screen_width = shutil.get_terminal_size((80, 24)).columns
        try:
            line = prompt.prompt(PROMPT)
        except KeyboardInterrupt:
            print("^C", flush=True)
            continue
        except EOFError:
            return 0
        try:
            result = session.run_line(line)
        except ShellExit:
            return 0
        sys.stdout.write(result.text)
        sys.stdout.flush()


@click.command("shell", context_settings={"allow_interspersed_args": False},
               short_help="Browse the metadata image (kafka-metadata-shell.sh; alias metadata-shell).")
@click.option("--snapshot", "-s", type=click.Path(path_type=Path), default=None,
              help="A .checkpoint snapshot file (as kafka-metadata-shell.sh --snapshot).")
@click.option("--directory", "-d", type=click.Path(path_type=Path), default=None,
              help="A metadata log directory (__cluster_metadata-0, or the metadata.log.dir holding it).")
@click.option("--at", "at", default=None, metavar="OFFSET|TIME",
              help="With --directory: the image as of this committed offset or ISO-8601 time.")
@click.option("--diff", "diff", nargs=2, default=None, metavar="A B",
              help="With --directory: print what changed between offsets (or times) A and B, and exit.")
@click.option("--bootstrap-controller", "bootstrap", default=None, metavar="HOST:PORT[,...]",
              help="A live cluster: observe it and show its committed image.")
@click.option("--cluster-id", default=None, help="With --bootstrap-controller: the expected cluster id.")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="With --bootstrap-controller: the observer's local copy (see kraft observe).")
@click.option("--timeout", "timeout_s", type=TIMEOUT_S, default=60.0, show_default=True,
              help="With --bootstrap-controller: how long to wait for the observer to catch up.")
@kafka_version_option
@click.argument("command", nargs=-1)
def shell_command(snapshot: Path | None, directory: Path | None, at: str | None, diff: tuple[str, str] | None,
                  bootstrap: str | None, cluster_id: str | None, data_dir: Path | None, timeout_s: float,
                  command: tuple[str, ...]) -> None:
    """Browse the metadata image like kafka-metadata-shell.sh; run COMMAND
    (e.g. `ls /image/topics/byName`) and exit, or start an interactive shell."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s", stream=sys.stderr)
    if sum(x is not None for x in (directory, snapshot, bootstrap)) != 1:
        raise click.UsageError("give exactly one of --snapshot, --directory or --bootstrap-controller")
    if (at is not None or diff is not None) and directory is None:
        raise click.UsageError("--at and --diff need --directory (a snapshot file holds one moment)")
    if diff is not None and command:
        raise click.UsageError("--diff runs alone: give either --diff A B or commands")
    if snapshot is not None:
        opened = _open_snapshot(snapshot)
    elif directory is not None:
        opened = _open_directory(directory, at)
    else:
        assert bootstrap is not None
        opened = _open_live(bootstrap, cluster_id, data_dir, timeout_s)

    from kraft.image.session import ShellExit, ShellSession

    interactive = not command and diff is None
    session = ShellSession(opened.root, interactive=interactive, images=opened.images, tree_of=opened.tree_of)
    try:
        if diff is not None:
            status = _run_commands(session, ["diff", *diff], sys.stdout)
        elif command:
            try:
                status = _run_commands(session, list(command), sys.stdout)
            except ShellExit:
                status = 0
        elif sys.stdin.isatty() and sys.stdout.isatty():
            status = _interactive(session, Path(os.path.expanduser("~")) / HISTORY_FILE_NAME)
        else:
            status = _stdin_session(session, sys.stdin, sys.stdout)
    finally:
        opened.stop()
    sys.exit(status)
