"""``kraft bench codec``: encode and decode speed of our generated codecs
against kio 0.6.5 (native decoder) and kafka-python 3.0.12, on the messages
a KRaft quorum sends most: DescribeQuorumResponse v2 (3 voters, 10
observers, 3 nodes), VoteRequest v2 and FetchResponse v17 carrying a 1 MiB
records blob.

Fairness: every implementation decodes the same bytes (ours, which the
oracle tests show are byte-identical to both peers'), and encodes an object
it decoded from them, to bytes. Each figure is the best of ``--repeat``
timeit runs after a warm-up, in µs per operation. Our decoders keep a
bounded cache of decoded uuids; "ours (cold)" clears it before every
decode, so it shows the cost without it (the clear itself is included).
"""

from __future__ import annotations

import io
import json
import platform
import random
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from kraft.messages import runtime
from kraft.messages.generated import describe_quorum_response as dq
from kraft.messages.generated import fetch_response as fr
from kraft.messages.generated import vote_request as vr

__all__ = ["codec_bench_command", "run_codec_bench"]

# The cluster metadata topic id Kafka uses (Uuid.METADATA_TOPIC_ID).
_METADATA_TOPIC_ID = uuid.UUID(int=1)
_ONE_MIB = 1 << 20


# --------------------------------------------------------------- messages


def _describe_quorum(rng: random.Random) -> Any:
    def replica(replica_id: int) -> Any:
        return dq.ReplicaState(replica_id=replica_id, replica_directory_id=uuid.UUID(int=rng.getrandbits(128)),
                               log_end_offset=rng.randrange(1 << 40), last_fetch_timestamp=1_700_000_000_000 + replica_id,
                               last_caught_up_timestamp=1_700_000_000_000 + replica_id)

    partition = dq.PartitionData(partition_index=0, error_code=0, error_message=None, leader_id=1, leader_epoch=7,
                                 high_watermark=123_456, current_voters=[replica(i) for i in (1, 2, 3)],
                                 observers=[replica(i) for i in range(100, 110)])
    nodes = [dq.Node(node_id=i, listeners=[dq.Listener(name="CONTROLLER", host=f"controller-{i}.example", port=9093)])
             for i in (1, 2, 3)]
    return dq.DescribeQuorumResponse(error_code=0, error_message=None, nodes=nodes,
                                     topics=[dq.TopicData(topic_name="__cluster_metadata", partitions=[partition])])


def _vote_request(rng: random.Random) -> Any:
    partition = vr.PartitionData(partition_index=0, replica_epoch=8, replica_id=2,
                                 replica_directory_id=uuid.UUID(int=rng.getrandbits(128)),
                                 voter_directory_id=uuid.UUID(int=rng.getrandbits(128)),
                                 last_offset_epoch=7, last_offset=123_456, pre_vote=False)
    return vr.VoteRequest(cluster_id="MkU3OEVBNTcwNTJENDM2Qk", voter_id=1,
                          topics=[vr.TopicData(topic_name="__cluster_metadata", partitions=[partition])])


def _fetch_response(rng: random.Random) -> Any:
    partition = fr.PartitionData(partition_index=0, error_code=0, high_watermark=123_456, last_stable_offset=123_456,
                                 log_start_offset=0, current_leader=fr.LeaderIdAndEpoch(leader_id=1, leader_epoch=7),
                                 aborted_transactions=None, preferred_read_replica=-1,
                                 records=rng.randbytes(_ONE_MIB))
    return fr.FetchResponse(throttle_time_ms=0, error_code=0, session_id=0, node_endpoints=[],
                            responses=[fr.FetchableTopicResponse(topic_id=_METADATA_TOPIC_ID, partitions=[partition])])


@dataclass
class Case:
    label: str
    cls: type
    version: int
    build: Callable[[random.Random], Any]
    kio_path: str  # module of kio's class
    kafka_python: tuple[str, str] | None  # (module, class) or None
    kafka_python_missing: str = ""


