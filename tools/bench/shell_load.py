"""``kraft bench shell``: how fast ``kraft shell --directory`` opens a log.

It synthesizes a ``__cluster_metadata-0`` directory holding one large segment
(``tools/bench/records.py``'s synthesizer: controller-shaped batches of
metadata records) and measures, on the same files and in the same process:

* ours: ``kraft shell --directory``'s load -- every batch CRC-checked, every
  record applied to the metadata image (read in place from the segment; a
  batch of NoOpRecords seen before is applied by one lookup);
* the peer: ``kraft dump-log --cluster-metadata-decoder --json`` over the
  same segment (every record decoded and printed as JSON, to /dev/null).

It prints records per second of both and their ratio (the target: opening a
directory is at least as fast as dumping it), and records per CPU second of
both (dump-log's forked workers included): dump-log renders a large file in
one worker per CPU, the shell replays in one process.
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

import click


def replay_directory(directory: Path) -> tuple[int, int]:
    """Open ``directory`` as ``kraft shell --directory`` does; (records applied, image offset)."""
    from kraft.image.builder import ImageBuilder
    from kraft.image.history import DirectoryHistory

    # The synthesized log fences brokers it never registered: the image skips
    # those records (counted, not logged here).
    logger = logging.getLogger("kraft.image")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        builder = ImageBuilder()
        image = DirectoryHistory(directory).image(None, builder)
    finally:
        logger.setLevel(level)
    return builder.records_applied, image.offset


def dump_json(segment: Path) -> int:
    """``kraft dump-log --cluster-metadata-decoder --json --files SEGMENT`` to /dev/null."""
    from kraft.tools.dump_log import run_dump

    with open(os.devnull, "w", encoding="utf-8") as sink:
        status = run_dump([str(segment)], metadata_decoder=True, as_json=True, out=sink, err=sink)
    if status != 0:
        raise click.ClickException(f"dump-log failed on {segment}")
    return status


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its reaped children
    (dump-log's forked workers), from ``getrusage``."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@click.command("shell")
@click.option("--size-mb", type=float, default=100.0, show_default=True, help="Size of the synthesized log.")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the synthesized log (the same seed, the same log).")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where to write the log (default: a temp dir, removed after).")
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Measure both sides this many times, taking turns (on a shared machine a change in load "
                   "then hits both alike); the figures are the medians.")
def shell_bench_command(size_mb: float, seed: int, directory: Path | None, rounds: int) -> None:
    """Records replayed per second opening a log directory, against dump-log --json."""
    from kraft.records.state_files import CLUSTER_METADATA_DIR
    from kraft.tools.bench.records import synthesize_metadata_log

    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="kraft-bench-shell-") as tmp:
        base = directory if directory is not None else Path(tmp)
        pdir = base / CLUSTER_METADATA_DIR
        pdir.mkdir(parents=True, exist_ok=True)
        segment = pdir / "00000000000000000000.log"
        t0 = time.perf_counter()
        log = synthesize_metadata_log(segment, int(size_mb * 1024 * 1024), seed=seed)
        click.echo(f"synthesized {segment}: {log.size:,} bytes, {log.batches:,} batches, {log.records:,} records "
                   f"({time.perf_counter() - t0:.1f} s)")
        applied = 0
        for i in range(rounds):
            # Alternate who goes first, so neither side always meets a warmer cache.
            for side in (("shell", "dump") if i % 2 == 0 else ("dump", "shell")):
                gc.collect()
                start, cpu0 = time.perf_counter(), cpu_seconds()
                if side == "shell":
                    applied, offset = replay_directory(base)
                    if offset != log.records - 1:
                        raise click.ClickException(
                            f"the image is at offset {offset}, the log ends at {log.records - 1}")
                    ours.append((time.perf_counter() - start, cpu_seconds() - cpu0))
                else:
                    dump_json(segment)
                    theirs.append((time.perf_counter() - start, cpu_seconds() - cpu0))

    ours_s, ours_cpu = (statistics.median(x) for x in zip(*ours))
    theirs_s, theirs_cpu = (statistics.median(x) for x in zip(*theirs))
    median = f", median of {rounds} rounds" if rounds > 1 else ""
    click.echo(f"kraft shell --directory   : {log.records / ours_s:12,.0f} records/s ({ours_s:.2f} s{median}, "
               f"{applied:,} metadata records applied)")
    click.echo(f"kraft dump-log --json     : {log.records / theirs_s:12,.0f} records/s ({theirs_s:.2f} s{median})")
    if ours_cpu > 0 and theirs_cpu > 0:
        click.echo(f"per CPU second: shell {log.records / ours_cpu:,.0f} records, dump-log --json "
                   f"{log.records / theirs_cpu:,.0f} records (its forked workers included): "
                   f"{theirs_cpu / ours_cpu:.2f}x")
    click.echo(f"ratio (shell / dump-log --json): {theirs_s / ours_s:.2f}x "
               f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; dump-log renders a file "
               f"of 4 MB or more in one forked worker per CPU)")
    if rounds > 1:
        per_round = ", ".join(f"{t[0] / o[0]:.2f}x" for o, t in zip(ours, theirs))
        click.echo(f"ratio per round: {per_round}")
