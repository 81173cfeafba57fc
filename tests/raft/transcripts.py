"""Scenario transcripts: one replica's protocol, written down and replayed.

A transcript (``tests/raft/testdata/*.txt``, etcd raft's ``testdata`` style)
is a list of commands, each followed by ``----`` and what the replica did in
answer: what it persisted, wrote to its log, sent, committed, and how its
role changed. The driver plays the shell and the other replicas through
:class:`~tests.harness.raft_context.RaftTestContext`, so the core is driven only
through its public contract (``initialize``/``step``/``poll`` and the
``Ready`` they return), and compares what it prints with the file.
``pytest tests/raft/test_transcripts.py --rewrite-transcripts`` writes the
observed output back, for a scenario whose expectation was changed on
purpose (review the diff).

Commands (``key=value`` arguments; lists are comma-separated; an
``OFFSET:EPOCH`` pair is a log position)::

    replica id=1 voters=1,2,3 [log=EPOCH:COUNT,...] [snapshot=OFFSET:EPOCH]
            [dynamic] [election-timeout-ms=N ...any QuorumConfig field]
    tick ms=N                       # virtual time passes; timers fire
    deliver from=N KIND [field=value ...]
        KIND: vote | pre-vote | begin-quorum-epoch | end-quorum-epoch
              | fetch | fetch-snapshot | add-voter | remove-voter
    respond to=N KIND [field=value ...]   # answers the oldest unanswered
        KIND: vote | begin-quorum-epoch | end-quorum-epoch | fetch
              | fetch-snapshot | api-versions
    fail to=N KIND                  # the request to N was lost (no answer)
    append [count=N]                # the embedding program appends N records
    leader-snapshot log=EPOCH:COUNT,... id=OFFSET:EPOCH
                                    # the snapshot a leader serves to
                                    # ``respond ... fetch-snapshot``
    state                           # role, epoch, log, high watermark

Output lines, in the order the shell executes a ``Ready``: ``persist``,
``log``, ``send``, ``commit``, then ``role`` (a transition and its reason)
and ``violation``. Values are Kafka's field names; defaults are left out.
"""

from __future__ import annotations

import dataclasses
import enum
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraft.raft.core import Ready
from kraft.raft.errors import Errors
from kraft.raft.events import Outbound, OutboundRequest, RaftRequest, RaftResponse
from kraft.raft.rpcs import FetchResponse, FetchSnapshotRequest
from kraft.raft.logops import AppendAsFollower, AppendAsLeader, Flush, InstallSnapshot, SnapshotChunk, TruncateTo
from kraft.raft.quorum_config import QuorumConfig
from kraft.raft.voters import Endpoint, ReplicaKey
from kraft.records.view import OffsetAndEpoch
from kraft.sim.memlog import MemBatch, MemLog, decode_batches, encode_batches
from tests.harness.raft_context import RaftTestContext

SEPARATOR = "----"


class TranscriptError(Exception):
    """A transcript that cannot be run as written (not a failed expectation)."""


# --- the file format -------------------------------------------------------------------------


@dataclass
class Step:
    """One command of a transcript and the output written under it."""

    line: int
    command: str
    expected: list[str]
    comments: list[str] = field(default_factory=list)


def parse(text: str) -> list[Step]:
    """The steps of a transcript (after its header, :func:`header_of`);
    ``#`` comments belong to the command that follows them."""
    steps: list[Step] = []
    comments: list[str] = []
    lines = text.splitlines()
    i = len(header_of(text))
    while i < len(lines):
        raw = lines[i]
        if not raw.strip() or raw.startswith("#"):
            if raw.startswith("#") or comments:
                comments.append(raw)
            i += 1
            continue
        if i + 1 >= len(lines) or lines[i + 1] != SEPARATOR:
            raise TranscriptError(f"line {i + 1}: a command must be followed by a '{SEPARATOR}' line: {raw!r}")
        start = i + 1
        i += 2
        expected: list[str] = []
        while i < len(lines) and lines[i].strip():
            expected.append(lines[i])
            i += 1
        while comments and not comments[-1].strip():
            comments.pop()
        steps.append(Step(start, raw, expected, comments))
        comments = []
    return steps


