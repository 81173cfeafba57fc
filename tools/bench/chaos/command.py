"""The ``kraft bench chaos`` command: options (refused in one line when they
cannot be honoured, before anything starts), the run, the summary."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kraft.tools.bench.chaos.run import ChaosOptions

__all__ = ["chaos_bench_command", "format_chaos_report"]


def _operations_lines(result: dict[str, Any]) -> list[str]:
    """The complete history's outcomes, and who read the files."""
    ops = result.get("operations")
    lines = []
    if ops:
        what = {"client": "operations invoked", "kafka": "sends invoked"}.get(result.get("load", ""),
                                                                            "appends invoked")
        lines += [f"{what:<28}{ops['invoked']:>8}  (ok {ops['ok']}, fail {ops['fail']}, "
                  f"info {ops['info']})",
                  f"info, outcome unknown       {ops['info']:>8}  (committed {result.get('info_committed', 0)}, "
                  f"not committed {result.get('info_not_committed', 0)})"]
    if result.get("dump_log"):
        lines.append(f"files read by kafka-python's batch reader (CRC checked); {result['dump_log']}")
    return lines


def _leaderless_lines(result: dict[str, Any]) -> list[str]:
    """The time without a leader during the faults (and how much of it no
    majority of the voters was even up), then after the last fault, apart."""
    line = f"time without a leader       {result['time_without_leader_s']:>7.1f} s"
    if "time_without_majority_s" in result:
        line += (f"  of {result['fault_phase_s']:.0f} s of faults ({result['time_without_majority_s']:.1f} s of it "
                 "with a majority of the voters down, paused or still starting)")
    lines = [line]
    if result.get("time_without_leader_after_faults_s"):
        lines.append(f"  and after the last fault   {result['time_without_leader_after_faults_s']:>7.1f} s")
    return lines


