"""``kraft bench quorum``: the command. The phases are in
:mod:`kraft.tools.bench.quorum_commits`, ``--metrics-overhead`` in :mod:`kraft.tools.bench.metrics`."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import click

from kraft.tools.bench.quorum_options import QuorumBenchOptions

__all__ = ["quorum_bench_command"]


@click.command("quorum", short_help="Committed throughput, commit latency and failover time of a local quorum.")
@click.option("--duration", type=click.FloatRange(min=0.1), default=QuorumBenchOptions.duration_s,
              show_default=True, help="Seconds measured in the throughput and latency phases (each).")
@click.option("--warmup", type=click.FloatRange(min=0), default=QuorumBenchOptions.warmup_s, show_default=True,
              help="Seconds of load before each measurement.")
@click.option("--records-size", "record_size", type=click.IntRange(min=1), default=100, show_default=True,
              help="Bytes per record.")
@click.option("--failovers", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many times to kill -9 the leader.")
@click.option("--linger-ms", type=click.IntRange(min=0), default=QuorumBenchOptions.linger_ms, show_default=True,
              help="controller.quorum.append.linger.ms of the voters (Kafka's default is 25).")
@click.option("--window", type=click.IntRange(min=1), default=QuorumBenchOptions.window, show_default=True,
              help="At most this many records appended and not yet committed.")
@click.option("--latency-rate", type=click.FloatRange(min=1), default=None,
              help="Records/s of a single latency phase  [default: half the measured maximum, then half "
              "the throughput target]")
@click.option("--failover-rate", type=click.FloatRange(min=1), default=QuorumBenchOptions.failover_rate,
              show_default=True, help="Records/s appended during the failovers.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--keep", is_flag=True, help="Keep the temporary directory (configs, node logs, data).")
@click.option("--metrics-overhead", is_flag=True,
              help="Instead of the phases: maximum throughput with the raft metrics off and on "
              "(metrics.prometheus.port, scraped every second), alternating rounds, and the ratio.")
def quorum_bench_command(duration: float, warmup: float, record_size: int, failovers: int, linger_ms: int,
                         window: int, latency_rate: float | None, failover_rate: float, as_json: bool,
                         keep: bool, metrics_overhead: bool) -> None:
    """Committed records/s, commit latency and failover time of a local
    3-voter quorum (separate processes, fsync on); with --metrics-overhead,
    what the Prometheus metrics cost."""
    import trio

    from kraft.tools.bench.metrics import format_overhead, run_metrics_overhead
    from kraft.tools.bench.quorum_commits import BenchError, first_leaf, format_report, run_quorum_bench

    options = QuorumBenchOptions(duration_s=duration, warmup_s=warmup, record_size=record_size,
                                 failovers=failovers, linger_ms=linger_ms, window=window,
                                 latency_rate=latency_rate, failover_rate=failover_rate)
    root = Path(tempfile.mkdtemp(prefix="kraft-bench-quorum-"))

    def say(message: str) -> None:
        click.echo(message, err=as_json)

    ok = False
    try:
        try:
            if metrics_overhead:
                result = trio.run(run_metrics_overhead, options, root, say)
            else:
                result = trio.run(run_quorum_bench, options, root, say)
        except BaseExceptionGroup as group:
            # A BenchError raised inside the driver's nursery: show it plainly.
            errors = group.subgroup(BenchError)
            if errors is not None:
                raise first_leaf(errors) from None
            raise
        ok = True
    finally:
        if keep or not ok:
            click.echo(f"files kept in {root} (node-N.log has each voter's log)", err=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    elif metrics_overhead:
        click.echo("\n" + format_overhead(result))
    else:
        click.echo("\n" + format_report(result))

