"""A voter process that writes real metadata records while it leads (the
observer tests' cluster): ``python -m tests.node.metadata_writer --config F``.

It runs a :class:`~kraft.node.node.KraftNode` with record-history snapshots
(as ``kraft node start`` does), keeps the image of what is committed, and,
while leader, appends one operation at a time chosen from that image: create
a topic (in a metadata transaction), move a partition's leader or ISR, set or
delete a config, register/fence/unfence a broker, set a feature, a client
quota, add or remove an ACL, delete a topic, no-op. Each is valid against
the committed image, so replay never hits a missing partition. A new leader
that finds a transaction left open by its predecessor aborts it, as Kafka's
controller does. SIGUSR1 stops writing (the node keeps running); SIGTERM
stops the node.
"""

from __future__ import annotations

import logging
import random
import signal
import sys
import uuid
from pathlib import Path

import click
import trio

from kraft.config import NodeConfig
from kraft.raft.errors import LocalRaftError
from kraft.image.builder import ImageBuilder
from kraft.image.changes import apply_item
from kraft.image.model import MetadataImage
from kraft.node.node import KraftNode
from kraft.programs.observer import to_log_item
from kraft.node.snapshots import run_record_history_snapshots
from tests.harness.poll import until_async
from tests.image.records import partition, rec, sub, topic

log = logging.getLogger("kraft.writer")


def next_operation(image: MetadataImage, rng: random.Random, seq: int) -> list[list[bytes]]:
    """The appends of one operation (each inner list is one append = one batch)."""
    topics = sorted(image.topics.values(), key=lambda t: t.name)
    choice = rng.randrange(10) if topics else 0
    if choice == 0 or len(topics) < 3:
        topic_id = uuid.uuid4()
        parts = [partition(topic_id, p, [1, 2, 3][p % 3:] + [1, 2, 3][:p % 3]) for p in range(rng.randint(1, 4))]
        return [[rec("BeginTransactionRecord", name=f"create t{seq}")], [topic(f"t{seq}", topic_id)], parts,
                [rec("EndTransactionRecord")]]
    t = rng.choice(topics)
    if choice == 1 and t.partitions:
        pid = rng.choice(sorted(t.partitions))
        p = t.partitions[pid]
        leader = rng.choice(p.replicas)
        return [[rec("PartitionChangeRecord", partition_id=pid, topic_id=t.id, leader=leader,
                     isr=sorted(set(p.replicas[:2]) | {leader}))]]
    if choice == 2:
        value = None if rng.random() < 0.3 else str(rng.randint(1, 10**6))
        return [[rec("ConfigRecord", resource_type=2, resource_name=t.name, name="retention.ms", value=value)]]
    if choice == 3:
        broker = rng.randint(1, 3)
        if broker not in image.brokers or rng.random() < 0.2:
            return [[rec("RegisterBrokerRecord", broker_id=broker, broker_epoch=seq, incarnation_id=uuid.uuid4(),
                         end_points=[sub("RegisterBrokerRecord", "BrokerEndpoint", name="PLAINTEXT",
                                         host=f"b{broker}", port=9092, security_protocol=0)],
                         features=[], rack=None, fenced=True)]]
        name = "UnfenceBrokerRecord" if image.brokers[broker].fenced else "FenceBrokerRecord"
        return [[rec(name, id=broker, epoch=image.brokers[broker].epoch)]]
    if choice == 4:
        return [[rec("FeatureLevelRecord", name="metadata.version", feature_level=rng.randint(19, 27))]]
    if choice == 5:
        return [[rec("ClientQuotaRecord", entity=[sub("ClientQuotaRecord", "EntityData", entity_type="user",
                                                      entity_name=rng.choice(["alice", "bob", None]))],
                     key="producer_byte_rate", value=float(rng.randint(1, 100) * 1024), remove=rng.random() < 0.2)]]
    if choice == 6:
        if image.acls and rng.random() < 0.4:
            return [[rec("RemoveAccessControlEntryRecord", id=rng.choice(sorted(image.acls, key=str)))]]
        return [[rec("AccessControlEntryRecord", id=uuid.uuid4(), resource_type=2, resource_name=t.name,
                     pattern_type=3, principal="User:alice", host="*", operation=3, permission_type=3)]]
    if choice == 7 and len(topics) > 5:
        return [[rec("RemoveTopicRecord", topic_id=t.id)]]
    return [[rec("NoOpRecord")]]


async def write_while_leader(node: KraftNode, builder: ImageBuilder, rate: float) -> None:
    assert node.raft_driver is not None
    rng = random.Random(node.config.node_id)
    seq = node.config.node_id * 1_000_000
    while True:
        leader = await node.wait_for_leader()
        if leader.leader_id != node.config.node_id:
            async with node.raft_driver.leader_changed:
                await node.raft_driver.leader_changed.wait()
            continue
        try:
            # Everything of earlier epochs is committed once our LeaderChange is.
            with trio.fail_after(10):
                await until_async("the builder through the high watermark",
                                  lambda: builder.last_offset >= node.high_watermark - 1 and node.high_watermark >= 0,
                                  interval_s=0.01)
            if builder.in_transaction:
                await node.append([rec("AbortTransactionRecord", reason="the leader changed")])
            await until_async("not builder.in_transaction", lambda: not builder.in_transaction, interval_s=0.01)
            seq += 1
            # The appends of one operation are pipelined, then awaited together.
            positions = [node.append_nowait(records) for records in next_operation(builder.image, rng, seq)]
            with trio.fail_after(10):
                await node.wait_committed(positions[-1])
            offset = positions[-1].offset
            with trio.fail_after(10):
                await until_async("builder.last_offset >= offset",
                                  lambda: builder.last_offset >= offset, interval_s=0.005)
        except (LocalRaftError, trio.TooSlowError):
            await trio.sleep(0.05)
        await trio.sleep(1 / rate)


async def follow(node: KraftNode, builder: ImageBuilder) -> None:
    async for item in node.committed_batches():
        apply_item(builder, to_log_item(item))


async def main(config: NodeConfig, rate: float) -> None:
    node = KraftNode(config)
    builder = ImageBuilder()
    async with trio.open_nursery() as nursery:
        await nursery.start(node.run)
        nursery.start_soon(run_record_history_snapshots, node)
        nursery.start_soon(follow, node, builder)

        async def writer() -> None:
            with trio.open_signal_receiver(signal.SIGUSR1) as stop:
                async with trio.open_nursery() as inner:
                    inner.start_soon(write_while_leader, node, builder, rate)
                    async for _ in stop:
                        inner.cancel_scope.cancel()
                        break
                await trio.sleep_forever()

        async def stopper() -> None:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

        nursery.start_soon(writer)
        nursery.start_soon(stopper)
        await node.raft_driver.stopped.wait()  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


@click.command()
@click.option("--config", "config_path", required=True, type=click.Path(path_type=Path))
@click.option("--rate", type=float, default=50.0)
def cli(config_path: Path, rate: float) -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)")
    trio.run(main, NodeConfig.load(config_path), rate)


if __name__ == "__main__":
    cli()
