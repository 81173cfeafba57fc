"""``kraft bench records``: our record-batch reader against kafka-python's.

It synthesizes a large ``__cluster_metadata`` segment
(mixed record types in realistic batch shapes) and measures, on the same
bytes, how fast our reader and kafka-python's ``kafka.record`` reader decode
it: every batch CRC-checked, every record's offset, timestamp, key and value
produced. It prints MB/s and records/s of both and their ratio.
"""

from __future__ import annotations

import gc
import random
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

# The codecs are imported where they are used: ``--help`` answers at once.


# --- synthesizing a metadata log ---------------------------------------------------


class MetadataSynth:
    """Builds metadata record values the way a KRaft controller writes them."""

    def __init__(self, rng: random.Random) -> None:
        from kraft.messages import registry
        from kraft.messages.generated import register_broker_record as rb
        from kraft.records.metadata import encode_metadata_record

        self.encode = encode_metadata_record
        self.rng = rng
        self.cls = {name: registry.message_class(name) for name in (
            "NoOpRecord", "TopicRecord", "PartitionRecord", "PartitionChangeRecord", "ConfigRecord",
            "RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
            "UnfenceBrokerRecord", "ProducerIdsRecord", "FeatureLevelRecord", "AccessControlEntryRecord",
            "LeaderChangeMessage",
        )}
        self.rb = rb
        self.brokers = list(range(1, 10))
        self.topics: list[tuple[uuid.UUID, int]] = []
        self.next_producer_id = 0
        self.topic_counter = 0
        self.types: Counter[str] = Counter()

    def value(self, record_type: str, version: int, /, **fields: Any) -> bytes:
        self.types[record_type] += 1
        return self.encode(self.cls[record_type](**fields), version)

    def replicas(self, n: int = 3) -> list[int]:
        return self.rng.sample(self.brokers, n)

    def batch_values(self) -> list[bytes]:
        """One controller batch worth of records."""
        r = self.rng.random()
        if r < 0.45:
            return [self.value("NoOpRecord", 0)]
        if r < 0.62 and self.topics:
            out = []
            for _ in range(self.rng.randint(1, 4)):
                topic_id, partitions = self.rng.choice(self.topics)
                isr = self.replicas(self.rng.randint(1, 3))
                out.append(self.value("PartitionChangeRecord", 1, partition_id=self.rng.randrange(partitions),
                                      topic_id=topic_id, isr=isr, leader=isr[0]))
            return out
        if r < 0.72:
            self.topic_counter += 1
            topic_id = uuid.UUID(int=self.rng.getrandbits(128))
            partitions = self.rng.choice([1, 3, 6, 12, 24, 50])
            self.topics.append((topic_id, partitions))
            out = [self.value("TopicRecord", 0, name=f"orders.events-{self.topic_counter:06d}", topic_id=topic_id)]
            for p in range(partitions):
                replicas = self.replicas()
                out.append(self.value("PartitionRecord", 1, partition_id=p, topic_id=topic_id, replicas=replicas,
                                      isr=replicas, leader=replicas[0], leader_epoch=0, partition_epoch=0))
            for key, val in (("retention.ms", "604800000"), ("cleanup.policy", "delete"), ("min.insync.replicas", "2")):
                if self.rng.random() < 0.5:
                    out.append(self.value("ConfigRecord", 0, resource_type=2,
                                          resource_name=f"orders.events-{self.topic_counter:06d}", name=key, value=val))
            return out
        if r < 0.80:
            broker = self.rng.choice(self.brokers)
            choice = self.rng.random()
            epoch = self.rng.randrange(1 << 40)
            if choice < 0.3:
                return [self.value(
                    "RegisterBrokerRecord", 3, broker_id=broker, incarnation_id=uuid.UUID(int=self.rng.getrandbits(128)),
                    broker_epoch=epoch,
                    end_points=[self.rb.BrokerEndpoint(name="PLAINTEXT", host=f"broker-{broker}.kafka.svc", port=9092, security_protocol=0)],
                    features=[self.rb.BrokerFeature(name="metadata.version", min_supported_version=1, max_supported_version=25)],
                    rack=f"rack-{broker % 3}", fenced=True)]
            if choice < 0.55:
                return [self.value("BrokerRegistrationChangeRecord", 2, broker_id=broker, broker_epoch=epoch, fenced=0)]
            if choice < 0.8:
                return [self.value("UnfenceBrokerRecord", 0, id=broker, epoch=epoch)]
            return [self.value("FenceBrokerRecord", 0, id=broker, epoch=epoch)]
        if r < 0.87:
            return [self.value("ConfigRecord", 0, resource_type=4, resource_name=str(self.rng.choice(self.brokers)),
                               name="log.cleaner.threads", value=str(self.rng.randint(1, 8)))]
        if r < 0.93:
            self.next_producer_id += 1000
            return [self.value("ProducerIdsRecord", 0, broker_id=self.rng.choice(self.brokers),
                               broker_epoch=self.rng.randrange(1 << 40), next_producer_id=self.next_producer_id)]
        if r < 0.97:
            return [self.value("AccessControlEntryRecord", 0, id=uuid.UUID(int=self.rng.getrandbits(128)), resource_type=2,
                               resource_name="orders.", pattern_type=4, principal="User:svc-orders", host="*",
                               operation=3, permission_type=3)]
        return [self.value("FeatureLevelRecord", 0, name="metadata.version", feature_level=self.rng.choice([21, 22, 25]))]