def format_chaos_report(result: dict[str, Any]) -> str:
    from kraft.tools.bench.chaos.checker import chaos_ok

    counts = ", ".join(f"{k} {n}" for k, n in result["fault_counts"].items())
    lines = [
        f"kraft bench chaos: seed {result['seed']}, {result['voters']} voter processes"
        f"{' (a witness)' if result.get('witness') else ''} + {result.get('observers', 1)} observer(s) "
        f"on {result.get('network', '127.0.0.1')}, {result['fault_phase_s']:.0f} s of faults "
        + (f"(scenario {result['scenario']})" if result.get("scenario") else
           f"(up to {result.get('max_concurrent_faults', 1)} at once)")
        + (f", the chaos client sending {result['append_rate']:g} AlterClientQuotas/s to the controllers;"
           if result.get("load") == "client" else
           f", Kafka's VerifiableProducer sending {result['append_rate']:g} records/s to 3 Kafka "
           f"{result.get('kafka_version') or ''} brokers on the controllers;"
           if result.get("load") == "kafka" else f", each leader appending {result['append_rate']:g} records/s;"),
        f"{result['cpus']} CPUs, load average {result['load_average_before']:.1f} before, "
        f"{result['load_average_after']:.1f} after",
        f"faults applied: {counts}",
    ]
    power = result.get("power_loss") or {}
    if power.get("cuts"):
        lines.append(f"power loss dropped: {power['bytes_dropped']} bytes in {power['files_dropped']} files over "
                     f"{power['cuts']} cuts ({power['cuts_that_dropped_nothing']} dropped nothing"
                     + (f", {power['cuts_unreported']} unreported" if power.get("cuts_unreported") else "") + ")")
    for kind, reason in result.get("skipped", {}).items():
        lines.append(f"nemesis {kind} skipped: {reason}")
    lines += result.get("notes", [])
    lines += [
        "",
        f"acknowledged as committed   {result['acknowledged']:>8}",
        f"present on every node       {result['present']:>8}",
        *_operations_lines(result),
        f"lost                        {result['lost']:>8}",
        f"leader changes              {result['leader_changes']:>8}",
        *_leaderless_lines(result),
    ]
    if result.get("load") == "kafka":
        lines.append(f"read back by VerifiableConsumer {result.get('read_back', 0):>6}")
    if result.get("load") not in ("client", "kafka"):  # no metadata offset in their answers: no HW seen
        lines.append(f"committed records (HW {result['high_watermark']})  {result['committed_records']:>6}")
    heals = result.get("after_heals")
    if heals:
        lines.append(f"a leader committing again after a heal: median {heals['median_s']:.1f} s, p99 "
                     f"{heals['p99_s']:.1f} s over {heals['heals']} heals (Kafka: election timeout "
                     f"{heals['election_timeout_s']:g} s, fetch timeout {heals['fetch_timeout_s']:g} s)")
    for kind, a in result.get("availability", {}).items():
        lines.append(f"after a {kind} heal: a leader committing again in {a['mean_s']:.1f} s mean, "
                     f"{a['max_s']:.1f} s worst ({a['heals']:g} heals with nothing else broken)")
    if result.get("history"):
        lines.append(f"history: {result['history']}" + (f", timeline: {result['timeline']}"
                                                          if result.get("timeline") else ""))
    lines.append("")
    if chaos_ok(result) and result.get("load") == "client":
        lines.append("OK: every operation the controller acknowledged has its record on every voter, none twice, "
                     "no failed one anywhere")
        return "\n".join(lines)
    if chaos_ok(result) and result.get("load") == "kafka":
        lines.append("OK: every record the brokers acknowledged was read back at its offset, none invented, "
                     "none twice, each partition in send order; the controllers' logs whole")
        return "\n".join(lines)
    if chaos_ok(result):
        lines.append("OK: every acknowledged record is on every node, in order; logs agree up to the high watermark")
        return "\n".join(lines)
    lines.append("FAILED:")
    for key, what in (("lost_records", "acknowledged as committed, not in the committed history"),
                      ("missing_on", "acknowledged records missing, per node"),
                      ("out_of_order_leaders", "leaders (node, epoch) whose acknowledged records are out of order"),
                      ("logs_disagree", "logs that disagree with the committed history"),
                      ("two_leaders_in_an_epoch", "epochs with two leaders"),
                      ("changed_below_high_watermark", "content changed below the high watermark"),
                      ("files_corrupt", "defects in the files (read without kraft)"),
                      ("dump_log_disagrees", "DumpLogSegments reads the files otherwise"),
                      ("fail_committed", "appends that failed, yet are committed"),
                      ("applied_twice", "client operations whose record is in a log twice, per node"),
                      ("invented", "read back, never sent (or an offset read with two values)"),
                      ("out_of_order_partitions", "partitions whose records are not in send order"),
                      ("power_loss_dropped_nothing", "power cuts were applied and none dropped anything"),
                      ("wrong_fail_stops", "nodes that did not fail-stop with status 1 on EIO"),
                      ("stalled", "liveness")):
        found = result.get(key)
        if not found:
            continue
        if isinstance(found, list):
            shown = "; ".join(f"offset {x[0]}: {x[1]!r}" if isinstance(x, (list, tuple)) and len(x) == 2
                              and isinstance(x[0], int) else str(x) for x in found[:5])
            total = result["lost"] if key == "lost_records" else len(found)
            more = f" (and {total - 5} more)" if total > 5 else ""
            lines.append(f"  {what}: {shown}{more}")
        else:
            lines.append(f"  {what}: {found}")
    lines.append(f"  replay: kraft bench chaos --seed {result['seed']} --voters {result['voters']} "
                 f"--nemesis {','.join(result.get('nemesis', []))} "
                 + (f"--load {result['load']} " if result.get("load") in ("client", "kafka") else "")
                 + (f"--scenario {result['scenario']}" if result.get("scenario") else
                    f"--duration {result['duration_s']:g}"))
    return "\n".join(lines)


NEMESIS_HELP = ("Comma list of partition, power-loss, kill, pause, disk-full, fsync, lying-disk, or one partition "
                "shape by name: cut, one-way, bridge, ring (5 voters), flaky, flapping "
                "[default: every one but lying-disk and the shapes the machine can run].")


