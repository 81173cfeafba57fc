"""Run a real Kafka tool and kraft's look-alike on the same inputs, and say
where their outputs differ: the live comparison of issue 35.

One JVM call covers many files where the tool allows it (DumpLogSegments
takes ``--files a,b,c``); kraft runs as a user runs it (``kraft dump-log
--kafka-version X.Y``, a subprocess), so the wall times compare like for
like. :func:`write_golden` keeps a live output as a JSON line, in the form of
the stored outputs (paths under the fixtures written ``fixtures:...``), in a
folder outside the repository that ``$KRAFT_LIVE_GOLDEN_DIR`` names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.harness.cli import kraft_args
from tests.kafka.processes import run_tool
from tests.kafka.releases import KafkaRelease

#: Where a run with real Kafka writes what the real tools printed (unset: nowhere).
GOLDEN_DIR_VAR = "KRAFT_LIVE_GOLDEN_DIR"


@dataclass(frozen=True)
class Run:
    """One tool's answer and how long it took."""

    stdout: str
    stderr: str
    rc: int
    seconds: float


def kafka_version(release: KafkaRelease) -> str:
    """The ``--kafka-version`` that makes kraft print as ``release``: its own version."""
    return release.version


def timed(command: list[str], stdin: str | None = None, env: dict[str, str] | None = None) -> Run:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, input=stdin, timeout=600,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          env=None if env is None else {**os.environ, **env})
    return Run(done.stdout, done.stderr, done.returncode, time.monotonic() - started)


def real_dump(release: KafkaRelease, flags: tuple[str, ...], files: list[Path], work: Path) -> Run:
    started = time.monotonic()
    done = run_tool(release, "DumpLogSegments", *flags, "--files", ",".join(map(str, files)), work=work,
                    timeout_s=600)
    return Run(done.stdout, done.stderr, done.returncode, time.monotonic() - started)


def kraft_dump(release: KafkaRelease, flags: tuple[str, ...], files: list[Path]) -> Run:
    return timed(kraft_args("dump-log", "--kafka-version", kafka_version(release), *flags,
                            "--files", ",".join(map(str, files))))


def first_difference(expected: str, actual: str) -> str:
    """The first line where ``actual`` (kraft) differs from ``expected`` (Kafka), or ''."""
    if expected == actual:
        return ""
    ours, theirs = actual.split("\n"), expected.split("\n")
    for n, (a, b) in enumerate(zip(ours, theirs)):
        if a != b:
            return f"line {n + 1}:\n  Kafka: {b[:300]}\n  kraft: {a[:300]}"
    return f"Kafka printed {len(theirs)} lines, kraft {len(ours)}"


def per_file(stdout: str) -> dict[str, str]:
    """A batched DumpLogSegments output cut at each ``Dumping <path>`` header:
    path -> what a run on that file alone prints."""
    starts = [m for m in re.finditer(r"^Dumping (.*)$", stdout, flags=re.MULTILINE)]
    ends = [m.start() for m in starts[1:]] + [len(stdout)]
    return {m.group(1): stdout[m.start():end] for m, end in zip(starts, ends)}


def write_golden(name: str, records: list[dict[str, object]], fixtures: Path) -> Path | None:
    """Append ``records`` (as JSON lines, fixture paths as ``fixtures:...``)
    to ``$KRAFT_LIVE_GOLDEN_DIR/<name>.jsonl``; None when the variable is unset."""
    folder = os.environ.get(GOLDEN_DIR_VAR)
    if not folder:
        return None
    path = Path(folder) / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        for record in records:
            text = json.dumps(record, ensure_ascii=False).replace(str(fixtures) + "/", "fixtures:")
            out.write(text + "\n")
    return path


def shell_release(release: KafkaRelease, installed: list[KafkaRelease]) -> KafkaRelease | None:
    """The release whose metadata shell stands for ``release``'s: its own, or,
    where Maven Central has none (4.2.1, 4.2.2, 4.4.0), the nearest installed
    one that has a shell printing alike (the same :class:`kraft.image.tree.ShellForm`:
    4.2.2's is 4.2.0's, 4.4.0's 4.3.1's); None when none is installed."""
    from kraft.kafka_release import RELEASES

    if release.shell_missing is None:
        return release

    def form(r: KafkaRelease) -> tuple[bool, bool]:
        facts = RELEASES[r.version]
        return facts.lists_zk_migration_state, facts.prints_cordoned_directories

    alike = [r for r in installed if r.shell_missing is None and form(r) == form(release)]
    return min(alike, key=lambda r: (abs(r.minor[1] - release.minor[1]), r.minor > release.minor), default=None)


def build_info(release: KafkaRelease) -> tuple[str, str]:
    """``AppInfoParser``'s version and commit id: kafka-clients' ``kafka/kafka-version.properties``."""
    jar = next((release.home / "lib").glob("kafka-clients-*.jar"))
    with zipfile.ZipFile(jar) as z:
        text = z.read("kafka/kafka-version.properties").decode()
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))
    return props["version"].strip(), props["commitId"].strip()


def real_shell(release: KafkaRelease, snapshot: Path, commands: str, work: Path) -> Run:
    started = time.monotonic()
    done = run_tool(release, "MetadataShell", "--snapshot", str(snapshot), work=work, stdin=commands, timeout_s=300)
    return Run(done.stdout, done.stderr, done.returncode, time.monotonic() - started)


def kraft_shell(release: KafkaRelease, snapshot: Path, commands: str) -> Run:
    return timed(kraft_args("shell", "--kafka-version", kafka_version(release), "--snapshot", str(snapshot)),
                 stdin=commands)


def answers(stdout: str) -> list[str]:
    """A stdin session's output cut at each ``>> `` prompt (the first part is the banner)."""
    return stdout.split(">> ")
