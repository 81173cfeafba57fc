"""``kraft bench quorum --metrics-overhead``: what the raft metrics cost.

Two 3-voter quorums run side by side in one bench run, one with
``metrics.prometheus.port`` set (and every voter scraped once a second, a
busier scrape than Prometheus' usual 15 s), one without. Their maximum
committed throughput is measured in alternating rounds -- only one quorum
is loaded at a time, the other sits idle -- so a change in the machine's
load hits both alike; the medians and their ratio are reported (the target:
under 5% throughput lost).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from kraft.tools.bench.quorum_commits import QuorumBenchOptions, VOTERS, measure, BenchQuorum, throughput
from kraft.wire.tcp_connect import open_tcp_stream

__all__ = ["run_metrics_overhead", "format_overhead", "MAX_LOSS"]

#: The acceptance target: metrics on loses under 5% of the throughput.
MAX_LOSS = 0.05
SCRAPE_INTERVAL_S = 1.0
_METRICS_LINE = re.compile(rb"metrics on http://[^:/]+:(\d+)/metrics")


async def _metrics_port(quorum: BenchQuorum, node_id: int) -> int:
    """The ephemeral metrics port the voter logged at start-up."""
    path = quorum.root / f"node-{node_id}.log"
    with trio.fail_after(30):
        while True:
            m = _METRICS_LINE.search(path.read_bytes()) if path.exists() else None
            if m:
                return int(m.group(1))
            await trio.sleep(0.05)


async def _scrape(port: int) -> int:
    stream = await open_tcp_stream("127.0.0.1", port)
    async with stream:
        # Read to end of file: asking for the close makes that hold for any
        # HTTP/1.1 server, not only ours (which closes after every answer).
        await stream.send_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        size = 0
        while chunk := await stream.receive_some(65536):
            size += len(chunk)
    return size


async def _scraper(ports: list[int], counts: list[int]) -> None:
    while True:
        for port in ports:
            try:
                await _scrape(port)
                counts[0] += 1
            except OSError:
                pass  # a voter restarting: the next scrape tries again
        await trio.sleep(SCRAPE_INTERVAL_S)


async def run_metrics_overhead(options: QuorumBenchOptions, root: Path, say: Callable[[str], None],
                               rounds: int = 5) -> dict[str, Any]:
    """Maximum committed throughput with metrics off and on, ``rounds``
    alternating measurements each; JSON-able figures."""
    dirs = {"off": root / "metrics-off", "on": root / "metrics-on"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    on_options = dataclasses.replace(options, extra={
        **options.extra, "metrics.prometheus.port": "0", "metrics.prometheus.host": "127.0.0.1"})
    quorums = {"off": BenchQuorum(dirs["off"], options), "on": BenchQuorum(dirs["on"], on_options)}
    figures: dict[str, list[float]] = {"off": [], "on": []}
    scrapes = [0]
    async with trio.open_nursery() as nursery:
        try:
            for quorum in quorums.values():
                for node_id in VOTERS:
                    await quorum.start(node_id, nursery)
            for name, quorum in quorums.items():
                def voters_ready(q: BenchQuorum = quorum) -> bool:
                    return all(v.ready for v in q.voters.values())

                await quorum.wait_until(f"the metrics-{name} voters to start", voters_ready)
                await quorum.wait_until(f"a metrics-{name} leader", quorum.leader)
            ports = [await _metrics_port(quorums["on"], n) for n in VOTERS]
            nursery.start_soon(_scraper, ports, scrapes)
            say(f"metrics overhead: {rounds} alternating rounds of maximum throughput "
                f"({options.warmup_s:g} s warm-up, {options.duration_s:g} s measured), metrics off vs on "
                f"(each voter scraped every {SCRAPE_INTERVAL_S:g} s)")
            for i in range(rounds):
                for name in ("off", "on") if i % 2 == 0 else ("on", "off"):
                    quorum = quorums[name]
                    await quorum.set_rate(-1)
                    records_per_s = throughput(await measure(quorum, options))
                    await quorum.set_rate(0)
                    figures[name].append(records_per_s)
                    say(f"  round {i + 1}, metrics {name}: {records_per_s:,.0f} records/s")
        finally:
            with trio.CancelScope(shield=True):
                for quorum in quorums.values():
                    await quorum.stop_all()
            nursery.cancel_scope.cancel()
    off, on = statistics.median(figures["off"]), statistics.median(figures["on"])
    return {
        "rounds": rounds,
        "off_records_per_s": figures["off"],
        "on_records_per_s": figures["on"],
        "off_median": off,
        "on_median": on,
        "ratio": on / off if off else None,
        "scrapes": scrapes[0],
        "max_loss": MAX_LOSS,
    }


def format_overhead(result: dict[str, Any]) -> str:
    ratio = result["ratio"]
    loss = None if ratio is None else 1 - ratio
    verdict = "-" if loss is None else ("meets" if loss < MAX_LOSS else "MISSES")
    return "\n".join([
        f"metrics overhead ({result['rounds']} alternating rounds, median max committed throughput, "
        f"{result['scrapes']} scrapes):",
        f"  metrics off  {result['off_median']:>12,.0f} records/s",
        f"  metrics on   {result['on_median']:>12,.0f} records/s",
        f"  on / off     {'-' if ratio is None else f'{ratio:.3f}':>12}"
        f"  ({'-' if loss is None else f'{max(loss, 0.0):.1%}'} throughput lost; target < {MAX_LOSS:.0%} lost: "
        f"{verdict})",
    ])