def _chaos_options(duration: float, seed: int, voters: str, observers: int, witness: bool, nemesis: str | None,
                   max_concurrent_faults: int, scenario: str | None, append_rate: float,
                   load: str = "demo") -> ChaosOptions:
    """The run the options ask for; what cannot be honoured is refused, in
    one line, before anything starts."""
    from kraft.tools.bench.chaos.run import MIN_FAULT_S, NEMESES, ChaosOptions, packages_needed, unavailable_reason
    from kraft.tools.bench.chaos.scenarios import SCENARIOS
    from kraft.tools.bench.extras import CHAOS_NOTE, require_extra

    kinds: tuple[str, ...] = ChaosOptions.nemesis
    if nemesis is not None:
        kinds = tuple(k.strip() for k in nemesis.split(",") if k.strip())
        unknown = [k for k in kinds if k not in NEMESES]
        if unknown or not kinds:
            raise click.UsageError(f"unknown nemesis {', '.join(unknown) or '(none)'}; choose from {', '.join(NEMESES)}")
        if "ring" in kinds and int(voters) < 5:
            raise click.UsageError(f"nemesis ring needs --voters 5 or more (with {voters}, every ring is whole)")
    # Only what the nemeses use: kill and pause run without the extra (the timeline is skipped without matplotlib).
    require_extra("chaos", packages_needed(kinds, nemesis is not None), CHAOS_NOTE)
    if nemesis is not None:
        for kind in kinds:
            reason = unavailable_reason(kind)
            if reason is not None:
                raise click.ClickException(f"nemesis {kind} cannot run on this machine: {reason}")
    if load in ("client", "kafka"):
        kinds = _client_load_kinds(kinds, nemesis is not None, scenario, load)
    if load == "kafka":
        _kafka_available()
    nodes = int(voters) + observers
    if max_concurrent_faults > nodes:
        raise click.UsageError(f"--max-concurrent-faults {max_concurrent_faults} is more than the {nodes} nodes")
    if duration < MIN_FAULT_S:
        raise click.UsageError(f"--duration {duration:g} is shorter than one fault ({MIN_FAULT_S:g} s)")
    if scenario is not None and scenario not in SCENARIOS:
        raise click.UsageError(f"no scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS)) or 'none'}")
    return ChaosOptions(duration_s=duration, seed=seed, voters=int(voters), append_rate=append_rate,
                        nemesis=kinds, nemesis_explicit=nemesis is not None, max_concurrent=max_concurrent_faults,
                        observers=observers, witness=witness, scenario=scenario,
                        load=load)


def _kafka_available() -> None:
    """``--load kafka`` runs Kafka's jars: refused at once without them."""
    from kraft.tools.kafka_brokers import find_kafka

    found = find_kafka()
    if isinstance(found, str):
        raise click.ClickException(f"--load kafka needs real Kafka: {found}")


def _client_load_kinds(kinds: tuple[str, ...], explicit: bool, scenario: str | None,
                       load: str = "client") -> tuple[str, ...]:
    """The nemeses ``--load client`` and ``--load kafka`` can run. The
    chaos client joins the nodes' network (a namespace of its own on their
    bridge) and runs every one; Kafka's brokers and clients run on the
    host, which cannot reach nodes in network namespaces, so no partition."""
    from kraft.tools.bench.chaos.run import PARTITION_NEMESES

    if scenario is not None:
        raise click.UsageError(f"--scenario {scenario} runs the demo load; drop --load {load}")
    if load == "client":
        return kinds
    partitions = [k for k in kinds if k == "partition" or k in PARTITION_NEMESES]
    if partitions and explicit:
        raise click.UsageError(f"--load {load} cannot run nemesis {', '.join(partitions)} (Kafka's brokers and "
                               "clients run on 127.0.0.1, outside the nodes' network namespaces); drop it or use "
                               "--load client")
    return tuple(k for k in kinds if k not in partitions)