@dataclass
class SynthLog:
    path: Path
    size: int
    batches: int
    records: int
    types: Counter[str]


def synthesize_metadata_log(path: Path, target_bytes: int, *, seed: int = 1) -> SynthLog:
    """Write a segment file of at least ``target_bytes``: controller batches of
    metadata records with a LeaderChange control batch at every new epoch."""
    from kraft.records.batch import Record, build_batch
    from kraft.records.control import build_control_batch

    rng = random.Random(seed)
    synth = MetadataSynth(rng)
    leader_change = synth.cls["LeaderChangeMessage"]
    from kraft.messages.generated import leader_change_message as lcm

    offset = 0
    epoch = 0
    timestamp = 1_700_000_000_000
    batches = 0
    size = 0
    with open(path, "wb") as f:
        while size < target_bytes:
            if epoch == 0 or rng.random() < 0.002:
                epoch += 1
                leader = rng.randint(1, 3)
                message = leader_change(version=0, leader_id=leader,
                                        voters=[lcm.Voter(voter_id=v) for v in (1, 2, 3)],
                                        granting_voters=[lcm.Voter(voter_id=v) for v in (1, 2, 3)])
                data = build_control_batch([message], base_offset=offset, partition_leader_epoch=epoch, timestamp=timestamp)
                synth.types["LeaderChangeMessage"] += 1
                offset += 1
            else:
                values = synth.batch_values()
                timestamp += rng.randint(1, 500)
                records = [Record(offset + i, timestamp, None, v) for i, v in enumerate(values)]
                data = build_batch(records, base_offset=offset, partition_leader_epoch=epoch)
                offset += len(values)
            f.write(data)
            size += len(data)
            batches += 1
    return SynthLog(path, size, batches, offset, synth.types)


# --- the readers under test -----------------------------------------------------------


def decode_with_kraft(data: bytes) -> int:
    """Our reader: every batch CRC-checked and every record decoded."""
    from kraft.records.batch import decode_batches

    count = 0
    for _batch, records in decode_batches(data):
        for record in records:
            record.offset, record.timestamp, record.key, record.value  # noqa: B018 - touch every field
        count += len(records)
    return count


def decode_with_kafka_python(data: bytes) -> int:
    """kafka-python 3.0's reader, driven the way its consumer drives it."""
    from kafka.errors import CorruptRecordError
    from kafka.record import MemoryRecords

    count = 0
    records = MemoryRecords(data)
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        if not batch.validate_crc():
            raise CorruptRecordError(f"CRC mismatch in batch at offset {batch.base_offset}")
        for record in batch:
            record.offset, record.timestamp, record.key, record.value  # noqa: B018
            count += 1
    return count


def _timed(fn: Callable[[bytes], int], data: bytes, repeat: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        count = fn(data)
        best = min(best, time.perf_counter() - start)
    return best, count


@click.command("records", short_help="Decode speed of our batch reader against kafka-python's.")
@click.option("--size-mb", type=float, default=100.0, show_default=True, help="Size of the synthesized log.")
@click.option("--repeat", type=int, default=1, show_default=True, help="Runs per reader (the best is reported).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the synthesized log (the same seed, the same log).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None, help="Where to write the log (default: a temp dir, removed after).")
def bench_records(size_mb: float, repeat: int, seed: int, directory: str | None) -> None:
    """Decode throughput of our record reader vs kafka-python's."""
    with tempfile.TemporaryDirectory(prefix="kraft-bench-") as tmp:
        base = Path(directory) if directory else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        path = base / "00000000000000000000.log"
        t0 = time.perf_counter()
        log = synthesize_metadata_log(path, int(size_mb * 1024 * 1024), seed=seed)
        click.echo(
            f"synthesized {path}: {log.size:,} bytes, {log.batches:,} batches, {log.records:,} records "
            f"({time.perf_counter() - t0:.1f} s)"
        )
        mix = ", ".join(f"{name} {n:,}" for name, n in log.types.most_common())
        click.echo(f"record mix: {mix}")
        data = path.read_bytes()
    ours_s, ours_n = _timed(decode_with_kraft, data, repeat)
    theirs_s, theirs_n = _timed(decode_with_kafka_python, data, repeat)
    if ours_n != theirs_n or ours_n != log.records:
        raise click.ClickException(f"record counts differ: kraft {ours_n}, kafka-python {theirs_n}, written {log.records}")
    mb = len(data) / 1e6
    click.echo(f"kraft        decode: {mb / ours_s:8.1f} MB/s {ours_n / ours_s:12,.0f} records/s ({ours_s:.2f} s)")
    click.echo(f"kafka-python decode: {mb / theirs_s:8.1f} MB/s {theirs_n / theirs_s:12,.0f} records/s ({theirs_s:.2f} s)")
    click.echo(f"ratio (kraft / kafka-python): {theirs_s / ours_s:.2f}x")
