"""``kraft bench controller``: Kafka's controller served by kraft against
Kafka's own, the same operations in one run on the same three real Kafka
brokers' configuration (:mod:`kraft.tools.bench.controller_sides`).

On each side, in turn: ``--topics`` topics of 3 partitions, RF 3, created
through the brokers (kafka-python's admin client, in batches of 100), timed
until every CreateTopics answered and a broker's Metadata gives every
partition a leader; kill -9 of the active controller (the raft leader) until
a CreateTopics succeeds again; kill -9 of a broker until no partition in
Metadata names it as leader; the active controller's resident set at the end
(``VmRSS``: the Python process, or Kafka's JVM). Each figure is printed for
both sides with the ratio kraft / Kafka.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kraft.tools.bench.controller_sides import ControllerSide
    from kraft.tools.bench.kafka_jvm import KafkaJars

__all__ = ["controller_bench_command"]

BATCH = 100
PARTITIONS = 3
REPLICATION_FACTOR = 3
#: A phase that gives up fails the run (Kafka fences a dead broker after 9 s).
PATIENCE_S = 180.0
Say = Callable[[str], None]


def _until(what: str, check: Callable[[], bool], timeout_s: float = PATIENCE_S, every_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if check():
                return
        except Exception:  # noqa: BLE001 -- a client error while the cluster changes: ask again
            pass
        if time.monotonic() > deadline:
            raise click.ClickException(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(every_s)


def _admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kraft-bench-controller",
                            request_timeout_ms=30000)


def _leaders(admin: Any, topics: set[str] | None = None) -> dict[tuple[str, int], int]:
    """Each partition's leader id in one broker's Metadata (of ``topics``, else all)."""
    out: dict[tuple[str, int], int] = {}
    for topic in admin.describe_topics(None):
        if topic["error_code"] == 0 and (topics is None or topic["name"] in topics):
            for p in topic["partitions"]:
                out[(topic["name"], p["partition_index"])] = p["leader_id"]
    return out


def _create(admin: Any, names: list[str], timeout_ms: int = 60000) -> list[tuple[str, int]]:
    """CreateTopics of ``names``; the (name, error code) of each that failed
    (36, TOPIC_ALREADY_EXISTS, is a success: an earlier try created it)."""
    response = admin.create_topics({n: {"num_partitions": PARTITIONS, "replication_factor": REPLICATION_FACTOR}
                                    for n in names}, timeout_ms=timeout_ms, raise_errors=False)
    return [(t["name"], t["error_code"]) for t in response["topics"] if t["error_code"] not in (0, 36)]


def _topics_per_s(admin: Any, count: int) -> float:
    names = [f"bench-{i:05d}" for i in range(count)]
    start = time.monotonic()
    for i in range(0, count, BATCH):
        failed = _create(admin, names[i:i + BATCH])
        if failed:
            raise click.ClickException(f"CreateTopics refused {len(failed)} topics, e.g. {failed[0]}")
    wanted = set(names)
    _until("every partition created with a leader",
           lambda: len([v for v in _leaders(admin, wanted).values() if v >= 0]) == count * PARTITIONS, every_s=0.1)
    return count / (time.monotonic() - start)


def _active(side: ControllerSide) -> int:
    """The active controller, once the quorum-state files name a live one."""
    deadline = time.monotonic() + PATIENCE_S
    while (active := side.active_controller()) is None:
        if time.monotonic() > deadline:
            raise click.ClickException(f"no active controller within {PATIENCE_S:.0f} s")
        time.sleep(0.05)
    return active


def _controller_failover_s(side: ControllerSide, admin: Any, say: Say) -> float:
    active = _active(side)
    say(f"  kill -9 of the active controller {active}")
    side.controllers[active].kill()
    killed = time.monotonic()
    tries = iter(range(1_000_000))
    _until("CreateTopics after the controller's kill", lambda: not _create(admin, [f"after-kill-{next(tries)}"], 5000))
    return time.monotonic() - killed


def _broker_failover_s(side: ControllerSide, admin: Any, broker: int, say: Say) -> float:
    led = sum(1 for leader in _leaders(admin).values() if leader == broker)
    say(f"  kill -9 of broker {broker} (leader of {led} partitions)")
    side.brokers[broker].kill()
    killed = time.monotonic()
    alive = set(side.brokers) - {broker}

    def moved() -> bool:
        return all(leader in alive for leader in _leaders(admin).values())
    _until(f"new leaders for broker {broker}'s partitions", moved)
    return time.monotonic() - killed


def run_side(kind: str, root: Path, jars: KafkaJars, topics: int, say: Say) -> dict[str, float]:
    """One side's figures: topics/s, controller and broker failover (s), the active controller's RSS (MiB)."""
    from kraft.tools.bench.controller_sides import BROKERS, ControllerSide
    from kraft.tools.bench.kafka_jvm import vm_rss_kib

    side = ControllerSide(kind, root, jars)
    try:
        side.format()
        say(f"{kind}: starting 3 controllers, then 3 Kafka {jars.version} brokers in {root}")
        side.start()
        admin = _admin(side.bootstrap)
        try:
            _until("3 brokers registered", lambda: len(admin.describe_cluster()["brokers"]) == len(BROKERS))
            figures = {"topics_per_s": _topics_per_s(admin, topics)}
            say(f"  {topics} topics created: {figures['topics_per_s']:,.1f} topics/s")
            figures["controller_failover_s"] = _controller_failover_s(side, admin, say)
            figures["broker_failover_s"] = _broker_failover_s(side, admin, BROKERS[-1], say)
            figures["controller_rss_mib"] = vm_rss_kib(side.controllers[_active(side)].pid) / 1024
        finally:
            admin.close()
    finally:
        side.close()
    return figures


#: (key, label, unit format) of each figure, in print order.
FIGURES = (("topics_per_s", "topics created per second", "{:,.1f}/s"),
           ("broker_failover_s", "broker kill -9 to new leaders", "{:.2f} s"),
           ("controller_failover_s", "controller kill -9 to CreateTopics", "{:.2f} s"),
           ("controller_rss_mib", "active controller RSS", "{:,.1f} MiB"))


def format_report(ours: dict[str, float], peer: dict[str, float], topics: int, version: str,
                  load_before: float) -> str:
    lines = [f"{topics} topics x {PARTITIONS} partitions, RF {REPLICATION_FACTOR}, 3 Kafka {version} brokers: "
             f"3 `kraft node start` controllers (kraft) against 3 Kafka {version} controllers (Kafka)"]
    for key, label, unit in FIGURES:
        lines.append(f"{label + ':':<37} kraft {unit.format(ours[key]):>12}  Kafka {unit.format(peer[key]):>12}  "
                     f"ratio (kraft / Kafka) {ours[key] / peer[key]:.2f}x")
    # The neighbours' load moves the figures more than either side does: say it.
    lines.append(f"load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
                 f"on {os.cpu_count()} CPUs")
    return "\n".join(lines)


@click.command("controller", short_help="Kafka brokers on a kraft controller quorum against Kafka's own controllers.")
@click.option("--topics", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Topics created (3 partitions, RF 3 each), in batches of 100.")
@click.option("--keep", is_flag=True, help="Keep the temporary directory (configs, logs, data).")
def controller_bench_command(topics: int, keep: bool) -> None:
    """Topics created per second, broker and controller failover after kill
    -9, and the active controller's RSS: 3 `kraft node start` controllers
    against 3 real Kafka controllers, each with 3 real Kafka brokers, in one
    run; each figure for both sides and the ratio."""
    from kraft.tools.bench.kafka_jvm import locate_kafka

    jars = locate_kafka()
    root = Path(tempfile.mkdtemp(prefix="kraft-bench-controller-"))
    load_before = os.getloadavg()[0]
    ok = False
    try:
        ours = run_side("kraft", root / "kraft", jars, topics, click.echo)
        peer = run_side("Kafka", root / "kafka", jars, topics, click.echo)
        ok = True
    finally:
        if keep or not ok:
            click.echo(f"files kept in {root} (each server's stdout.log and server.log)", err=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    click.echo("\n" + format_report(ours, peer, topics, jars.version or "?", load_before))
