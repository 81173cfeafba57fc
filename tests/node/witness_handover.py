"""The paused-follower run of tests/node/test_witness_handover_processes.py:
a two-site quorum whose surviving "Kafka" controller is behind when the
leader dies (kraft/raft/handover.py).

Three ``kraft node start`` processes on 127.0.0.1: nodes 1 and 2 play Kafka
controllers -- started through ``kafka_launcher`` (default
:data:`tests.node.kafka_played.LAUNCHER`), the arguments after
``python`` that run ``kraft`` with a node answering ApiVersions exactly as a
real Kafka 4.0 controller does, with ``kraft.witness=false`` so they lead as
Kafka's do -- and node 3 is a kraft voter with default settings
(``kraft.witness=auto``: a witness). Each
node appends numbered records while it leads and logs every one acknowledged
as committed (the demo load; the witness's appends are refused while it
hands over); an in-process observer follows the log and the leaders.

One round: once a Kafka-played node leads and records commit, the other is
paused (SIGSTOP, as a GC pause or a stalled disk would), records go on
committing with the witness's acknowledgement for ``pause_s``, the leader is
killed (kill -9), and the paused one resumes (SIGCONT). It is behind the
witness, so only a hand-over epoch can elect it: the witness leads once,
briefly, appending nothing but LeaderChange, and resigns in its favour. The
round ends when the resumed node leads and commits records again. Between
rounds the killed node restarts and catches up.

Checked at the end (on the stopped processes' files): every acknowledged
record is committed at its offset; the witness led at most once per round,
and never appended a record; the final leader is a Kafka-played node::

    await run_witness_handover(root, say, rounds=3, pause_s=4.0, append_rate=50.0, ports=None)

returns a JSON-able dict (see :func:`run_witness_handover`). Real Kafka
controllers beside a witness: tests/kafka/test_witness*.py.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraft.records.state_files import random_cluster_id
from kraft.tools.bench.node_process import KRAFT, FaultLog, NodeProcess, SayFaultLog, kill, pause, restart, resume
from tests.harness import cli
from tests.harness.poll import until_async

if TYPE_CHECKING:
    from kraft.node.node import KraftNode

__all__ = ["HANDOVER_LINE", "handover_round", "run_witness_handover", "witness_round"]

KAFKA = (1, 2)
WITNESS = 3
OBSERVER_ID = 99
#: The witness's INFO line when it hands over (kraft/raft/handover.py).
HANDOVER_LINE = re.compile(r"-> Resigned in epoch (\d+), leader \d+: hand-over complete: .* after (\d+) ms as leader")
_LEADS = re.compile(r"raft role \w+ -> Leader in epoch (\d+)")


def witness_round(witness_log: str, led_before: int) -> tuple[int, int | None]:
    """From the witness's output: the epochs it led since it had led
    ``led_before`` times, and how long its last hand-over epoch lasted (ms;
    None when it did not need to lead)."""
    led = len(_LEADS.findall(witness_log)) - led_before
    handovers = HANDOVER_LINE.findall(witness_log)
    return led, int(handovers[-1][1]) if led and handovers else None


async def handover_round(
    log: FaultLog, nodes: Mapping[int, NodeProcess], witness: int, first: int, behind: int, *,
    leader: Callable[[], int | None], progress: Callable[[str, int], Awaitable[None]],
    until: Callable[[Callable[[], bool], str], Awaitable[None]], pause_s: float,
    commits: tuple[int, int, int] = (5, 10, 20),
) -> dict[str, Any]:
    """One round on the processes ``nodes`` while ``first`` (a Kafka-played
    node) leads: pause ``behind``, let records commit with the witness
    (``commits[0]``, then ``pause_s``), kill -9 ``first``, resume ``behind``,
    wait until it leads and commits (``commits[1]``), restart ``first`` and
    let it catch up (``commits[2]``). ``progress(what, n)`` waits for ``n``
    more commits, ``until(predicate, what)`` for the predicate; each raises
    the caller's error when it gives up. The round's figures: ``killed``,
    ``resumed``, ``kill_to_leader_ms``, ``witness_led``, ``handover_ms``."""
    import trio

    paused, killed = nodes[behind], nodes[first]
    pause_fault = pause(log, paused, "SIGSTOP: the Kafka-played follower falls behind")
    await progress("while the follower is paused", commits[0])
    await trio.sleep(pause_s)
    led_before = len(_LEADS.findall(nodes[witness].output()))
    kill_fault = await kill(log, killed, "kill -9 of the Kafka-played leader, restarted once the follower leads")
    killed_at = time.monotonic()
    resume(log, paused, pause_fault)
    await until(lambda: leader() == behind, f"node {behind} leading after the kill")
    elected_ms = round((time.monotonic() - killed_at) * 1000)
    await progress(f"with node {behind} leading", commits[1])
    led, handover_ms = witness_round(nodes[witness].output(), led_before)
    # The killed node returns as a follower and catches up.
    restart(log, killed, kill_fault)
    await progress(f"after node {first} restarted", commits[2])
    return {"killed": first, "resumed": behind, "kill_to_leader_ms": elected_ms, "witness_led": led,
            "handover_ms": handover_ms}


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


async def _follow_committed(observer: KraftNode, committed: dict[int, bytes]) -> None:
    """Every committed data record the observer replicates, by offset."""
    from kraft.node.snapshots import CommittedBatch

    async for item in observer.committed_batches(start_offset=0):
        if isinstance(item, CommittedBatch) and not item.is_control:
            for i, value in enumerate(item.records):
                committed[item.base_offset + i] = value


async def _watch_leaders(observer: KraftNode, leaders: list[tuple[float, int, int | None]]) -> None:
    """Each leader the observer learns of: (monotonic time, epoch, leader id)."""
    while True:
        leader = observer.leader
        leaders.append((time.monotonic(), leader.epoch, leader.leader_id))
        await observer.wait_leader_change(leader)


async def _until_settled(observer: KraftNode, timeout_s: float) -> None:
    """Once the load stopped: wait until the observer's high watermark stays
    put for 1.5 s (the last records committed)."""
    seen = [-1]

    def settled() -> bool:
        previous, seen[0] = seen[0], observer.high_watermark
        return previous == seen[0]

    await until_async("the observer's high watermark settled", settled, timeout_s=timeout_s, interval_s=1.5)


async def run_witness_handover(
    root: Path, say: Callable[[str], None], *, kafka_launcher: Sequence[str] | None = None, rounds: int = 1,
    pause_s: float = 4.0, append_rate: float = 50.0, ports: Sequence[int] | None = None,
    round_timeout_s: float = 90.0,
) -> dict[str, Any]:
    """Run ``rounds`` paused-follower rounds in ``root`` (see the module
    docstring). ``ports``: four free ports (nodes 1-3 and the observer),
    else the system picks. The result: ``rounds`` (per round: the leader
    killed, the resumed node, ``kill_to_leader_ms`` until the observer saw
    the resumed node lead, ``handover_ms`` the witness's time as leader or
    None if it did not need to lead), ``handover_ms_median`` / ``_max``,
    ``witness_led`` (hand-over epochs in the witness's log),
    ``witness_appended`` (records acknowledged by the witness: 0),
    ``acknowledged``, ``lost`` (acknowledged but not committed there),
    ``final_leader``, ``load_average``."""
    import trio

    from kraft.config import NodeConfig
    from kraft.node.fault import RaisingFaultHandler
    from kraft.node.node import KraftNode
    from kraft.tools.quickstart import free_ports
    from tests.node.kafka_played import LAUNCHER

    ids = [*KAFKA, WITNESS]
    configs = _formatted_nodes(root, list(ports) if ports is not None else free_ports(4))
    procs = {i: NodeProcess(i, configs[i], root / f"node-{i}.out", root / f"acks-{i}.tsv", append_rate,
                            tuple(kafka_launcher or LAUNCHER) if i in KAFKA else KRAFT) for i in ids}
    committed: dict[int, bytes] = {}
    leaders: list[tuple[float, int, int | None]] = []
    result: dict[str, Any] = {"rounds": [], "load_average": os.getloadavg()[0]}
    observer = KraftNode(NodeConfig.load(configs[OBSERVER_ID]), fault_handler=RaisingFaultHandler())

    def leader_now() -> int | None:
        return observer.leader.leader_id if observer.running else None

    async def until(predicate: Callable[[], bool], what: str, timeout_s: float = round_timeout_s) -> None:
        # A round that stalls fails the run.
        await until_async(f"witness-handover: {what}", predicate, timeout_s=timeout_s, interval_s=0.02)

    async def commits(count: int, what: str) -> None:
        target = len(committed) + count
        await until(lambda: len(committed) >= target, what)

    try:
        async with trio.open_nursery() as nursery:
            for p in procs.values():
                p.start()
            await nursery.start(observer.run)
            nursery.start_soon(_follow_committed, observer, committed)
            nursery.start_soon(_watch_leaders, observer, leaders)
            await until(lambda: leader_now() in KAFKA, "a Kafka-played leader after start-up")
            await commits(20, "commits after start-up")
            log = SayFaultLog(say, leader_now)
            for n in range(rounds):
                first = leader_now()
                assert first in KAFKA
                behind = next(i for i in KAFKA if i != first)
                say(f"round {n + 1}: node {first} leads, node {behind} is paused")
                round_result = await handover_round(
                    log, procs, WITNESS, first, behind, leader=leader_now, until=until, pause_s=pause_s,
                    progress=lambda what, count: commits(count, f"commits {what}"))
                result["rounds"].append(round_result)
                say(f"round {n + 1}: node {behind} leads {round_result['kill_to_leader_ms']} ms after the kill; "
                    f"witness led {round_result['witness_led']} time(s)"
                    + (f", for {round_result['handover_ms']} ms" if round_result["witness_led"] else ""))
            for p in procs.values():
                p.send(signal.SIGUSR1)  # stop the demo load
            await _until_settled(observer, round_timeout_s)
            result["final_leader"] = leader_now()
            await observer.shutdown()
            nursery.cancel_scope.cancel()
    finally:
        for p in procs.values():
            p.stop()
    _summarise(result, procs, committed, leaders)
    return result


def _formatted_nodes(root: Path, ports: list[int]) -> dict[int, Path]:
    """The properties of nodes 1-3 and the observer in ``root``, each
    directory formatted with one new cluster id; by node id."""
    from kraft.tools.quickstart import write_properties

    ids = [*KAFKA, WITNESS]
    quorum = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(ids, ports))
    cluster_id = random_cluster_id()
    configs: dict[int, Path] = {}
    for node_id, port in zip([*ids, OBSERVER_ID], ports):
        extra = {"kraft.witness": "false"} if node_id in KAFKA else {}
        configs[node_id] = root / f"server-{node_id}.properties"
        write_properties(configs[node_id], node_id, port, quorum, root / f"metadata-{node_id}", extra)
        done = cli.run("storage", "format", "--config", str(configs[node_id]), "--cluster-id", cluster_id)
        if done.returncode != 0:
            raise RuntimeError(f"kraft storage format failed: {done.stdout}{done.stderr}")
    return configs


def _summarise(result: dict[str, Any], procs: dict[int, NodeProcess], committed: dict[int, bytes],
               leaders: list[tuple[float, int, int | None]]) -> None:
    """Add to ``result`` what the run's nodes acknowledged, lost and led."""
    acks = [a for i in KAFKA for a in procs[i].acknowledged()]
    result["acknowledged"] = len(acks)
    result["lost"] = sum(1 for offset, value in acks if committed.get(offset) != value)
    result["witness_appended"] = len(procs[WITNESS].acknowledged())
    result["witness_led"] = len(_LEADS.findall(procs[WITNESS].output()))
    result["leaders"] = [(epoch, leader) for _, epoch, leader in leaders]
    times = [r["handover_ms"] for r in result["rounds"] if r["handover_ms"] is not None]
    result["handover_ms_median"] = _median(times)
    result["handover_ms_max"] = max(times) if times else None
    elected = [r["kill_to_leader_ms"] for r in result["rounds"]]
    result["kill_to_leader_ms_median"] = _median(elected)
    result["kill_to_leader_ms_max"] = max(elected) if elected else None
