"""``kraft bench quorum``: throughput, commit latency and failover time of a
three-voter quorum of separate node processes (``kraft bench voter``: the
node of ``kraft node start`` with the bench load beside it).

The driver formats three metadata directories in a temporary directory
(``kraft storage format``, one cluster id, as ``kraft quickstart`` does) and
starts the voters in bench mode (``kraft bench voter``, hidden, see
:mod:`kraft.tools.bench.load`): KRaft has no client RPC that appends to the
metadata log, so the load runs inside whichever voter leads, as Kafka's
controller writes its own log. Every record is a separate, pipelined append
call and is fsynced by the leader and by a majority before it counts as
committed. Then the phases:

1. **throughput**: the leader appends as fast as it can (at most ``--window``
   records uncommitted); the committed records/s over ``--duration``;
2. **latency**: the leader appends at half that rate, then at half the
   throughput target (the targets' own load); p50/p99 of each record's
   commit latency (append call to high watermark past its offset);
3. **failover**: ``--failovers`` times, kill -9 the leader (appending
   ``--failover-rate`` records/s), time until the next leader commits its
   first record, restart the killed voter and let it catch up.

There is no Kafka to run here as a peer, so each figure is printed next to
its target and as a ratio to it. The command itself is in
:mod:`kraft.tools.bench.quorum_command` (it also runs :mod:`kraft.tools.bench.metrics`).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import trio

from kraft.records.state_files import random_cluster_id
from kraft.tools.bench.quorum_options import TARGETS, VOTERS, QuorumBenchOptions
from kraft.tools.quickstart import free_ports, write_properties

__all__ = ["run_quorum_bench", "format_report", "QuorumBenchOptions", "BenchError", "TARGETS", "VOTERS"]

class BenchError(click.ClickException):
    """The quorum misbehaved during the bench (no leader, a node died...)."""


@dataclass
class _Voter:
    node_id: int
    process: trio.Process | None = None
    ready: bool = False
    #: Killed by the bench on purpose (not restarted yet).
    killed: bool = False
    #: (epoch, leader id) as this voter last reported it.
    leader: tuple[int, int | None] = (0, None)


class BenchQuorum:
    """Three bench-mode voter processes and what they report."""

    def __init__(self, root: Path, options: QuorumBenchOptions) -> None:
        self.root = root
        self.options = options
        self.cluster_id = random_cluster_id()
        ports = free_ports(len(VOTERS))
        self.voters = {n: _Voter(n) for n in VOTERS}
        quorum_voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in zip(VOTERS, ports))
        extra = {"controller.quorum.append.linger.ms": str(options.linger_ms), **options.extra}
        for node_id, port in zip(VOTERS, ports):
            write_properties(self._config(node_id), node_id, port, quorum_voters, root / f"metadata-{node_id}", extra)
            subprocess.run(
                [sys.executable, "-m", "kraft.cli", "storage", "format", "--config", str(self._config(node_id)),
                 "--cluster-id", self.cluster_id],
                check=True, capture_output=True,
            )
        #: (epoch, node id, wall time) of each leader's first commit.
        self.first_commits: list[tuple[int, int, float]] = []
        #: (epoch, leader id, wall time) when some voter first learned it.
        self.elections: dict[int, tuple[int, float]] = {}
        self.stats: dict[tuple[int, int], dict[str, Any]] = {}
        self._changed = trio.Event()
        self._report_id = 0
        self._rate: dict[str, Any] = {"op": "rate", "rate": 0, "window": options.window}

    def _config(self, node_id: int) -> Path:
        return self.root / f"server-{node_id}.properties"

    # --- processes ----------------------------------------------------------

    async def start(self, node_id: int, nursery: trio.Nursery) -> None:
        voter = self.voters[node_id]
        voter.ready = False
        voter.killed = False
        with open(self.root / f"node-{node_id}.log", "ab") as log_file:
            voter.process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "kraft.cli", "bench", "voter", "--config", str(self._config(node_id)),
                 "--record-size", str(self.options.record_size)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file,
            )
        nursery.start_soon(self._read, voter, voter.process)
        await self._send(node_id, self._rate)

    async def kill(self, node_id: int) -> None:
        voter = self.voters[node_id]
        process = voter.process
        assert process is not None
        voter.ready = False
        voter.killed = True
        voter.leader = (0, None)
        process.kill()  # SIGKILL
        await process.wait()

    async def stop_all(self) -> None:
        """Close every voter's stdin (bench mode then shuts the node down
        gracefully); kill what has not exited after a while."""
        for voter in self.voters.values():
            if voter.process is not None and voter.process.stdin is not None:
                with trio.move_on_after(1):
                    await voter.process.stdin.aclose()
        for voter in self.voters.values():
            if voter.process is None:
                continue
            with trio.move_on_after(10):
                await voter.process.wait()
            if voter.process.returncode is None:
                voter.process.kill()
                await voter.process.wait()

    async def _read(self, voter: _Voter, process: trio.Process) -> None:
        assert process.stdout is not None
        buffer = b""
        async for data in process.stdout:
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                try:
                    report = json.loads(line)
                except ValueError:
                    continue  # not a bench report (stdout is the node's too)
                if isinstance(report, dict) and "type" in report:
                    self._on_report(voter, report)
        self._notify()

    def _on_report(self, voter: _Voter, report: dict[str, Any]) -> None:
        match report["type"]:
            case "ready":
                voter.ready = True
            case "leader":
                epoch, leader = report["epoch"], report["leader"]
                voter.leader = (epoch, leader)
                if leader is not None and epoch not in self.elections:
                    self.elections[epoch] = (leader, report["t"])
            case "first_commit":
                self.first_commits.append((report["epoch"], report["node"], report["t"]))
            case "stats":
                self.stats[(report["id"], report["node"])] = report
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, what: str, condition: Callable[[], Any], timeout_s: float = 30.0) -> Any:
        with trio.move_on_after(timeout_s):
            while not (result := condition()):
                for voter in self.voters.values():
                    if voter.process is not None and voter.process.returncode is not None and not voter.killed:
                        raise BenchError(f"node {voter.node_id} exited (see {self.root}/node-{voter.node_id}.log)")
                await self._changed.wait()
            return result
        raise BenchError(f"timed out after {timeout_s:.0f} s waiting for {what} (logs in {self.root})")

    # --- commands -------------------------------------------------------------

    def alive(self) -> list[int]:
        return [n for n, v in self.voters.items() if v.process is not None and v.process.returncode is None]

    async def _send(self, node_id: int, command: dict[str, Any]) -> None:
        process = self.voters[node_id].process
        if process is None or process.stdin is None or process.returncode is not None:
            return
        try:
            await process.stdin.send_all((json.dumps(command) + "\n").encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # it died; the caller notices

    async def broadcast(self, command: dict[str, Any]) -> None:
        if command.get("op") == "rate":
            self._rate = command
        for node_id in self.alive():
            await self._send(node_id, command)

    async def set_rate(self, rate: float) -> None:
        await self.broadcast({"op": "rate", "rate": rate, "window": self.options.window})

    async def report(self, nodes: list[int] | None = None) -> dict[int, dict[str, Any]]:
        self._report_id += 1
        rid = self._report_id
        nodes = self.alive() if nodes is None else nodes
        for node_id in nodes:
            await self._send(node_id, {"op": "report", "id": rid})
        await self.wait_until("stats", lambda: all((rid, n) in self.stats for n in nodes), 10)
        return {n: self.stats.pop((rid, n)) for n in nodes}

    def leader(self) -> tuple[int, int] | None:
        """(epoch, leader id) of the highest epoch a live voter knows a leader of."""
        known = [v.leader for n, v in self.voters.items() if n in self.alive() and v.leader[1] is not None]
        if not known:
            return None
        epoch, leader = max(known, key=lambda e: e[0])
        return (epoch, leader) if leader in self.alive() else None


# --- phases ---------------------------------------------------------------------------


async def measure(quorum: BenchQuorum, options: QuorumBenchOptions) -> dict[int, dict[str, Any]]:
    await trio.sleep(options.warmup_s)
    await quorum.broadcast({"op": "reset"})
    await trio.sleep(options.duration_s)
    return await quorum.report()


def throughput(stats: dict[int, dict[str, Any]]) -> float:
    elapsed = max(s["elapsed"] for s in stats.values())
    return sum(s["committed"] for s in stats.values()) / elapsed


def _cpu(stats: dict[int, dict[str, Any]]) -> dict[str, float]:
    """CPU microseconds per committed record, of the leader and of the
    average follower (every thread of the process: trio, log writes)."""
    committed = sum(s["committed"] for s in stats.values()) or 1
    leader = _busiest(stats)
    followers = [s for s in stats.values() if s is not leader]
    return {
        "leader_cpu_us": leader["cpu_s"] / committed * 1e6,
        "follower_cpu_us": (sum(s["cpu_s"] for s in followers) / max(1, len(followers))) / committed * 1e6,
    }


def _busiest(stats: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The stats of the voter that committed the most (the leader, unless
    leadership moved during the phase)."""
    return max(stats.values(), key=lambda s: s["committed"])