def render(steps: list[Step], header: list[str]) -> str:
    """The transcript text for ``steps`` (what ``--rewrite-transcripts`` writes)."""
    out = list(header)
    for step in steps:
        if out:
            out.append("")
        out.extend(step.comments)
        out.append(step.command)
        out.append(SEPARATOR)
        out.extend(step.expected or ["ok"])
    return "\n".join(out) + "\n"


def header_of(text: str) -> list[str]:
    """The comment block at the top of a file, up to its first blank line."""
    header: list[str] = []
    for raw in text.splitlines():
        if not raw.startswith("#"):
            break
        header.append(raw)
    return header


def check_or_rewrite(path: Path, steps: list[Step], observed: list[Step], rewrite: bool) -> None:
    """Compare each step's output with the transcript's expected block (the
    first difference fails, naming its line), or with ``rewrite`` write the
    observed output back, keeping the header comments. One place for both
    drivers: the single-replica transcripts and the multi-node interactions."""
    if rewrite:
        path.write_text(render(observed, header_of(path.read_text())))
        return
    for want, got in zip(steps, observed):
        assert got.expected == want.expected, (
            f"{path.name}:{want.line}: {want.command}\n"
            + "expected:\n  " + "\n  ".join(want.expected)
            + "\ngot:\n  " + "\n  ".join(got.expected)
        )


# --- formatting what the replica did ------------------------------------------------------------

_LEFT_OUT = {"cluster_id", "topic_partition"}


def _value(value: Any) -> str:
    match value:
        case bool():
            return "true" if value else "false"
        case enum.Enum():
            return value.name
        case Endpoint(listener=listener, host=host, port=port):
            return f"{listener}://{host}:{port}"
        case ReplicaKey(id=node_id, directory_id=None):
            return str(node_id)
        case ReplicaKey(id=node_id, directory_id=directory_id):
            return f"{node_id}/{str(directory_id)[-4:]}"
        case OffsetAndEpoch(offset=offset, epoch=epoch):
            return f"{offset}:{epoch}"
        case bytes():
            return f"<{len(value)} bytes>"
        case tuple() | list() | frozenset() | set():
            items = sorted(value) if isinstance(value, (set, frozenset)) else value
            return "[" + ",".join(_value(v) for v in items) + "]"
        case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return "{" + " ".join(f"{k}={v}" for k, v in _fields(value)) + "}"
        case _:
            return str(value)


