"""``kraft storage format --kafka-version X.Y`` against the real
``kafka-storage.sh format`` (``StorageTool``, run by main class) of every
installed release, live: the same stdout, stderr and exit code, the same
files in the same places, and the same records in them.

Each case formats twice from the same ``server.properties`` (a copy per
tool, each with its own directories): once with the release's StorageTool,
once with kraft printing as that release. Kafka 4.4 prints a "Bootstrap
metadata:" line first (``Formatter.run``: ``BootstrapMetadata.toString``),
names every metadata.version it supports for an unknown one
(``MetadataVersion.fromVersionString``), rewords the kraft.version errors
(``Formatter.calculateEffectiveFeatureLevels``), and writes the KIP-1170
layout: the bootstrap records in a controller's
``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``, no
``bootstrap.checkpoint`` anywhere (``Formatter.writeBoostrapSnapshot``).
Where a release's tool dies with a Java stack trace on bad input, kraft
answers in one line with the same exit code (pinned, counted apart).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.kafka import interop, live_tools
from tests.harness.cli import kraft_args
from tests.kafka.processes import run_tool
from tests.kafka.releases import KafkaRelease, every_release, listed, newest, require

pytestmark = pytest.mark.slow

#: Every listed release: what the tools print differs from release to release.
release = pytest.fixture(params=listed())(every_release)

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qg"
#: A salted SCRAM credential: the same bytes from both tools (a password would draw a random salt).
SCRAM = ('SCRAM-SHA-256=[name=alice,salt="MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=",'
         'saltedpassword="mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE=",iterations=8192]')

CONFIGS = {
    "static": "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
              "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:9093\n"
              "metadata.log.dir={d}/meta\nlog.dirs={d}/meta\n",
    "dynamic": "process.roles=controller\nnode.id=1\ncontroller.quorum.bootstrap.servers=127.0.0.1:9093\n"
               "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://127.0.0.1:9093\n"
               "metadata.log.dir={d}/meta\nlog.dirs={d}/meta\n",
    "broker": "process.roles=broker\nnode.id=2\ncontroller.quorum.voters=1@127.0.0.1:9093\n"
              "controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://127.0.0.1:9092\nlog.dirs={d}/data\n",
}

#: (config, format arguments) of each case.
CASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("static", ()),
    ("static", ("--release-version", "3.8-IV0")),
    ("static", ("--add-scram", SCRAM)),
    ("dynamic", ("--standalone",)),
    ("dynamic", ("--no-initial-controllers",)),
    # A static quorum stays kraft.version 0 (StorageTool: setHasDynamicQuorum(staticVotersEmpty)).
    ("static", ("--no-initial-controllers",)),
    ("static", ("--no-initial-controllers", "--feature", "kraft.version=1")),
    ("broker", ()),
    ("static", ("--release-version", "9.9-IV9")),
    # Production in 4.4, testing in 4.3 (unknown without unstable.feature.versions.enable), unknown before.
    ("static", ("--release-version", "4.4-IV0")),
    ("static", ("--feature", "kraft.version=1")),
    ("static", ("--release-version", "3.9-IV0", "--feature", "kraft.version=1")),
    ("broker", ("--feature", "kraft.version=1")),
    ("dynamic", ("--standalone", "--feature", "kraft.version=0")),
    ("dynamic", ("--standalone", "--release-version", "3.9-IV0", "--feature", "kraft.version=1")),
)


def _format(release: KafkaRelease, config: str, args: tuple[str, ...], folder: Path,
            kraft: bool, named: bool = True) -> tuple[live_tools.Run, Path]:
    """One format; kraft's prints as ``release`` (``--kafka-version``), or as
    its default when not ``named``."""
    folder.mkdir(parents=True)
    properties = folder / "server.properties"
    properties.write_text(CONFIGS[config].format(d=folder))
    command = ("format", "-t", CLUSTER, "-c", str(properties), *args)
    if kraft:
        version = ("--kafka-version", live_tools.kafka_version(release)) if named else ()
        # An empty KRAFT_KAFKA_VERSION names no release (kraft.kafka_release.kafka_release).
        run = live_tools.timed(kraft_args("storage", *command, *version), env={"KRAFT_KAFKA_VERSION": ""})
    else:
        done = run_tool(release, "StorageTool", *command, work=folder.parent)
        run = live_tools.Run(done.stdout, done.stderr, done.returncode, 0.0)
    return live_tools.Run(run.stdout.replace(str(folder), "<dir>"), run.stderr.replace(str(folder), "<dir>"),
                          run.rc, run.seconds), folder


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if p.is_file() and p.name not in ("server.properties", ".lock"))


def _records(path: Path) -> list[str]:
    """The records of a checkpoint, as the real tool prints them, less what
    differs between two formats: times and the directory id drawn."""
    dump = live_tools.timed(kraft_args("dump-log", "--cluster-metadata-decoder", "--files", str(path)))
    assert dump.rc == 0, dump.stderr
    lines = [line for line in dump.stdout.splitlines() if line.startswith("| ")]
    return [re.sub(r'(CreateTime: |"lastContainedLogTimestamp":)\d+|"voterDirectoryId":"[^"]+"', r"\1", line)
            for line in lines]


def test_storage_format_prints_and_writes_what_each_release_does(release: KafkaRelease, tmp_path: Path) -> None:
    _compare_formats(release, tmp_path, named=True)


def test_storage_format_by_default_is_the_newest_releases(tmp_path: Path) -> None:
    """No ``--kafka-version``: what the newest release's StorageTool prints
    and writes (4.4.0: the KIP-1170 layout), every case."""
    _compare_formats(require(newest()), tmp_path, named=False)


def _compare_formats(release: KafkaRelease, tmp_path: Path, named: bool) -> None:
    compared = pinned = 0
    for n, (config, args) in enumerate(CASES):
        theirs, their_dir = _format(release, config, args, tmp_path / f"kafka-{n}", kraft=False)
        ours, our_dir = _format(release, config, args, tmp_path / f"kraft-{n}", kraft=True, named=named)
        case = f"{release} format ({config}) {' '.join(args)}"
        if "\tat " in theirs.stderr:
            # The release's tool dies with a stack trace; kraft says why in one line, same exit code.
            assert (ours.rc, ours.stdout, len(ours.stderr.splitlines())) == (theirs.rc, theirs.stdout, 1), \
                (case, ours.stderr)
            message = theirs.stderr.splitlines()[0].split(": ", 1)[-1]
            assert ours.stderr.strip() == message, (case, theirs.stderr.splitlines()[0])
            pinned += 1
            continue
        assert (ours.stdout, ours.stderr, ours.rc) == (theirs.stdout, theirs.stderr, theirs.rc), case
        assert _files(our_dir) == _files(their_dir), case
        for name in _files(their_dir):
            if name.endswith("checkpoint"):
                assert _records(our_dir / name) == _records(their_dir / name), (case, name)
        compared += 1
        shutil.rmtree(their_dir)
        shutil.rmtree(our_dir)
    print(f"\n{release} storage format{'' if named else ' (kraft by default)'}: {compared} cases compared, "
          f"{pinned} pinned (a stack trace)")
    assert compared >= 7 and compared + pinned == len(CASES), (compared, pinned)
    interop.record("storage-format" if named else "storage-format-default", release.version,
                   f"yes: {compared} cases" + (f", {pinned} stack traces pinned" if pinned else ""))
