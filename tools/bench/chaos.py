"""``kraft bench chaos``: a Jepsen-style run on real node processes.

A quorum of ``kraft node start`` voters (3, or ``--voters 5``) on 127.0.0.1
plus an observer (a node in this process, following the log as any observer
does). KRaft has no client RPC that appends to the metadata log, so the
client is the one Kafka's controller is: each voter, while it leads, appends
numbered records one at a time (``--demo-append-rate``) and writes each one
acknowledged as committed to its ack log before the next append (line
buffered: a kill -9 cannot lose an acknowledgement).

Meanwhile a schedule drawn from ``--seed`` injects one fault at a time:

* ``kill``: kill -9 of a voter (the leader half the time), restarted later;
* ``pause``: SIGSTOP past the fetch timeout, then SIGCONT;
* ``disk-full``: the metadata directory of one voter is a small tmpfs; it is
  filled to the last byte, then freed (skipped, with the reason printed,
  where mounts are not permitted);
* ``fsync``: the LD_PRELOAD shim (``fixtures/faults/fsync_fault.c``) makes the
  voter's fsyncs fail with EIO; it must fail-stop (exit 1), and is restarted
  on a healthy disk (skipped, with the reason, without a C compiler).

A voter that exits by itself (fail-stop) is restarted after the fault heals.
At the end everything heals, the load stops, the quorum goes quiet, every
process stops, and the files are checked: every acknowledged record is
committed at its offset (the observer saw it there) and present there on
every voter and the observer, the acknowledged records of each leader are
in the order it appended them, every voter's log agrees with the committed
history up to the high watermark, and there is at most one leader per epoch.
It prints the seed, the faults applied and the counts (acknowledged,
present, lost, leader changes, time without a leader).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

__all__ = ["ChaosOptions", "chaos_bench_command", "format_chaos_report", "run_chaos"]

OBSERVER_ID = 99
FAULT_KINDS = ("kill", "pause", "disk-full", "fsync")
#: Kafka's default controller.quorum.fetch.timeout.ms: a pause must outlast it.
FETCH_TIMEOUT_S = 2.0
DISK_FULL_SIZE = "32m"


@dataclass(frozen=True)
class ChaosOptions:
    duration_s: float = 60.0
    seed: int = 0
    voters: int = 3
    #: Records/s each leader's client appends (one at a time, each waited for).
    append_rate: float = 50.0
    #: Seconds between the end of one fault and the start of the next.
    gap_s: tuple[float, float] = (0.5, 3.0)
    #: Every liveness wait (a leader again, commits again) gives up after this.
    patience_s: float = 90.0


class ChaosError(click.ClickException):
    """The run could not go on (no leader for too long, a setup step failed)."""


@dataclass
class _Voter:
    node_id: int
    config: Path
    log_dir: Path
    out: Path
    acks: Path
    env: dict[str, str] | None
    #: Records/s its client appends while it leads.
    rate: float
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    paused: bool = False
    #: Stopped by the schedule (kill -9, the fsync fault): not an unexpected exit.
    expected_down: bool = False
    #: Exit codes of the exits we did not cause (fail-stop).
    own_exits: list[int] = field(default_factory=list)
    #: Latest role and epoch the node logged, and the log position read so far.
    role: str = "down"
    epoch: int = -1
    read_pos: int = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kraft.cli", "node", "start", "--config", str(self.config),
                 "--demo-append-rate", str(self.rate), "--demo-ack-log", str(self.acks)],
                stdout=out, stderr=subprocess.STDOUT, env=self.env,
            )
        self.starts += 1
        self.paused = False
        self.expected_down = False
        self.role = "starting"


_ROLE_AT_START = re.compile(r"raft role (\w+) in epoch (\d+) at start-up")
_ROLE_CHANGE = re.compile(r"raft role \w+ -> (\w+) in epoch (\d+)")


class _Chaos:
    def __init__(self, options: ChaosOptions, root: Path, say: Callable[[str], None]) -> None:
        self.options = options
        self.root = root
        self.say = say
        self.rng = random.Random(options.seed)
        self.voters: dict[int, _Voter] = {}
        self.faults: list[dict[str, Any]] = []
        self.skipped: dict[str, str] = {}
        self.leader_changes = 0
        self.leaders_seen: set[tuple[int, int]] = set()
        self.no_leader_s = 0.0
        self.started = time.monotonic()
        self.shim: Any = None
        self.tmpfs: Path | None = None
        self.disk_full_voter: int | None = None
        self.committed: dict[int, bytes] = {}
        self.observer: Any = None

    # --- setup -----------------------------------------------------------------------------

    def prepare(self) -> None:
        from kraft.tools.bench.faults import build_fsync_shim
        from kraft.tools.quickstart import free_ports, write_properties

        ids = list(range(1, self.options.voters + 1))
        shim = build_fsync_shim(self.root / "shim")
        if isinstance(shim, str):
            self.skipped["fsync"] = shim
        else:
            self.shim = shim
        self.disk_full_voter = self.rng.choice(ids)
        mount_dir = self.root / f"metadata-{self.disk_full_voter}"
        mount_dir.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_FULL_SIZE}", "tmpfs", str(mount_dir)],
                              capture_output=True, text=True)
        if done.returncode == 0:
            self.tmpfs = mount_dir
        else:
            self.skipped["disk-full"] = f"cannot mount a tmpfs ({done.stderr.strip() or done.returncode})"
        ports = free_ports(len(ids) + 1)
        quorum = ",".join(f"{i}@127.0.0.1:{p}" for i, p in zip(ids, ports))
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        configs = {}
        for node_id, port in zip([*ids, OBSERVER_ID], ports):
            configs[node_id] = self.root / f"server-{node_id}.properties"
            write_properties(configs[node_id], node_id, port, quorum, self.root / f"metadata-{node_id}", {})
        formats = [subprocess.Popen([sys.executable, "-m", "kraft.cli", "storage", "format", "--config", str(path),
                                     "--cluster-id", cluster_id], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                   for path in configs.values()]
        for proc in formats:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                raise ChaosError(f"kraft storage format failed: {output.decode(errors='replace')}")
        env = self.shim.env() if self.shim is not None else None
        for node_id in ids:
            self.voters[node_id] = _Voter(node_id, configs[node_id], self.root / f"metadata-{node_id}",
                                          self.root / f"node-{node_id}.log", self.root / f"acks-{node_id}.tsv", env,
                                          self.options.append_rate)
        self.observer_config = configs[OBSERVER_ID]

    def cleanup(self) -> None:
        for voter in self.voters.values():
            if voter.proc is not None and voter.proc.poll() is None:
                if voter.paused:
                    voter.proc.send_signal(signal.SIGCONT)
                voter.proc.kill()
                voter.proc.wait()
        if self.shim is not None:
            self.shim.disarm()
        if self.tmpfs is not None:
            subprocess.run(["umount", str(self.tmpfs)], capture_output=True)

    # --- watching --------------------------------------------------------------------------

    def _scan_logs(self) -> None:
        for voter in self.voters.values():
            if voter.proc is not None and voter.proc.poll() is not None:
                voter.role = "down"
            try:
                with open(voter.out, "rb") as f:
                    f.seek(voter.read_pos)
                    data = f.read()
            except FileNotFoundError:
                continue
            cut = data.rfind(b"\n") + 1
            voter.read_pos += cut
            for line in data[:cut].decode(errors="replace").splitlines():
                match = _ROLE_CHANGE.search(line) or _ROLE_AT_START.search(line)
                if match:
                    voter.role, voter.epoch = match.group(1).lower(), int(match.group(2))
                    if voter.role == "leader" and (voter.epoch, voter.node_id) not in self.leaders_seen:
                        self.leaders_seen.add((voter.epoch, voter.node_id))
                        self.leader_changes += 1

    def serving_leader(self) -> int | None:
        """A live, running voter whose latest role is leader in the highest epoch any logged."""
        epoch = max((v.epoch for v in self.voters.values()), default=-1)
        for voter in self.voters.values():
            if voter.alive and not voter.paused and voter.role == "leader" and voter.epoch == epoch:
                return voter.node_id
        return None

    async def watch(self) -> None:
        import trio

        last = time.monotonic()
        while True:
            await trio.sleep(0.1)
            self._scan_logs()
            now = time.monotonic()
            if self.serving_leader() is None:
                self.no_leader_s += now - last
            last = now

    async def follow(self) -> None:
        from kraft.node.node import CommittedBatch

        async for item in self.observer.committed_batches(start_offset=0):
            if isinstance(item, CommittedBatch) and not item.is_control:
                for i, value in enumerate(item.records):
                    self.committed[item.base_offset + i] = value

    async def progress(self, what: str, records: int = 5) -> None:
        """Wait until ``records`` more records commit (the quorum is live)."""
        import trio

        target = len(self.committed) + records
        with trio.move_on_after(self.options.patience_s):
            while len(self.committed) < target:
                await self._restart_exited()
                await trio.sleep(0.1)
            return
        raise ChaosError(f"no progress within {self.options.patience_s:g} s {what} (files in {self.root})")

    # --- faults ----------------------------------------------------------------------------

    def _note(self, kind: str, node_id: int, detail: str) -> None:
        at = time.monotonic() - self.started
        was_leader = self.serving_leader() == node_id
        self.faults.append({"t": round(at, 1), "fault": kind, "node": node_id, "leader": was_leader,
                            "detail": detail})
        self.say(f"  {at:6.1f} s  {kind:9} node {node_id}{' (leader)' if was_leader else ''}: {detail}")

    async def _wait_exit(self, voter: _Voter, timeout_s: float) -> int | None:
        import trio

        assert voter.proc is not None
        with trio.move_on_after(timeout_s):
            while voter.proc.poll() is None:
                await trio.sleep(0.05)
        return voter.proc.poll()

    async def _restart_exited(self) -> None:
        for voter in self.voters.values():
            if voter.proc is not None and voter.proc.poll() is not None and not voter.expected_down:
                code = voter.proc.returncode
                voter.own_exits.append(code)
                self._note("exited", voter.node_id, f"exit code {code}{_fatal_line(voter.out)}; restarted")
                voter.start()

    def _pick_victim(self) -> _Voter:
        leader = self.serving_leader()
        if leader is not None and self.rng.random() < 0.5:
            return self.voters[leader]
        return self.voters[self.rng.choice(sorted(self.voters))]

    async def inject(self, kind: str) -> None:
        import trio

        rng = self.rng
        if kind == "disk-full":
            assert self.disk_full_voter is not None and self.tmpfs is not None
            voter = self.voters[self.disk_full_voter]
            hold = rng.uniform(2.0, 5.0)
            filler = _fill(self.tmpfs)
            self._note(kind, voter.node_id, f"{self.tmpfs} full for {hold:.1f} s")
            await trio.sleep(hold)
            filler.unlink()
            return
        voter = self._pick_victim()
        assert voter.proc is not None
        if kind == "kill":
            down = rng.uniform(0.5, 4.0)
            self._note(kind, voter.node_id, f"kill -9, restarted after {down:.1f} s")
            voter.expected_down = True
            voter.proc.kill()
            await self._wait_exit(voter, 30)
            await trio.sleep(down)
            voter.start()
        elif kind == "pause":
            hold = FETCH_TIMEOUT_S + rng.uniform(0.5, 3.0)
            self._note(kind, voter.node_id, f"SIGSTOP for {hold:.1f} s, then SIGCONT")
            voter.paused = True
            voter.proc.send_signal(signal.SIGSTOP)
            await trio.sleep(hold)
            voter.proc.send_signal(signal.SIGCONT)
            voter.paused = False
        elif kind == "fsync":
            assert self.shim is not None
            voter.expected_down = True
            self.shim.arm(voter.log_dir.resolve())
            code = await self._wait_exit(voter, 30)
            self.shim.disarm()
            if code is None:
                voter.expected_down = False
                self._note(kind, voter.node_id, "fsync failing for 30 s, the node never synced: disarmed")
                return
            self._note(kind, voter.node_id, f"fsync -> EIO: exit code {code}{_fatal_line(voter.out)}; restarted")
            if code != 1:
                raise ChaosError(f"node {voter.node_id} did not fail-stop with status 1 on EIO (exit {code})")
            await trio.sleep(rng.uniform(0.5, 2.0))
            voter.start()

    async def schedule(self) -> None:
        import trio

        kinds = [k for k in FAULT_KINDS if k not in self.skipped]
        end = self.started + self.options.duration_s
        cycle: list[str] = []
        while time.monotonic() < end:
            await trio.sleep(self.rng.uniform(*self.options.gap_s))
            await self.progress("before the next fault")
            if time.monotonic() >= end:
                break
            if not cycle:
                # Every kind once per cycle, in a seeded order.
                cycle = self.rng.sample(kinds, len(kinds))
            await self.inject(cycle.pop())
            await self._restart_exited()

    async def stop_load(self) -> None:
        """SIGUSR1 to every voter once its demo writer listens (before that
        the signal's default action would kill the process)."""
        import trio

        for voter in self.voters.values():
            with trio.move_on_after(self.options.patience_s):
                while voter.alive and voter.out.read_text(errors="replace").count("demo writer started") < voter.starts:
                    await trio.sleep(0.1)
            if voter.alive and voter.proc is not None:
                voter.proc.send_signal(signal.SIGUSR1)

    async def quiet(self, for_s: float = 2.0) -> None:
        import trio

        seen = -1
        with trio.move_on_after(self.options.patience_s):
            while seen != self.observer.high_watermark:
                seen = self.observer.high_watermark
                await trio.sleep(for_s)

    def terminate(self) -> dict[int, int | None]:
        codes: dict[int, int | None] = {}
        for voter in self.voters.values():
            if voter.proc is not None and voter.proc.poll() is None:
                voter.proc.send_signal(signal.SIGTERM)
        for voter in self.voters.values():
            if voter.proc is None:
                continue
            try:
                voter.proc.wait(30)
            except subprocess.TimeoutExpired:
                voter.proc.kill()
                voter.proc.wait()
            codes[voter.node_id] = voter.proc.returncode
        return codes


def _fatal_line(out: Path) -> str:
    lines = [line for line in out.read_text(errors="replace").splitlines() if "Encountered fatal fault" in line]
    if not lines:
        return ""
    text = lines[-1]
    match = re.search(r"(fsync|write|truncate|rename|create) of \S+ failed: \w+", text)
    return f" ({match.group(0)})" if match else ""


def _fill(directory: Path) -> Path:
    """Fill the filesystem of ``directory`` to the last byte; the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 1 << 16, 4096, 1):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return filler


# --- checking the files ---------------------------------------------------------------------


@dataclass
class _Stored:
    records: dict[int, bytes]
    snapshot_offset: int
    snapshot_records: list[bytes]
    leaders: dict[int, int]
    end_offset: int


def _read_stored(metadata_log_dir: Path) -> _Stored:
    from kraft.records.control import ControlRecordType, decode_control_record
    from kraft.records.log import MetadataLog, metadata_partition_dir

    mlog = MetadataLog.open(metadata_partition_dir(metadata_log_dir))
    try:
        records: dict[int, bytes] = {}
        leaders: dict[int, int] = {}
        for batch in mlog.iter_batches():
            for rec in batch.records():
                if not batch.is_control:
                    records[rec.offset] = bytes(rec.value or b"")
                    continue
                control = decode_control_record(rec)
                if control.type is ControlRecordType.LEADER_CHANGE:
                    leaders.setdefault(batch.partition_leader_epoch, control.message.leader_id)
        sid = mlog.latest_snapshot_id()
        snapshot: list[bytes] = []
        if sid is not None:
            reader = mlog.open_snapshot(sid)
            if reader is not None:
                with reader:
                    snapshot = [bytes(r.value or b"") for r in reader.contents().data_records()]
        return _Stored(records, sid.offset if sid is not None else 0, snapshot, leaders, mlog.end_offset)
    finally:
        mlog.close()


def _acks(path: Path) -> list[tuple[int, bytes]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        offset, _, value = line.partition("\t")
        if value:  # a line cut by a kill was never acknowledged
            out.append((int(offset), value.encode()))
    return out


_DEMO_RECORD = re.compile(rb"node=(\d+) epoch=(\d+) seq=(\d+)")


def _check(chaos: _Chaos, committed: dict[int, bytes], hwm: int) -> dict[str, Any]:
    acks = sorted({ack for v in chaos.voters.values() for ack in _acks(v.acks)})
    stored = {v.node_id: _read_stored(v.log_dir) for v in chaos.voters.values()}
    stored[OBSERVER_ID] = _read_stored(chaos.root / f"metadata-{OBSERVER_ID}")
    history = [committed[o] for o in sorted(committed) if o < hwm]

    def on_node(s: _Stored, offset: int, value: bytes) -> bool:
        if offset in s.records:
            return s.records[offset] == value
        # Below the log start: in the record-history snapshot.
        return offset < s.snapshot_offset and value in s.snapshot_records

    lost = [(o, v) for o, v in acks if committed.get(o) != v or o >= hwm]
    missing = {n: [(o, v) for o, v in acks if not on_node(s, o, v)] for n, s in stored.items()}
    # Each leader's acknowledged records, in its append order, have growing offsets.
    order: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for offset, value in acks:
        m = _DEMO_RECORD.search(value)
        if m:
            order.setdefault((int(m.group(1)), int(m.group(2))), []).append((int(m.group(3)), offset))
    out_of_order = [k for k, seqs in order.items() if [o for _, o in sorted(seqs)] != sorted(o for _, o in seqs)]
    # Every node's records agree with the committed history up to the high watermark.
    disagree = {}
    for node_id, s in stored.items():
        bad = [o for o in range(min(hwm, s.end_offset)) if o in committed and o in s.records
               and s.records[o] != committed[o]]
        short = s.end_offset < hwm
        if bad or short:
            disagree[node_id] = f"{len(bad)} offsets differ" + (f", log ends at {s.end_offset} < {hwm}" if short else "")
    two_leaders = {}
    seen: dict[int, set[int]] = {}
    for s in stored.values():
        for epoch, leader in s.leaders.items():
            seen.setdefault(epoch, set()).add(leader)
    two_leaders = {e: sorted(ls) for e, ls in seen.items() if len(ls) > 1}
    present = sum(1 for o, v in acks if all(on_node(s, o, v) for s in stored.values()))
    return {
        "acknowledged": len(acks),
        "present": present,
        "lost": len(lost),
        "lost_examples": [(o, v.decode(errors="replace")) for o, v in lost[:5]],
        "missing_on": {n: len(m) for n, m in missing.items() if m},
        "out_of_order_leaders": out_of_order,
        "logs_disagree": disagree,
        "two_leaders_in_an_epoch": two_leaders,
        "committed_records": len(history),
        "high_watermark": hwm,
    }


# --- the run ---------------------------------------------------------------------------------


async def run_chaos(options: ChaosOptions, root: Path, say: Callable[[str], None]) -> dict[str, Any]:
    """Run the schedule in ``root``; the figures and checks as a JSON-able dict."""
    import trio

    from kraft.config import NodeConfig
    from kraft.node.fault import RaisingFaultHandler
    from kraft.node.node import KraftNode

    chaos = _Chaos(options, root, say)
    result: dict[str, Any] = {"seed": options.seed, "voters": options.voters, "duration_s": options.duration_s,
                              "append_rate": options.append_rate, "cpus": os.cpu_count(),
                              "load_average_before": os.getloadavg()[0]}
    try:
        chaos.prepare()
        for kind, reason in chaos.skipped.items():
            say(f"fault {kind} skipped: {reason}")
        result["skipped"] = dict(chaos.skipped)
        async with trio.open_nursery() as nursery:
            for voter in chaos.voters.values():
                voter.start()
            chaos.observer = KraftNode(NodeConfig.load(chaos.observer_config), fault_handler=RaisingFaultHandler())
            await nursery.start(chaos.observer.run)
            nursery.start_soon(chaos.follow)
            nursery.start_soon(chaos.watch)
            await chaos.progress("after start-up", 20)
            chaos.started = time.monotonic()
            chaos.no_leader_s = 0.0  # counted from the first commits on
            say(f"{options.voters} voters and an observer in {root}; faults for {options.duration_s:g} s "
                f"(seed {options.seed}):")
            await chaos.schedule()
            faults_end = time.monotonic()
            # Heal: everything runs again, the quorum commits, then the load stops.
            await chaos._restart_exited()
            await chaos.progress("after the last fault", 20)
            await chaos.stop_load()
            await chaos.quiet()
            committed, hwm = dict(chaos.committed), chaos.observer.high_watermark
            result["fault_phase_s"] = faults_end - chaos.started
            result["codes"] = chaos.terminate()
            await chaos.observer.shutdown()
            nursery.cancel_scope.cancel()
        result["faults"] = chaos.faults
        result["fault_counts"] = {k: sum(1 for f in chaos.faults if f["fault"] == k)
                                  for k in (*FAULT_KINDS, "exited")}
        result["leader_changes"] = max(0, chaos.leader_changes - 1)
        result["time_without_leader_s"] = chaos.no_leader_s
        result.update(_check(chaos, committed, hwm))
        result["load_average_after"] = os.getloadavg()[0]
    finally:
        chaos.cleanup()
    return result


def chaos_ok(result: dict[str, Any]) -> bool:
    return (result["lost"] == 0 and not result["missing_on"] and not result["out_of_order_leaders"]
            and not result["logs_disagree"] and not result["two_leaders_in_an_epoch"])


def format_chaos_report(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{k} {n}" for k, n in result["fault_counts"].items())
    lines = [
        f"kraft bench chaos: seed {result['seed']}, {result['voters']} voter processes + an observer on 127.0.0.1, "
        f"{result['fault_phase_s']:.0f} s of faults, each leader appending {result['append_rate']:g} records/s;",
        f"{result['cpus']} CPUs, load average {result['load_average_before']:.1f} before, "
        f"{result['load_average_after']:.1f} after",
        f"faults applied: {counts}",
    ]
    for kind, reason in result.get("skipped", {}).items():
        lines.append(f"fault {kind} skipped: {reason}")
    lines += [
        "",
        f"acknowledged as committed   {result['acknowledged']:>8}",
        f"present on every node       {result['present']:>8}",
        f"lost                        {result['lost']:>8}",
        f"leader changes              {result['leader_changes']:>8}",
        f"time without a leader       {result['time_without_leader_s']:>7.1f} s",
        f"committed records (HW {result['high_watermark']})  {result['committed_records']:>6}",
    ]
    problems = {k: result[k] for k in ("lost_examples", "missing_on", "out_of_order_leaders", "logs_disagree",
                                       "two_leaders_in_an_epoch") if result[k]}
    lines.append("")
    lines.append("OK: every acknowledged record is on every node, in order; logs agree up to the high watermark"
                 if chaos_ok(result) else f"FAILED: {problems}")
    return "\n".join(lines)


@click.command("chaos", short_help="Kill, pause, fill the disk and fail fsync of real voters; no acknowledged record lost.")
@click.option("--duration", type=click.FloatRange(min=1), default=ChaosOptions.duration_s, show_default=True,
              help="Seconds of faults.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fault schedule.")
@click.option("--voters", type=click.Choice(["3", "5"]), default="3", show_default=True, help="Voter processes.")
@click.option("--append-rate", type=click.FloatRange(min=1), default=ChaosOptions.append_rate, show_default=True,
              help="Records/s the leader's client appends (one at a time).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--keep", is_flag=True, help="Keep the temporary directory (configs, node logs, ack logs, data).")
def chaos_bench_command(duration: float, seed: int, voters: str, append_rate: float, as_json: bool,
                        keep: bool) -> None:
    """Kill -9, pause, fill the disk of and fail the fsync of real voter
    processes on a seeded schedule while a client appends; then check that
    no acknowledged record was lost."""
    import trio

    options = ChaosOptions(duration_s=duration, seed=seed, voters=int(voters), append_rate=append_rate)
    root = Path(tempfile.mkdtemp(prefix="kraft-bench-chaos-"))

    def say(message: str) -> None:
        click.echo(message, err=as_json)

    ok = False
    try:
        try:
            result = trio.run(run_chaos, options, root, say)
        except BaseExceptionGroup as group:
            errors = group.subgroup(ChaosError)
            if errors is not None:
                first: BaseException = errors
                while isinstance(first, BaseExceptionGroup):
                    first = first.exceptions[0]
                raise first from None
            raise
        ok = chaos_ok(result)
    finally:
        if keep or not ok:
            click.echo(f"files kept in {root} (node-N.log, acks-N.tsv, metadata-N/)", err=True)
        else:
            shutil.rmtree(root, ignore_errors=True)
    click.echo(json.dumps(result, indent=2) if as_json else "\n" + format_chaos_report(result))
    if not ok:
        raise SystemExit(1)