CASES = [
    Case("DescribeQuorumResponse v2 (3 voters, 10 observers, 3 nodes)", dq.DescribeQuorumResponse, 2,
         _describe_quorum, "kio.schema.describe_quorum.v2.response",
         ("kafka.protocol.admin.cluster", "DescribeQuorumResponse")),
    Case("VoteRequest v2", vr.VoteRequest, 2, _vote_request, "kio.schema.vote.v2.request", None,
         "kafka-python 3.0.12 has no Vote api"),
    Case("FetchResponse v17 (1 MiB records)", fr.FetchResponse, 17, _fetch_response,
         "kio.schema.fetch.v17.response", ("kafka.protocol.consumer.fetch", "FetchResponse")),
]


# ----------------------------------------------------------------- timing


@dataclass
class Measure:
    """µs per op, or None with the reason it could not be measured."""

    us: float | None
    reason: str = ""


@dataclass
class CaseResult:
    label: str
    size: int
    encode: dict[str, Measure] = field(default_factory=dict)
    decode: dict[str, Measure] = field(default_factory=dict)


def _best_us(stmt: Callable[[], Any], repeat: int, min_time: float) -> float:
    timer = timeit.Timer(stmt)
    for _ in range(3):  # warm-up
        stmt()
    number = 1
    while True:  # calibrate: one repeat takes at least min_time
        elapsed = timer.timeit(number)
        if elapsed >= min_time:
            break
        number = max(number * 2, int(number * min_time / max(elapsed, 1e-9) * 1.2))
    runs = timer.repeat(repeat=repeat, number=number)
    return min(runs) / number * 1e6


def _measure(stmt: Callable[[], Any], repeat: int, min_time: float) -> Measure:
    try:
        return Measure(_best_us(stmt, repeat, min_time))
    except Exception as e:  # a peer failing is a result, not a crash
        return Measure(None, f"{type(e).__name__}: {e}")


def _kio(case: Case, data: bytes) -> tuple[Callable[[], Any], Callable[[], Any]] | str:
    import importlib

    try:
        from kio.serial import entity_reader, entity_writer

        kio_cls = getattr(importlib.import_module(case.kio_path), case.cls.__name__)
    except (ImportError, AttributeError) as e:
        return f"kio unavailable: {e}"
    reader, writer = entity_reader(kio_cls), entity_writer(kio_cls)
    obj, size = reader(data, 0)
    if size != len(data):
        return f"kio read {size} of {len(data)} bytes"

    def encode() -> bytes:
        out = io.BytesIO()
        writer(out, obj)
        return out.getvalue()

    if encode() != data:
        return "kio's encoding differs from ours"
    return encode, lambda: reader(data, 0)


def _kafka_python(case: Case, data: bytes) -> tuple[Callable[[], Any], Callable[[], Any]] | str:
    import importlib

    if case.kafka_python is None:
        return case.kafka_python_missing
    module, name = case.kafka_python
    try:
        kp_cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        return f"kafka-python unavailable: {e}"
    if case.version > kp_cls.max_version:
        return f"kafka-python has {name} up to v{kp_cls.max_version}"
    version = case.version
    obj = kp_cls.decode(data, version=version)
    obj._header = None  # unset by kafka-python's decoder, read by its encode()
    if obj.encode(version=version) != data:
        return "kafka-python's encoding differs from ours"
    return (lambda: obj.encode(version=version)), (lambda: kp_cls.decode(data, version=version))


def run_codec_bench(repeat: int = 5, min_time: float = 0.1, seed: int = 0) -> list[CaseResult]:
    results = []
    for case in CASES:
        obj = case.build(random.Random(seed))
        version = case.version
        data = obj.encode(version)
        cls: Any = case.cls
        result = CaseResult(case.label, len(data))

        def cold_decode(cls: Any = cls, data: bytes = data) -> Any:
            runtime.UUID_CACHE.clear()
            return cls.decode(data, version)

        def ours_encode(o: Any = obj) -> Any:
            return o.encode(version)

        def ours_decode(c: Any = cls, d: bytes = data) -> Any:
            return c.decode(d, version)

        result.encode["ours"] = _measure(ours_encode, repeat, min_time)
        result.decode["ours"] = _measure(ours_decode, repeat, min_time)
        result.decode["ours (cold)"] = _measure(cold_decode, repeat, min_time)
        for peer, setup in (("kio", _kio), ("kafka-python", _kafka_python)):
            funcs = setup(case, data)
            if isinstance(funcs, str):
                result.encode[peer] = result.decode[peer] = Measure(None, funcs)
                continue
            encode, decode = funcs
            result.encode[peer] = _measure(encode, repeat, min_time)
            result.decode[peer] = _measure(decode, repeat, min_time)
        results.append(result)
    runtime.UUID_CACHE.clear()
    return results


