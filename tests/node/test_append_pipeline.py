"""The pipelined append API: ``append_nowait`` queues records without waiting
(the core's accumulator batches them), ``wait_committed`` waits for one of
them; real nodes over TCP with real logs."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kraft.raft.errors import NotLeaderError
from kraft.records.view import OffsetAndEpoch
from tests.harness.configs import make_configs
from tests.harness.inprocess import leader_of, start_all


async def test_many_outstanding_appends_commit_in_order(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1, 2, 3])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await start_all(nursery, paths)
            leader = await leader_of(nodes.values())
            epoch = leader.leader.epoch
            values = [f"r{i}".encode() for i in range(2000)]
            positions = [leader.append_nowait([v]) for v in values]
            # Offsets are assigned at once, consecutively, in the leader's epoch.
            offsets = [p.offset for p in positions]
            assert offsets == list(range(offsets[0], offsets[0] + len(values)))
            assert {p.epoch for p in positions} == {epoch}
            await leader.wait_committed(positions[-1])
            assert leader.high_watermark > positions[-1].offset
            await leader.wait_committed(positions[0])  # already committed: returns at once
            # Every voter holds them, in append order, at those offsets.
            for node in nodes.values():
                seen: dict[int, bytes] = {}
                async for batch in node.committed_batches():
                    if not batch.is_control:
                        for i, value in enumerate(batch.records):
                            seen[batch.base_offset + i] = value
                    if batch.last_offset >= offsets[-1]:
                        break
                assert [seen[o] for o in offsets] == values
            follower = next(n for n in nodes.values() if n is not leader)
            with pytest.raises(NotLeaderError):
                follower.append_nowait([b"x"])
            with pytest.raises(NotLeaderError):
                await leader.wait_committed(OffsetAndEpoch(offsets[-1] + 100, epoch - 1))
            nursery.cancel_scope.cancel()


async def test_waiters_fail_when_the_leadership_ends_first(tmp_path: Path) -> None:
    """With its followers gone nothing can commit; when check-quorum makes the
    leader resign, the waiters learn that the outcome is unknown."""
    paths = make_configs(tmp_path, [1, 2, 3], extra={"controller.quorum.fetch.timeout.ms": "500"})
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await start_all(nursery, paths)
            leader = await leader_of(nodes.values())
            await leader.append([b"first"])
            for node in nodes.values():
                if node is not leader:
                    await node.shutdown()
            position = leader.append_nowait([b"never committed"])
            with pytest.raises(NotLeaderError, match="ended before"):
                await leader.wait_committed(position)
            assert leader.high_watermark <= position.offset
            nursery.cancel_scope.cancel()