def _fields(obj: Any) -> Iterator[tuple[str, str]]:
    """``obj``'s fields as text, those still at their default left out."""
    for f in dataclasses.fields(obj):
        if f.name in _LEFT_OUT:
            continue
        value = getattr(obj, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.default_factory is not dataclasses.MISSING and value == f.default_factory():
            continue
        if isinstance(obj, FetchResponse) and f.name == "records":
            yield "records", _batches(value)
        elif value is None:
            continue
        else:
            yield f.name, _value(value)


def _batches(data: bytes) -> str:
    """Record batches as ``[BASE-LAST@EPOCH,...]`` (control batches marked)."""
    parts = []
    for b in decode_batches(data):
        mark = "c" if b.control else ""
        parts.append(f"{b.base_offset}-{b.end_offset - 1}@{b.epoch}{mark}")
    return "[" + ",".join(parts) + "]"


def message_text(message: Any) -> str:
    body = " ".join(f"{k}={v}" for k, v in _fields(message))
    return f"{type(message).__name__} {body}".rstrip()


def outbound_text(envelope: Outbound) -> str:
    arrow = "request" if isinstance(envelope, OutboundRequest) else "answer"
    return f"send {arrow} to {envelope.destination}: {message_text(envelope.message)}"


def log_op_text(op: Any) -> str:
    match op:
        case AppendAsLeader(batch=batch):
            if batch.controls:
                kinds = ",".join(type(c).__name__ for c in batch.controls)
                return f"log: append {batch.base_offset}-{batch.last_offset}@{batch.epoch} control [{kinds}]"
            return f"log: append {batch.base_offset}-{batch.last_offset}@{batch.epoch}"
        case AppendAsFollower(records=data):
            return f"log: append as follower {_batches(data)}"
        case TruncateTo(offset=offset):
            return f"log: truncate to {offset}"
        case Flush():
            return "log: flush"
        case SnapshotChunk(snapshot_id=sid, position=position, data=data):
            return f"log: snapshot {_value(sid)} chunk at {position} ({len(data)} bytes)"
        case InstallSnapshot(snapshot_id=sid):
            return f"log: install snapshot {_value(sid)}"
        case _:
            return f"log: {op!r}"


def ready_text(ready: Ready, committed_before: int | None) -> list[str]:
    """What one ``Ready`` asks of the shell; ``commit`` only when it moved."""
    out: list[str] = []
    if ready.persist is not None:
        s = ready.persist
        voted = "" if s.voted_key is None else f" voted={_value(s.voted_key)}"
        leader = "" if s.leader_id is None else f" leader={s.leader_id}"
        out.append(f"persist: epoch={s.epoch}{leader}{voted}")
    out.extend(log_op_text(op) for op in ready.log)
    out.extend(outbound_text(m) for m in ready.send)
    if ready.committed is not None and ready.committed != committed_before:
        out.append(f"commit: {ready.committed}")
    for change in ready.role_changes:
        leader = "" if change.leader_id is None else f" leader={change.leader_id}"
        out.append(f"role: {change.previous} -> {change.role} epoch={change.epoch}{leader} ({change.reason})")
    out.extend(f"violation: {v.description}" for v in ready.violations)
    return out


# --- the driver ---------------------------------------------------------------------------------


def _pair(text: str) -> tuple[int, int]:
    a, _, b = text.partition(":")
    return int(a), int(b)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _bool(text: str) -> bool:
    if text not in ("true", "false"):
        raise TranscriptError(f"expected true or false, got {text!r}")
    return text == "true"


def _error(text: str) -> Errors:
    try:
        return Errors[text]
    except KeyError:
        raise TranscriptError(f"unknown error {text!r}") from None


@dataclass
class Args:
    """A command's ``key=value`` arguments and bare words, consumed as read."""

    words: list[str]
    values: dict[str, str]

    @classmethod
    def of(cls, tokens: list[str]) -> Args:
        words = [t for t in tokens if "=" not in t]
        values = dict(t.split("=", 1) for t in tokens if "=" in t)
        return cls(words, values)

    def take(self, key: str, convert: Callable[[str], Any] = int, default: Any = None) -> Any:
        raw = self.values.pop(key, None)
        return default if raw is None else convert(raw)

    def need(self, key: str, convert: Callable[[str], Any] = int) -> Any:
        if key not in self.values:
            raise TranscriptError(f"missing {key}=")
        return self.take(key, convert)

    def done(self) -> None:
        if self.values:
            raise TranscriptError(f"unknown arguments: {', '.join(sorted(self.values))}")


class Driver:
    """Runs one transcript's commands against one replica."""

    def __init__(self) -> None:
        self.ctx: RaftTestContext | None = None
        self.answered: set[tuple[int, int]] = set()
        self.leader_snapshot: bytes = b""
        self.leader_snapshot_id: OffsetAndEpoch | None = None
        self.committed: int | None = None

    @property
    def replica(self) -> RaftTestContext:
        if self.ctx is None:
            raise TranscriptError("no replica yet: start with 'replica id=... voters=...'")
        return self.ctx

    def run(self, command: str) -> list[str]:
        tokens = shlex.split(command)
        name, args = tokens[0], Args.of(tokens[1:])
        handler = getattr(self, "cmd_" + name.replace("-", "_"), None)
        if handler is None:
            raise TranscriptError(f"unknown command {name!r}")
        out: list[str] = handler(args)
        args.done()
        return out

    # Every command that drives the core reports the Readies it produced.
    def _since(self, mark: int) -> list[str]:
        out: list[str] = []
        for ready in self.replica.readies[mark:]:
            out.extend(ready_text(ready, self.committed))
            if ready.committed is not None:
                self.committed = ready.committed
        return out

    def _drive(self, action: Callable[[], Any]) -> list[str]:
        mark = len(self.replica.readies)
        action()
        return self._since(mark)

    def cmd_replica(self, args: Args) -> list[str]:
        overrides = {}
        for f in dataclasses.fields(QuorumConfig):
            raw = args.take(f.name.replace("_", "-"), str)
            if raw is not None:
                overrides[f.name] = int(raw)
        ctx = RaftTestContext(
            local_id=args.need("id"),
            voters=args.need("voters", _ints),
            config=QuorumConfig(**overrides),
            dynamic="dynamic" in args.words,
        )
        for epoch, count in (_pair(p) for p in args.take("log", lambda s: s.split(","), [])):
            ctx.with_log((epoch, count))
        snapshot = args.take("snapshot", _pair)
        if snapshot is not None:
            ctx.with_snapshot(OffsetAndEpoch(*snapshot))
        self.ctx = ctx
        self.committed = None
        ctx.start()
        return self._since(0)

    def cmd_tick(self, args: Args) -> list[str]:
        ms = args.need("ms")
        return self._drive(lambda: self.replica.advance(ms))

    def cmd_append(self, args: Args) -> list[str]:
        count = args.take("count", int, 1)
        ctx = self.replica
        records = [f"app-{ctx.log.end_offset + i}".encode() for i in range(count)]
        return self._drive(lambda: ctx.append(*records))

    def cmd_state(self, args: Args) -> list[str]:
        ctx = self.replica
        raft = ctx.raft
        log = ctx.log
        epochs = ",".join(
            f"{b.base_offset}-{b.end_offset - 1}@{b.epoch}{'c' if b.control else ''}" for b in log.batches
        )
        snapshot = log.latest_snapshot_id()
        lines = [
            f"role: {type(ctx.role).__name__} epoch={ctx.epoch} leader={_value(raft.leader_id)}",
            f"log: start={log.start_offset} end={log.end_offset} batches=[{epochs}]"
            + ("" if snapshot is None else f" snapshot={_value(snapshot)}"),
            f"high watermark: {_value(raft.high_watermark)}",
        ]
        return lines

    def cmd_leader_snapshot(self, args: Args) -> list[str]:
        leader_log = MemLog()
        base = 0
        batches = []
        for epoch, count in (_pair(p) for p in args.need("log", lambda s: s.split(","))):
            batches.append(MemBatch(base, epoch, tuple(f"e{epoch}-o{base + i}".encode() for i in range(count))))
            base += count
        leader_log.append_as_follower(encode_batches(batches))
        sid = OffsetAndEpoch(*args.need("id", _pair))
        leader_log.create_snapshot(sid)
        snapshot = leader_log.read_snapshot(sid, 0, 1 << 30)
        if snapshot is None:
            raise TranscriptError(f"the leader log has no snapshot {sid}")
        self.leader_snapshot, self.leader_snapshot_id = snapshot.data, sid
        return [f"leader snapshot {_value(sid)}: {len(snapshot.data)} bytes"]

    # --- requests from peers ------------------------------------------------------------------

    def cmd_deliver(self, args: Args) -> list[str]:
        ctx = self.replica
        source = args.need("from")
        [kind] = args.words or [""]
        message: RaftRequest
        epoch = args.take("epoch")
        match kind:
            case "vote" | "pre-vote":
                message = ctx.vote_request(
                    candidate=source,
                    epoch=ctx.epoch if epoch is None else epoch,
                    last_offset=args.take("last-offset"),
                    last_epoch=args.take("last-epoch"),
                    pre_vote=kind == "pre-vote",
                    voter=ctx.local_id,
                )
            case "begin-quorum-epoch":
                message = ctx.begin_quorum_epoch(leader=source, epoch=epoch)
            case "end-quorum-epoch":
                message = ctx.end_quorum_epoch(leader=source, epoch=epoch, preferred=args.take("preferred", _ints, []))
            case "fetch":
                offset, last_epoch = args.need("at", _pair)
                message = dataclasses.replace(
                    ctx.fetch_request(
                        replica=source,
                        fetch_offset=offset,
                        last_fetched_epoch=last_epoch,
                        epoch=epoch,
                        high_watermark=args.take("high-watermark", int, -1),
                    ),
                    replica_key=ctx.key(source),  # with its directory id in a dynamic quorum
                )
            case "fetch-snapshot":
                message = ctx.fetch_snapshot_request(
                    replica=source,
                    snapshot_id=OffsetAndEpoch(*args.need("id", _pair)),
                    position=args.take("position", int, 0),
                    epoch=epoch,
                )
            case "add-voter":
                message = ctx.add_voter_request(args.need("voter"))
            case "remove-voter":
                message = ctx.remove_voter_request(args.need("voter"))
            case _:
                raise TranscriptError(f"deliver: unknown request kind {kind!r}")
        return self._drive(lambda: ctx.deliver(message, source=source))

    # --- answers to what the replica sent ------------------------------------------------------

    _REQUESTS = {
        "vote": "VoteRequest",
        "begin-quorum-epoch": "BeginQuorumEpochRequest",
        "end-quorum-epoch": "EndQuorumEpochRequest",
        "fetch": "FetchRequest",
        "fetch-snapshot": "FetchSnapshotRequest",
        "api-versions": "ApiVersionsRequest",
    }

    def _pending(self, destination: int, kind: str) -> OutboundRequest:
        name = self._REQUESTS.get(kind)
        if name is None:
            raise TranscriptError(f"unknown request kind {kind!r}")
        for ready in self.replica.readies:
            for envelope in ready.send:
                key = (envelope.destination, envelope.correlation_id)
                if (
                    isinstance(envelope, OutboundRequest)
                    and envelope.destination == destination
                    and type(envelope.message).__name__ == name
                    and key not in self.answered
                ):
                    self.answered.add(key)
                    return envelope
        raise TranscriptError(f"no unanswered {name} to {destination}")

    def cmd_fail(self, args: Args) -> list[str]:
        destination = args.need("to")
        [kind] = args.words or [""]
        request = self._pending(destination, kind)
        return self._drive(lambda: self.replica.fail(request))

    def cmd_respond(self, args: Args) -> list[str]:
        ctx = self.replica
        destination = args.need("to")
        [kind] = args.words or [""]
        request = self._pending(destination, kind)
        error = args.take("error", _error, Errors.NONE)
        epoch = args.take("epoch")
        leader = args.take("leader", int, -1)
        response: RaftResponse
        match kind:
            case "vote":
                response = ctx.vote_response(
                    granted=args.need("granted", _bool), epoch=epoch, leader=leader, error=error
                )
            case "begin-quorum-epoch":
                response = ctx.begin_quorum_epoch_response(epoch=epoch, leader=leader, error=error)
            case "end-quorum-epoch":
                response = ctx.end_quorum_epoch_response(epoch=epoch, leader=leader, error=error)
            case "fetch":
                records = [
                    (base, e, count)
                    for base, e, count in (
                        tuple(int(x) for x in part.split(":")) for part in args.take("records", lambda s: s.split(","), [])
                    )
                ]
                diverging = args.take("diverging", _pair)
                snapshot = args.take("snapshot", _pair)
                response = ctx.fetch_response(
                    leader=leader,
                    epoch=epoch,
                    records=records,
                    high_watermark=args.take("high-watermark", int, -1),
                    diverging_epoch=None if diverging is None else OffsetAndEpoch(*diverging),
                    snapshot_id=None if snapshot is None else OffsetAndEpoch(*snapshot),
                    error=error,
                )
            case "fetch-snapshot":
                message = request.message
                assert isinstance(message, FetchSnapshotRequest)
                if self.leader_snapshot_id is None:
                    raise TranscriptError("respond fetch-snapshot needs a 'leader-snapshot' first")
                data = self.leader_snapshot
                chunk = data[message.position : message.position + message.max_bytes]
                response = ctx.fetch_snapshot_response(
                    epoch=epoch,
                    leader=leader,
                    snapshot_id=self.leader_snapshot_id,
                    size=len(data),
                    position=message.position,
                    data=chunk,
                    error=error,
                )
            case "api-versions":
                low, high = args.take("kraft-versions", _pair, (0, 1))
                response = ctx.api_versions_response((low, high), error=error)
            case _:
                raise TranscriptError(f"respond: unknown kind {kind!r}")
        return self._drive(lambda: ctx.respond(request, response))


def run_transcript(path: Path) -> tuple[list[Step], list[Step]]:
    """The file's steps and the same steps with what the replica really did."""
    text = path.read_text()
    steps = parse(text)
    driver = Driver()
    observed: list[Step] = []
    for step in steps:
        try:
            out = driver.run(step.command)
        except TranscriptError as e:
            raise TranscriptError(f"{path.name}:{step.line}: {step.command}: {e}") from None
        observed.append(Step(step.line, step.command, out or ["ok"], step.comments))
    return steps, observed