# ----------------------------------------------------------------- output


def _fmt(m: Measure) -> str:
    return f"{m.us:,.2f}" if m.us is not None else "n/a"


def _ratio(peer: Measure, ours: Measure) -> str:
    if peer.us is None or ours.us is None:
        return "n/a"
    return f"{peer.us / ours.us:.2f}x"


def format_report(results: list[CaseResult], repeat: int) -> str:
    lines = [
        f"kraft bench codec: µs per op, best of {repeat} timeit repeats after warm-up "
        f"({platform.python_implementation()} {platform.python_version()})",
        "ratios are peer time / our time (above 1.00x: ours is faster); targets: decode no slower "
        "than kio, encode at most half of kafka-python's time",
        "",
    ]
    notes: list[str] = []
    header = f"{'':8}{'ours':>12}{'ours(cold)':>12}{'kio':>12}{'kafka-python':>14}{'kio/ours':>10}{'kp/ours':>10}"
    for r in results:
        lines.append(f"{r.label}  [{r.size:,} bytes]")
        lines.append(header)
        for op, row in (("encode", r.encode), ("decode", r.decode)):
            cold = _fmt(row["ours (cold)"]) if "ours (cold)" in row else "-"
            lines.append(f"  {op:6}{_fmt(row['ours']):>12}{cold:>12}{_fmt(row['kio']):>12}"
                         f"{_fmt(row['kafka-python']):>14}{_ratio(row['kio'], row['ours']):>10}"
                         f"{_ratio(row['kafka-python'], row['ours']):>10}")
            for peer in ("kio", "kafka-python"):
                if row[peer].us is None:
                    note = f"  {peer}, {r.label}: {row[peer].reason}"
                    if note not in notes:
                        notes.append(note)
        lines.append("  targets: " + _targets(r))
        lines.append("")
    if notes:
        lines.append("n/a:")
        lines.extend(notes)
    return "\n".join(lines).rstrip() + "\n"


def _targets(r: CaseResult) -> str:
    parts = []
    ours_d, kio_d = r.decode["ours"], r.decode["kio"]
    if ours_d.us is not None and kio_d.us is not None:
        parts.append(f"decode vs kio {'met' if ours_d.us <= kio_d.us else 'MISSED'}")
    else:
        parts.append("decode vs kio n/a")
    ours_e, kp_e = r.encode["ours"], r.encode["kafka-python"]
    if ours_e.us is not None and kp_e.us is not None:
        parts.append(f"encode vs kafka-python/2 {'met' if ours_e.us <= kp_e.us / 2 else 'MISSED'}")
    else:
        parts.append("encode vs kafka-python n/a")
    return ", ".join(parts)


def _as_json(results: list[CaseResult]) -> list[dict[str, Any]]:
    def table(row: dict[str, Measure]) -> dict[str, Any]:
        return {k: ({"us": m.us} if m.us is not None else {"us": None, "reason": m.reason}) for k, m in row.items()}

    return [{"case": r.label, "bytes": r.size, "encode": table(r.encode), "decode": table(r.decode)}
            for r in results]


@click.command("codec", short_help="Encode and decode speed of our codecs against kio and kafka-python.")
@click.option("--repeat", type=click.IntRange(1, 100), default=5, show_default=True,
              help="timeit repeats per figure; the best is reported.")
@click.option("--min-time", type=click.FloatRange(0.001, 10.0), default=0.1, show_default=True,
              help="Seconds each repeat runs at least.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random ids and records.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def codec_bench_command(repeat: int, min_time: float, seed: int, as_json: bool) -> None:
    """µs per encode/decode: ours vs kio vs kafka-python, with ratios."""
    results = run_codec_bench(repeat=repeat, min_time=min_time, seed=seed)
    if as_json:
        click.echo(json.dumps(_as_json(results), indent=2))
    else:
        click.echo(format_report(results, repeat), nl=False)
