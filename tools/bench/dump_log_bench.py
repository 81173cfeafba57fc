"""``kraft bench dump-log``: whole-process speed of ``kraft dump-log``.

Synthesizes a ``__cluster_metadata`` segment (the record mix of ``kraft bench
records``), then times ``kraft dump-log --cluster-metadata-decoder`` in text
and ``--json`` as separate processes writing to ``/dev/null`` (interpreter
start included, the way a user meets it), and, on the same bytes in the same
run, kafka-python's record reader (every batch CRC-checked, every record's
fields read; it has no metadata decoder, so it does less work than either of
ours). Prints records/s and MB/s of each, and the ratios. Wall time on a
machine shared with other work measures the other work too: the CPU time of
each process is printed beside it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def _run_process(args: list[str]) -> Timing:
    """Run ``args`` with stdout to /dev/null; wall and CPU (user+sys, children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(args, stdout=sink, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise click.ClickException(f"{' '.join(args)} failed: {done.stderr.decode(errors='replace').strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def _best(args: list[str], repeat: int) -> Timing:
    runs = [_run_process(args) for _ in range(repeat)]
    return min(runs, key=lambda t: t.wall)


def _kafka_python(data: bytes, repeat: int) -> tuple[Timing, int]:
    from kraft.tools.bench.records import decode_with_kafka_python

    best: Timing | None = None
    count = 0
    for _ in range(repeat):
        cpu0 = time.process_time()
        start = time.perf_counter()
        count = decode_with_kafka_python(data)
        timing = Timing(time.perf_counter() - start, time.process_time() - cpu0)
        if best is None or timing.wall < best.wall:
            best = timing
    assert best is not None
    return best, count


@click.command("dump-log")
@click.option("--size-mb", type=click.FloatRange(min=0, min_open=True), default=100.0, show_default=True,
              help="Size of the synthesized log (more than 0).")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs of each (the fastest is reported).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the synthesized log (the same seed, the same log).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="Where to write the log (default: a temp dir, removed after).")
def bench_dump_log(size_mb: float, repeat: int, seed: int, directory: str | None) -> None:
    """kraft dump-log (text and --json, whole process) against kafka-python's decoder."""
    from kraft.tools.bench.records import synthesize_metadata_log

    with tempfile.TemporaryDirectory(prefix="kraft-bench-") as tmp:
        base = Path(directory) if directory else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        path = base / "00000000000000000000.log"
        log = synthesize_metadata_log(path, int(size_mb * 1024 * 1024), seed=seed)
        click.echo(f"synthesized {path}: {log.size:,} bytes, {log.batches:,} batches, {log.records:,} records")
        kraft = [sys.executable, "-m", "kraft.cli", "dump-log", "--cluster-metadata-decoder", "--files", str(path)]
        start_up = _best([sys.executable, "-m", "kraft.cli", "--help"], repeat)
        text = _best(kraft, repeat)
        as_json = _best(kraft + ["--json"], repeat)
        peer, count = _kafka_python(path.read_bytes(), repeat)
    if count != log.records:
        raise click.ClickException(f"kafka-python read {count} records, {log.records} were written")
    mb = log.size / 1e6

    def row(name: str, t: Timing) -> str:
        return (f"{name:<34} {mb / t.wall:8.1f} MB/s {log.records / t.wall:12,.0f} records/s "
                f"({t.wall:.2f} s wall, {t.cpu:.2f} s CPU)")

    click.echo(row("kraft dump-log (text, process)", text))
    click.echo(row("kraft dump-log --json (process)", as_json))
    click.echo(row("kafka-python decode (in process)", peer))
    click.echo(f"interpreter + CLI start-up: {start_up.wall:.2f} s wall")
    click.echo(f"ratio text / kafka-python:  {peer.wall / text.wall:.2f}x (records/s)")
    click.echo(f"ratio json / kafka-python:  {peer.wall / as_json.wall:.2f}x (records/s)")