async def _failover(quorum: BenchQuorum, nursery: trio.Nursery, say: Callable[[str], None]) -> dict[str, float]:
    current = await quorum.wait_until("a leader", quorum.leader)
    epoch, leader = current
    await quorum.wait_until(
        f"a first commit by leader {leader} in epoch {epoch}",
        lambda: any(e == epoch for e, _, _ in quorum.first_commits))
    survivors = [n for n in quorum.alive() if n != leader]
    logs = {n: quorum.root / f"node-{n}.log" for n in survivors}
    log_start = {n: path.stat().st_size if path.exists() else 0 for n, path in logs.items()}
    killed_at = time.time()
    await quorum.kill(leader)

    def next_commit() -> tuple[int, int, float] | None:
        later = [c for c in quorum.first_commits if c[0] > epoch]
        return min(later) if later else None

    new_epoch, new_leader, committed_at = await quorum.wait_until("a new leader's first commit", next_commit)
    elected = min((e, t) for e, (lid, t) in quorum.elections.items() if e > epoch)[1]
    # The survivors' role changes since the kill (each node logs one INFO
    # line per change): every pre-vote (KIP-996) and vote round they started.
    changes = "".join(_read_from(logs[n], log_start[n]) for n in survivors)
    result = {"failover_s": committed_at - killed_at, "election_s": elected - killed_at,
              "old_epoch": epoch, "new_epoch": new_epoch,
              # Each epoch between the two is an election nobody won (a split vote).
              "failed_elections": new_epoch - epoch - 1,
              "pre_vote_rounds": changes.count(" -> Prospective in epoch "),
              "vote_rounds": changes.count(" -> Candidate in epoch ")}
    split = f" after {result['failed_elections']} split vote(s)" if result["failed_elections"] else ""
    say(f"  killed node {leader} (epoch {epoch}); node {new_leader} leads epoch {new_epoch}{split}: elected after "
        f"{result['election_s']:.2f} s, first commit after {result['failover_s']:.2f} s "
        f"({result['pre_vote_rounds']} pre-vote, {result['vote_rounds']} vote rounds)")
    # Restart the killed voter and let it catch up before the next kill.
    await quorum.start(leader, nursery)
    await quorum.wait_until(f"node {leader} to rejoin",
                            lambda: quorum.voters[leader].ready and quorum.voters[leader].leader[1] is not None)
    target = (await quorum.report([new_leader]))[new_leader]["high_watermark"]
    deadline = trio.current_time() + 30
    while (await quorum.report([leader]))[leader]["log_end_offset"] < target:
        if trio.current_time() > deadline:
            raise BenchError(f"node {leader} did not catch up within 30 s (logs in {quorum.root})")
        await trio.sleep(0.2)
    await trio.sleep(1.0)
    return result


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def percentile_of(values: list[float], q: float) -> float:
    """The nearest-rank percentile (``q`` in 0..1) of ``values``: p90 of 20
    failovers is the 18th fastest, of 10 the 9th."""
    ordered = sorted(values)
    rank = math.ceil(round(q * len(ordered), 9))
    return ordered[min(len(ordered), max(1, rank)) - 1]


