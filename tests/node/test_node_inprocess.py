"""Three real nodes in one trio process, talking over TCP on 127.0.0.1:
election, replication and commit through the real wire, log and shell."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from kraft.raft.errors import LocalRaftError, NotLeaderError
from kraft.node.node import KraftNode, NodeStartError
from tests.harness.configs import load, make_configs
from tests.harness.inprocess import leader_of, start_all
from tests.harness.poll import until_async


async def test_three_voters_elect_and_replicate(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1, 2, 3], observers=[9])
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nodes = await start_all(nursery, paths)
            leader = await leader_of(nodes.values())
            offsets = [await leader.append([f"r{i}".encode()]) for i in range(20)]
            assert offsets == sorted(offsets)
            follower = next(n for i, n in nodes.items() if n is not leader and i != 9)
            with pytest.raises(NotLeaderError):
                await follower.append([b"x"])
            # Every node, the observer included, sees the same committed records.
            for node in nodes.values():
                seen: list[bytes] = []
                async for batch in node.committed_batches():
                    if not batch.is_control:
                        seen.extend(batch.records)
                    if batch.last_offset >= offsets[-1]:
                        break
                assert seen == [f"r{i}".encode() for i in range(20)]
            assert nodes[9].role in ("follower", "unattached")
            for node in nodes.values():
                await node.shutdown()


async def test_unformatted_directory_is_refused(tmp_path: Path) -> None:
    paths = make_configs(tmp_path, [1])
    (tmp_path / "node-1" / "meta.properties").unlink()
    node = KraftNode(load(paths[1]))
    with pytest.raises(NodeStartError, match="kraft storage format"):
        await node.run()


async def _one_voter_with_records(nursery: trio.Nursery, tmp_path: Path) -> tuple[KraftNode, int]:
    node = KraftNode(load(make_configs(tmp_path, [1])[1]))
    await nursery.start(node.run)
    last = 0
    for i in range(3):
        last = await (await leader_of([node])).append([f"r{i}".encode()])
    return node, last


async def test_a_listener_that_outlives_its_node_ends_with_it(tmp_path: Path) -> None:
    """A listener in a task of its own (``kraft observe`` runs its image
    builder so) may be woken, or start reading, after the node closed its
    log. Its iteration ends, as Kafka's listeners get no callbacks after
    ``beginShutdown``: it does not read closed segments (an ``OSError``
    EBADF that stopped the observer) nor wait forever. One that asked for an
    offset that never came is told the node stopped."""
    with trio.fail_after(60):
        async with trio.open_nursery() as outer:
            async with trio.open_nursery() as node_nursery:
                node, last = await _one_voter_with_records(node_nursery, tmp_path)
                seen: list[int] = []
                ended = trio.Event()

                async def listen() -> None:
                    async for batch in node.committed_batches():
                        seen.append(batch.last_offset)
                    ended.set()

                outer.start_soon(listen)
                # Parked in the wait for the next commit.
                await until_async("seen and seen[-1] >= last", lambda: seen and seen[-1] >= last, interval_s=0.01)
                await node.shutdown()
            # A listener that was waiting for a commit ends.
            with trio.fail_after(10):
                await ended.wait()
            assert seen[-1] == last
            # One that starts reading after the log closed ends at once.
            assert [b async for b in node.committed_batches(0)] == []
            # One waiting for an offset that will not come is told why.
            with pytest.raises(LocalRaftError, match=f"the node stopped before offset {last + 1} was delivered"):
                async for _ in node.committed_batches(0, until=last + 1):
                    pass