@click.command("chaos", short_help="Partitions, power loss, kill, pause, full disk, failing fsync on real "
                                   "processes, overlapping; no acknowledged record lost.")
@click.option("--duration", type=click.FloatRange(min=1), default=60.0, show_default=True, help="Seconds of faults (a --scenario ends when it does).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fault schedule.")
@click.option("--voters", type=click.Choice(["3", "5"]), default="3", show_default=True, help="Voter processes.")
@click.option("--observers", type=click.IntRange(min=0, max=9), default=1, show_default=True,
              help="Observer processes.")
@click.option("--witness", is_flag=True, help="The last voter is a kraft witness (kraft.witness=true).")
@click.option("--nemesis", default=None, help=NEMESIS_HELP)
@click.option("--max-concurrent-faults", type=click.IntRange(min=1), default=2, show_default=True,
              help="Faults that may overlap.")
@click.option("--scenario", default=None, help="Run a named scenario instead of the random schedule.")
@click.option("--append-rate", type=click.FloatRange(min=1), default=50.0, show_default=True,
              help="Records/s the leader's client appends (one at a time).")
@click.option("--load", type=click.Choice(["demo", "client", "kafka"]), default="demo", show_default=True,
              help="demo: each voter's own demo load; client: an independent client process sending "
                   "AlterClientQuotas to the voters, which run Kafka's controller; "
                   "kafka: 3 real Kafka brokers on those voters, Kafka's VerifiableProducer the client and "
                   "VerifiableConsumer reading it back (Kafka's jars; no partition nemesis).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--keep", is_flag=True, help="Keep the run's directory (configs, node logs, ack logs, data, history).")
def chaos_bench_command(duration: float, seed: int, voters: str, observers: int, witness: bool, nemesis: str | None,
                        max_concurrent_faults: int, scenario: str | None, append_rate: float, load: str,
                        as_json: bool, keep: bool) -> None:
    """Throw faults at real voter and observer processes on a seeded,
    overlapping schedule while a client appends: network partitions (each
    node in its own network namespace), power loss (a FUSE disk that drops
    what was never fsynced), kill -9, SIGSTOP, a full disk, failing fsync;
    then check the files: no acknowledged record may be lost. Writes a
    JSON-lines history and (with matplotlib) a timeline picture; exits 1
    when a check fails."""
    import trio

    from kraft.tools.bench.chaos.checker import chaos_ok
    from kraft.tools.bench.chaos.run import ChaosError, run_chaos

    options = _chaos_options(duration, seed, voters, observers, witness, nemesis, max_concurrent_faults, scenario,
                             append_rate, load)
    root = Path(tempfile.mkdtemp(prefix="kraft-bench-chaos-"))

    def say(message: str) -> None:
        click.echo(message, err=as_json)

    ok = False
    result: dict[str, Any] | None = None
    try:
        try:
            result = trio.run(run_chaos, options, root, say)
        except BaseExceptionGroup as group:
            from kraft.tools.bench.chaos.run import Interrupted

            errors = group.subgroup((ChaosError, Interrupted, KeyboardInterrupt))
            if errors is None:
                raise
            first: BaseException = errors
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None
        ok = chaos_ok(result)
    except (ChaosError, KeyboardInterrupt) as e:
        raise click.ClickException(str(e) or "interrupted; every process stopped, disks unmounted, "
                                              "namespaces deleted") from None
    except Exception as e:
        if type(e).__name__ != "Interrupted":
            raise
        raise click.ClickException(f"{e}; every process stopped, disks unmounted, namespaces deleted") from None
    finally:
        if keep or not ok:
            click.echo(f"files kept in {root} (node-N.log, acks-N.tsv, metadata-N/, history.jsonl, timeline.svg)",
                       err=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if ok and not keep:
        result["history"] = result["timeline"] = None  # removed with the run's directory (--keep keeps them)
    click.echo(json.dumps(result, indent=2, default=str) if as_json else "\n" + format_chaos_report(result))
    if not ok:
        raise SystemExit(1)
