"""Leader changes for embedders follow Kafka (kraft/node/leader_changes.py):
``KafkaRaftClient.ListenerContext.maybeFireLeaderChange(leaderAndEpoch,
epochStartOffset)`` tells a listener of this node's own leadership only once
*that listener* has read past the epoch's start offset, so a state machine
has replayed every earlier commit before it acts as leader -- however far
behind the node's other listeners, or the node itself, are."""

from __future__ import annotations

from pathlib import Path

import trio

from kraft.node.leader_changes import LeaderChanged
from kraft.node.node import KraftNode
from kraft.node.snapshots import CommittedBatch
from kraft.raft.roles import Leader
from tests.harness.configs import load, make_configs


async def test_a_slow_listener_learns_of_its_leadership_after_replaying_the_earlier_commits(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1])
    with trio.fail_after(20):
        # Epoch 1: commit records one batch at a time, then stop.
        async with trio.open_nursery() as nursery:
            node = KraftNode(load(paths[1]))
            await nursery.start(node.run)
            await node.wait_for_leader()
            last = 0
            for i in range(60):
                last = await node.append([f"r{i}".encode()])
            await node.shutdown()
        # Restarted, the only voter leads a new epoch at once; a slow listener
        # replays from the start and is told of that leadership only after it.
        async with trio.open_nursery() as nursery:
            node = KraftNode(load(paths[1]))
            await nursery.start(node.run)
            lae = await node.wait_for_leader()
            assert lae.leader_id == 1
            role = node.raft_driver.core.role if node.raft_driver is not None else None
            assert isinstance(role, Leader)
            epoch_start = role.epoch_start_offset
            assert epoch_start > last
            delivered = -1
            told: list[tuple[int, LeaderChanged]] = []
            async for item in node.committed_batches(start_offset=0, leader_changes=True):
                if isinstance(item, LeaderChanged):
                    told.append((delivered, item))
                    if item.leader.leader_id == 1:
                        break
                    continue
                assert isinstance(item, CommittedBatch)
                delivered = item.last_offset
                await trio.sleep(0.02)  # a slow state machine
                # The node knew it led long before this listener caught up.
                assert node.leader.leader_id == 1
            own = [(at, change) for at, change in told if change.leader.leader_id == 1]
            assert own, told
            at, change = own[0]
            assert change.leader.epoch == lae.epoch
            # Every record of epoch 1 and the new epoch's LeaderChange were read first.
            assert at >= epoch_start, (at, epoch_start)
            await node.shutdown()