async def _latency(quorum: BenchQuorum, options: QuorumBenchOptions, rate: float, why: str,
                   say: Callable[[str], None]) -> dict[str, Any]:
    say(f"latency at {rate:,.0f} records/s ({why})")
    await quorum.set_rate(rate)
    stats = await measure(quorum, options)
    busiest = _busiest(stats)
    say(f"  p50 {_ms(busiest['p50_ms'])}, p99 {_ms(busiest['p99_ms'])}, max {_ms(busiest['max_ms'])}")
    return {"rate": rate, "why": why, "records_per_s": throughput(stats), "p50_ms": busiest["p50_ms"],
            "p99_ms": busiest["p99_ms"], "max_ms": busiest["max_ms"], **_cpu(stats)}


async def run_quorum_bench(options: QuorumBenchOptions, root: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """Run the phases in ``root``; the figures as a JSON-able dict."""
    quorum = BenchQuorum(root, options)
    result: dict[str, Any] = {
        "voters": len(VOTERS),
        "record_size": options.record_size,
        "append_linger_ms": options.linger_ms,
        "window": options.window,
        "duration_s": options.duration_s,
        "cpus": os.cpu_count(),
        # Other work on the machine skews every figure: say how busy it was.
        "load_average_before": os.getloadavg()[0],
        "targets": TARGETS,
    }
    half_target = TARGETS["records_per_s"] / 2
    async with trio.open_nursery() as nursery:
        try:
            for node_id in VOTERS:
                await quorum.start(node_id, nursery)
            await quorum.wait_until("the voters to start", lambda: all(v.ready for v in quorum.voters.values()))
            epoch, leader = await quorum.wait_until("a leader", quorum.leader)
            say(f"voters started in {root}; node {leader} leads epoch {epoch}")

            say(f"maximum throughput ({options.warmup_s:g} s warm-up, {options.duration_s:g} s measured, "
                f"at most {options.window:,} records uncommitted)")
            await quorum.set_rate(-1)
            stats = await measure(quorum, options)
            records_per_s = throughput(stats)
            busiest = _busiest(stats)
            result["throughput"] = {"records_per_s": records_per_s, "p50_ms": busiest["p50_ms"],
                                    "p99_ms": busiest["p99_ms"], **_cpu(stats)}
            say(f"  {records_per_s:,.0f} records/s committed (p99 {_ms(busiest['p99_ms'])} at that load; "
                f"CPU per record: leader {result['throughput']['leader_cpu_us']:.1f} us, "
                f"followers {result['throughput']['follower_cpu_us']:.1f} us)")

            if options.latency_rate:
                result["latency"] = await _latency(quorum, options, options.latency_rate, "as asked", say)
            else:
                result["latency"] = await _latency(
                    quorum, options, max(1.0, records_per_s / 2), "half the maximum", say)
                result["latency_at_target"] = await _latency(
                    quorum, options, half_target, "half the throughput target", say)

            if options.failovers:
                rate = options.failover_rate
                say(f"{options.failovers} x kill -9 of the leader, appending {rate:,.0f} records/s")
                await quorum.set_rate(rate)
                runs = [await _failover(quorum, nursery, say) for _ in range(options.failovers)]
                times = [r["failover_s"] for r in runs]
                result["failover"] = {
                    "rate": rate,
                    "runs": runs,
                    "median_s": statistics.median(times),
                    "p90_s": percentile_of(times, 0.9),
                    "max_s": max(times),
                    "pre_vote_rounds": sum(r["pre_vote_rounds"] for r in runs),
                    "vote_rounds": sum(r["vote_rounds"] for r in runs),
                    "election_median_s": statistics.median(r["election_s"] for r in runs),
                    "split_votes": sum(1 for r in runs if r["failed_elections"]),
                    "failed_elections": sum(r["failed_elections"] for r in runs),
                }
            await quorum.set_rate(0)
            result["load_average_after"] = os.getloadavg()[0]
        finally:
            with trio.CancelScope(shield=True):
                await quorum.stop_all()
            nursery.cancel_scope.cancel()
    return result


# --- output ------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def format_report(result: dict[str, Any]) -> str:
    t = TARGETS
    lines = [
        f"kraft bench quorum: {result['voters']} voter processes on 127.0.0.1, fsync on, "
        f"{result['record_size']}-byte records, one pipelined append call per record,",
        f"controller.quorum.append.linger.ms={result['append_linger_ms']}, default election and fetch timeouts, "
        f"{result['duration_s']:g} s per measured phase;",
        f"{result['cpus']} CPUs, load average {result['load_average_before']:.1f} before the run, "
        f"{result.get('load_average_after', float('nan')):.1f} after",
        "(no Kafka peer runs here: each figure is compared with its target; ratio >= 1 meets it)",
        "",
        f"{'':36}{'ours':>14}{'target':>13}{'ratio':>8}",
    ]

    def row(name: str, ours: str, target: str = "", ratio: float | None = None) -> None:
        lines.append(f"{name:36}{ours:>14}{target:>13}{'' if ratio is None else f'{ratio:.2f}':>8}")

    tp = result["throughput"]
    row("max committed throughput", f"{tp['records_per_s']:,.0f} rec/s", f">= {t['records_per_s']:,.0f}",
        tp["records_per_s"] / t["records_per_s"])
    row("  CPU per record: leader, follower",
        f"{tp['leader_cpu_us']:.1f}, {tp['follower_cpu_us']:.1f} us")
    for key in ("latency", "latency_at_target"):
        lat = result.get(key)
        if not lat:
            continue
        lines.append(f"commit latency at {lat['rate']:,.0f} rec/s ({lat['why']}):")
        row("  p50", _ms(lat["p50_ms"]))
        row("  p99", _ms(lat["p99_ms"]), f"< {t['p99_ms']:g} ms",
            None if not lat["p99_ms"] else t["p99_ms"] / lat["p99_ms"])
        row("  max", _ms(lat["max_ms"]))
    fo = result.get("failover")
    if fo:
        lines.append(f"failover, kill -9 of the leader to the new leader's first commit "
                     f"({len(fo['runs'])} kills, {fo['rate']:,.0f} rec/s appended):")
        row("  median", f"{fo['median_s']:.2f} s", f"<= {t['failover_median_s']:g} s",
            t["failover_median_s"] / fo["median_s"])
        row("  p90", f"{fo['p90_s']:.2f} s", f"<= {t['failover_p90_s']:g} s", t["failover_p90_s"] / fo["p90_s"])
        row("  max", f"{fo['max_s']:.2f} s")
        row("  median, kill to election", f"{fo['election_median_s']:.2f} s")
        row("  pre-vote rounds, vote rounds", f"{fo['pre_vote_rounds']}, {fo['vote_rounds']}")
        row("  failovers with a split vote", f"{fo['split_votes']} of {len(fo['runs'])}")
        row("  elections lost to split votes", f"{fo.get('failed_elections', fo['split_votes'])}")
    return "\n".join(lines)


def first_leaf(group: BaseExceptionGroup) -> BaseException:
    first = group.exceptions[0]
    return first_leaf(first) if isinstance(first, BaseExceptionGroup) else first
