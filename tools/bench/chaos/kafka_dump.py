"""Real Kafka's reader beside ours: ``kafka.tools.DumpLogSegments`` over
every node's segments and snapshots, where Kafka's jars are installed.

Optional and pluggable: :data:`LOCATORS` are asked in turn for a directory
of Kafka's jars (``libs/``); the first answer wins. By default the
environment variable ``KRAFT_KAFKA_LIBS`` names one, else the newest
complete download under ``~/.cache/kraft/kafka/VERSION/lib``. A harness
that finds Kafka otherwise puts its own locator first. Without jars (or
without ``java``) the cross-check is not run, and the run says so.

One JVM reads every file (``--files a,b,...``). Its lines are parsed for
what :mod:`.segments` also knows: each batch's base and last offsets, its
CRC and ``isvalid``, and ``Found N invalid bytes at the end of FILE``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kraft.tools.bench.chaos.segments import PARTITION_DIR, NodeFiles
from kraft.tools.kafka_jars import ENV_VAR, LOCATORS, locate_kafka_libs

__all__ = ["DumpedFile", "LOCATORS", "cross_check", "dump_log_segments", "locate_kafka_libs"]

@dataclass
class DumpedFile:
    #: (base offset, last offset, CRC) of each batch Kafka calls valid.
    batches: set[tuple[int, int, int]] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


_DUMPING = re.compile(r"^Dumping (\S+)")
_BATCH = re.compile(r"baseOffset: (-?\d+) lastOffset: (-?\d+) .* crc: (-?\d+) isvalid: (\w+)")
_INVALID = re.compile(r"Found (\d+) invalid bytes at the end of (\S+)")


def _main_class(libs: Path) -> str:
    """``kafka.tools.DumpLogSegments`` until Kafka moved it to the tools jar (4.3;
    4.2.2 still ships it in kafka_2.13, as the jars show:
    ``org.apache.kafka.tools.DumpLogSegments``)."""
    import zipfile

    for jar in libs.glob("kafka-tools-*.jar"):
        with zipfile.ZipFile(jar) as z:
            if "org/apache/kafka/tools/DumpLogSegments.class" in z.namelist():
                return "org.apache.kafka.tools.DumpLogSegments"
    return "kafka.tools.DumpLogSegments"


def dump_log_segments(paths: list[Path], libs: Path) -> dict[str, DumpedFile]:
    """Each file's batches as DumpLogSegments prints them, by resolved path;
    RuntimeError when it cannot run."""
    if shutil.which("java") is None:
        raise RuntimeError("no java")
    done = subprocess.run(["java", "-cp", f"{libs}/*", _main_class(libs), "--deep-iteration",
                           "--files", ",".join(str(p) for p in paths)], capture_output=True, text=True, timeout=300)
    out: dict[str, DumpedFile] = {}
    current: DumpedFile | None = None
    for line in done.stdout.splitlines() + done.stderr.splitlines():
        if m := _DUMPING.match(line):
            current = out.setdefault(str(Path(m.group(1)).resolve()), DumpedFile())
        elif (m := _BATCH.search(line)) and current is not None:
            base, last, crc, valid = int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4) == "true"
            if valid:
                current.batches.add((base, last, crc & 0xFFFFFFFF))
            else:
                current.problems.append(f"DumpLogSegments: the batch at offset {base} is not valid")
        elif _INVALID.search(line) and current is not None:
            current.problems.append(f"DumpLogSegments: {line.strip()}")
    if not out:
        raise RuntimeError(f"DumpLogSegments printed nothing (exit {done.returncode}): {done.stderr.strip()[:200]}")
    return out


def cross_check(dirs: dict[int, Path], files: dict[int, NodeFiles]) -> tuple[str, dict[int, list[str]]]:
    """What ran, and per node where Kafka's reading of the segments and
    the latest snapshot differs from ours."""
    libs = locate_kafka_libs()
    if libs is None:
        return f"not run: no Kafka jars (set {ENV_VAR} to Kafka's libs directory)", {}
    segments = {n: sorted((d / PARTITION_DIR).glob("*.log")) for n, d in dirs.items()}
    snapshots = {n: f.snapshot_path for n, f in files.items() if f.snapshot_path is not None}
    try:
        dumped = dump_log_segments([p for ps in segments.values() for p in ps] + list(snapshots.values()), libs)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        return f"not run: {e}", {}
    disagree: dict[int, list[str]] = {}
    for n, paths in segments.items():
        ours = {(base, last, crc) for base, (last, crc) in files[n].batches.items()}
        found = _compare(dumped, paths, ours, "segments")
        snapshot = snapshots.get(n)
        if snapshot is not None:
            found += _compare(dumped, [snapshot], files[n].snapshot_batches, f"snapshot {snapshot.name}")
        if found:
            disagree[n] = found
    return (f"DumpLogSegments of {libs.parent.name}: {sum(map(len, segments.values()))} segments, "
            f"{len(snapshots)} snapshots"), disagree


def _compare(dumped: dict[str, DumpedFile], paths: list[Path], ours: set[tuple[int, int, int]],
             what: str) -> list[str]:
    theirs: set[tuple[int, int, int]] = set()
    found = []
    for path in paths:
        got = dumped.get(str(path.resolve()), DumpedFile())
        theirs |= got.batches
        found += [f"{path.name}: {p}" for p in got.problems]
    if theirs != ours:
        found.append(f"{what}: DumpLogSegments reads {len(theirs - ours)} batches we do not, "
                     f"we read {len(ours - theirs)} it does not")
    return found
